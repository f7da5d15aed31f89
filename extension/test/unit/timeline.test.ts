import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { asDiagnosis, Diagnosis } from '../../src/report/diagnosis';
import { clustered, layoutTimeline, renderTimelineHtml, timelineEvents } from '../../src/report/timeline';

const FIXTURE = path.resolve(__dirname, '../../../../extension/test/fixtures/torchrun-8gpu-oom.diagnosis.json');
const sample = (): Diagnosis => asDiagnosis(JSON.parse(fs.readFileSync(FIXTURE, 'utf8')));

function timed(
  times: Array<[number | null, number | null, string, 'root' | 'collateral' | 'finding']>,
  initiating = 1,
): Diagnosis {
  const d = sample();
  d.ranks = { seen: [], hosts: {}, world_size: null };
  d.timeline = times.map(([rank, time, signature, kind], order) => ({
    rank,
    time,
    order,
    signature,
    title: signature,
    kind,
    path: 'x.log',
    line: order + 1,
  }));
  d.root_cause = { ...d.root_cause!, signature: 'cuda-oom', rank: initiating };
  d.initiating_rank = initiating;
  return d;
}

describe('layoutTimeline', () => {
  it('has one row per rank seen, in rank order, the initiating rank flagged', () => {
    const layout = layoutTimeline(sample());
    assert.deepEqual(
      layout.rows.map((r) => r.label),
      ['rank 0', 'rank 1', 'rank 2', 'rank 3', 'rank 4', 'rank 5', 'rank 6', 'rank 7'],
    );
    assert.equal(layout.rows[5].host, 'host-1');
    assert.deepEqual(
      layout.rows.filter((r) => r.initiating).map((r) => r.rank),
      [5],
    );
  });

  it('uses log order when some event has no timestamp, with one initiating mark on the named rank', () => {
    const layout = layoutTimeline(sample());
    assert.equal(layout.mode, 'order');
    const initiating = layout.marks.filter((m) => m.kind === 'initiating');
    assert.equal(initiating.length, 1);
    assert.equal(initiating[0].rank, 5);
    assert.equal(initiating[0].line, 18);
    assert.equal(layout.rows[initiating[0].row].rank, 5);
    // The OOM comes first in the log, so it is the leftmost mark, inset from the edge.
    assert.equal(Math.min(...layout.marks.map((m) => m.x)), initiating[0].x);
    assert.equal(initiating[0].x, 2);
    assert.ok(
      layout.marks.every((m) => m.x >= 2 && m.x <= 98),
      'every mark within the lane',
    );
    assert.ok(layout.marks.filter((m) => m.kind === 'collateral').length >= 7);
  });

  it('puts a root-cause line that names no rank on the row of the rank the headline names', () => {
    // The issue's case: the root event has no rank, the headline names rank 1.
    const d = timed([
      [null, null, 'cuda-oom', 'root'],
      [0, null, 'nccl-watchdog-timeout', 'collateral'],
      [null, null, 'elastic-child-failed', 'collateral'],
    ]);
    const layout = layoutTimeline(d);
    const initiating = layout.marks.find((m) => m.kind === 'initiating')!;
    assert.equal(layout.rows[initiating.row].label, 'rank 1');
    assert.ok(layout.rows[initiating.row].initiating);
    assert.deepEqual(
      layout.rows.map((r) => r.label),
      ['rank 0', 'rank 1', 'no rank'],
    );
    // The rankless collateral stays on "no rank".
    assert.equal(layout.rows[layout.marks[2].row].label, 'no rank');
  });

  it('flags no rank and no mark as initiating when the engine names no initiating rank', () => {
    // Victims only (trial r15, finding 2): rank 0's watchdog line is the root cause's
    // evidence, but the engine says no rank started it; the row of rank 0 is not "initiating".
    const d = timed([
      [0, 10, 'cuda-oom', 'root'],
      [1, 11, 'cuda-oom', 'finding'],
    ]);
    d.initiating_rank = null;
    const layout = layoutTimeline(d);
    assert.deepEqual(
      layout.marks.map((m) => m.kind),
      ['cause', 'cause'],
    );
    assert.deepEqual(
      layout.rows.filter((r) => r.initiating),
      [],
    );
  });

  it('marks the same error on another rank as "cause", not initiating', () => {
    const d = timed([
      [1, null, 'cuda-oom', 'root'],
      [3, null, 'cuda-oom', 'finding'],
    ]);
    assert.deepEqual(
      layoutTimeline(d).marks.map((m) => m.kind),
      ['initiating', 'cause'],
    );
  });

  it('places marks proportionally to time when every event has one and they spread', () => {
    const d = timed([
      [1, 100, 'cuda-oom', 'root'],
      [0, 140, 'nccl-watchdog-timeout', 'collateral'],
      [2, 200, 'nccl-watchdog-timeout', 'collateral'],
    ]);
    const layout = layoutTimeline(d);
    assert.equal(layout.mode, 'time');
    const [first, second, third] = layout.marks;
    assert.equal(first.x, 2);
    assert.equal(third.x, 98);
    assert.ok(Math.abs(second.x - (2 + 0.4 * 96)) < 0.01, String(second.x));
    assert.deepEqual(
      layout.marks.map((m) => m.kind),
      ['initiating', 'collateral', 'collateral'],
    );
    assert.equal(layout.ticks[0].label, '00:01:40');
    assert.equal(layout.ticks[4].label, '+100 s');
  });

  it('spreads clustered events evenly in time order and keeps real times on the axis', () => {
    // Four events within 0.3 s, then one 10 minutes later: by time they would all overlap.
    const d = timed([
      [1, 1000, 'cuda-oom', 'root'],
      [0, 1000.1, 'nccl-watchdog-timeout', 'collateral'],
      [2, 1000.2, 'nccl-watchdog-timeout', 'collateral'],
      [3, 1000.3, 'nccl-watchdog-timeout', 'collateral'],
      [null, 1600, 'elastic-child-failed', 'collateral'],
    ]);
    const layout = layoutTimeline(d);
    assert.equal(layout.mode, 'spread');
    assert.deepEqual(
      layout.marks.map((m) => m.x),
      [2, 26, 50, 74, 98],
    );
    assert.deepEqual(
      layout.ticks.map((t) => t.label),
      ['00:16:40', '+100 ms', '+200 ms', '+300 ms', '+10 min'],
    );
    assert.ok(clustered([1000, 1000.1, 1000.2, 1000.3, 1600]));
    assert.ok(!clustered([100, 140, 200]));
  });

  it('falls back to findings when the timeline is empty', () => {
    const d = sample();
    d.timeline = [];
    const events = timelineEvents(d);
    assert.equal(events.length, d.findings.length);
    assert.ok(events.some((e) => e.signature === 'cuda-oom' && e.rank === 5));
  });
});

describe('renderTimelineHtml', () => {
  const html = renderTimelineHtml(layoutTimeline(sample()));

  it('is a responsive grid of rows (no fixed width), the initiating row emphasised', () => {
    assert.match(
      html,
      /^<div class="tl tl-order" role="group" aria-label="Rank timeline, 8 rows, \d+ events, in log order; initiating event: rank 5: CUDA out of memory/,
    );
    assert.doesNotMatch(html, /width="\d+"|<svg/);
    assert.match(
      html,
      /<div class="tl-row tl-row-initiating" data-rank="5"><div class="tl-label"><span class="tl-rank">rank 5<\/span><span class="tl-host">host-1<\/span><span class="tl-flag">initiating<\/span>/,
    );
  });

  it("draws the initiating mark as a focusable button on rank 5's row with an HTML tooltip", () => {
    const row5 = html.slice(html.indexOf('data-rank="5"'), html.indexOf('data-rank="6"'));
    assert.match(
      row5,
      /<button type="button" class="tl-mark tl-initiating" data-x="2" data-path="sample.log" data-line="18" aria-label="rank 5: CUDA out of memory in the caching allocator \[initiating\] — sample.log:18" aria-describedby="(tltip\d+)">/,
    );
    const id = row5.match(/tl-initiating[^>]*aria-describedby="(tltip\d+)"/)![1];
    assert.match(
      row5,
      new RegExp(
        `<div class="tl-tip tl-tip-start" role="tooltip" id="${id}" data-x="2"><div class="tl-tip-title">CUDA out of memory in the caching allocator</div><div>Initiating event · rank 5</div><div class="muted">sample.log:18</div>`,
      ),
    );
    assert.doesNotMatch(html, /<title>/, 'details are HTML, not SVG titles');
    const noRank = html.slice(html.indexOf('data-rank=""'));
    assert.doesNotMatch(noRank.split('tl-axis-row')[0], /tl-initiating/, 'no initiating mark on "no rank"');
  });

  it('reads locations through the given label function', () => {
    const mapped = renderTimelineHtml(layoutTimeline(sample()), (p, line) => `notes.md:${line + 6}`);
    assert.match(mapped, /<div class="muted">notes.md:24<\/div>/);
  });
});
