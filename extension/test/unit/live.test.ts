import * as assert from 'node:assert/strict';
import {
  EventLineParser,
  initialState,
  LiveEvent,
  rankList,
  reduce,
  shouldWatch,
  statusText,
  statusTooltip,
} from '../../src/liveEvents';

const ranks = [
  { rank: 0, step: 5, time: 100 },
  { rank: 1, step: 4, time: 99 },
  { rank: 2, step: 5, time: 100 },
];

describe('live event lines', () => {
  it('parses whole JSON lines across chunks and skips the rest', () => {
    const p = new EventLineParser();
    assert.deepEqual(p.push('{"event": "stall", "time": 1, "suspect'), []);
    const got = p.push('_rank": 1}\nnoise\n{"event": "exit", "time": 2, "code": 3}\n{"event": "prog');
    assert.deepEqual(
      got.map((e) => [e.event, e.suspect_rank ?? e.code]),
      [
        ['stall', 1],
        ['exit', 3],
      ],
    );
    assert.deepEqual(
      p.push('ress", "time": 3, "ranks": []}\n').map((e) => e.event),
      ['progress'],
    );
    assert.deepEqual(p.push('{not json}\n'), []);
  });
});

describe('withdrawn alarms (new-user trial r17c)', () => {
  it('a stall, then its withdrawal, then a healthy end clear the alarm', () => {
    let s = initialState();
    s = reduce(s, { event: 'stall', time: 110, suspect_rank: 1, why: 'rank 1 is behind', ranks });
    assert.equal(s.phase, 'stalled');
    s = reduce(s, { event: 'withdrawn', time: 120, alarm: 'stall', why: 'every stalled rank moved again' });
    assert.equal(s.phase, 'watching');
    assert.equal(s.suspectRank, null);
    const failure: LiveEvent = {
      event: 'failure',
      time: 121,
      final: false,
      diagnosis: { initiating_rank: 1, root_cause: { title: 'The disk filled up' } } as never,
    };
    s = reduce(s, failure);
    assert.equal(s.phase, 'failed');
    s = reduce(s, {
      event: 'healthy',
      time: 130,
      final: true,
      exit_code: 0,
      withdrawn: [
        { alarm: 'stall', alarm_time: 110, what: 'no progress', why: 'every stalled rank moved again' },
        { alarm: 'failure', alarm_time: 121, what: 'The disk filled up', why: 'was survived' },
      ],
    });
    assert.equal(s.phase, 'ended');
    assert.equal(s.diagnosis, undefined);
    assert.equal(statusText(s), '$(check) rootrank: ended (exit 0) · healthy, 2 alarms withdrawn · step 5 · 3 ranks');
  });
});

describe('live job state and status bar', () => {
  it('shows the step and ranks, then the stall with its suspect, then the failure', () => {
    let s = initialState();
    assert.equal(statusText(s), '$(pulse) rootrank: no step yet');
    s = reduce(s, { event: 'progress', time: 100, ranks });
    assert.equal(statusText(s), '$(pulse) rootrank: step 5 · 3 ranks');
    s = reduce(s, { event: 'stall', time: 110, suspect_rank: 1, why: 'rank 1 is behind at step 4', ranks });
    assert.equal(s.phase, 'stalled');
    assert.equal(statusText(s), '$(warning) rootrank: stalled (rank 1) · step 5 · 3 ranks');
    assert.match(statusTooltip('job', s, 120), /rank 1: step 4, 21 s ago/);
    const failure: LiveEvent = {
      event: 'failure',
      time: 120,
      final: false,
      diagnosis: { initiating_rank: 2, root_cause: { title: 'CUDA out of memory' } } as never,
    };
    s = reduce(s, failure);
    assert.equal(statusText(s), '$(error) rootrank: failed (rank 2)');
    s = reduce(s, { event: 'stall', time: 130, suspect_rank: 0, ranks });
    assert.equal(s.phase, 'failed'); // a failure outranks a later stall
    s = reduce(s, { event: 'exit', time: 131, code: 1 });
    assert.equal(s.exitCode, 1);
    assert.equal(s.phase, 'failed');
  });

  it('progress after a stall ends it; a healthy end shows the exit code', () => {
    let s = reduce(initialState(), { event: 'stall', time: 1, suspect_rank: null, ranks });
    s = reduce(s, { event: 'progress', time: 2, ranks: [{ rank: 0, step: 6, time: 2 }] });
    assert.equal(s.phase, 'watching');
    s = reduce(s, { event: 'exit', time: 3, code: 0 });
    assert.equal(statusText(s), '$(check) rootrank: ended (exit 0) · step 6 · 1 rank');
  });

  it('a failure event without a root cause changes nothing', () => {
    const s = reduce(initialState(), { event: 'failure', time: 1, diagnosis: { root_cause: null } as never });
    assert.equal(s.phase, 'watching');
  });
});

describe('live helpers', () => {
  it('writes rank lists as ranges', () => {
    assert.equal(rankList([3, 0, 1, 2, 5, null, 7, 6]), '0-3,5-7');
    assert.equal(rankList([null]), '');
  });
  it('watches launch commands only', () => {
    assert.equal(shouldWatch('torchrun --nproc-per-node=8 train.py'), true);
    assert.equal(shouldWatch('./failing-job.sh'), true);
    assert.equal(shouldWatch('deepspeed --num_gpus 8 train.py'), true);
    assert.equal(shouldWatch('ls -la'), false);
    assert.equal(shouldWatch('git status'), false);
    assert.equal(shouldWatch('make train', 'make'), true);
    assert.equal(shouldWatch('ls', '('), false); // a broken pattern falls back to the default
  });
});
