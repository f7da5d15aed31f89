import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { asDiagnosis, Diagnosis } from '../../src/report/diagnosis';
import { layoutTimeline, renderTimelineSvg, timelineEvents } from '../../src/report/timeline';

const FIXTURE = path.resolve(__dirname, '../../../../extension/test/fixtures/torchrun-8gpu-oom.diagnosis.json');
const sample = (): Diagnosis => asDiagnosis(JSON.parse(fs.readFileSync(FIXTURE, 'utf8')));

function timed(times: Array<[number | null, number | null, string, string]>): Diagnosis {
  const d = sample();
  d.ranks = { seen: [], hosts: {} };
  d.timeline = times.map(([rank, time, signature, kind], order) => ({ rank, time, order, signature, title: signature, kind, path: 'x.log', line: order + 1 }));
  d.root_cause = { ...d.root_cause!, signature: 'cuda-oom', rank: 1 };
  d.initiating_rank = 1;
  return d;
}

describe('layoutTimeline', () => {
  it('has one row per rank seen, in rank order', () => {
    const layout = layoutTimeline(sample());
    assert.deepEqual(layout.rows.map((r) => r.label), ['rank 0', 'rank 1', 'rank 2', 'rank 3', 'rank 4', 'rank 5', 'rank 6', 'rank 7']);
    assert.equal(layout.rows[5].host, 'host-1');
    assert.equal(layout.rows[1].y - layout.rows[0].y, 24);
  });

  it('uses log order when some event has no timestamp, and highlights the initiating event', () => {
    const layout = layoutTimeline(sample());
    assert.equal(layout.mode, 'order');
    const initiating = layout.marks.filter((m) => m.kind === 'initiating');
    assert.equal(initiating.length, 1);
    assert.equal(initiating[0].rank, 5);
    assert.equal(initiating[0].line, 18);
    assert.equal(initiating[0].y, layout.rows[5].y);
    // The OOM comes first in the log, so it is the leftmost mark.
    assert.equal(Math.min(...layout.marks.map((m) => m.x)), initiating[0].x);
    assert.equal(initiating[0].x, layout.plotLeft);
    assert.ok(layout.marks.filter((m) => m.kind === 'collateral').length >= 7);
  });

  it('places marks proportionally to time when every event has one', () => {
    const d = timed([
      [1, 100, 'cuda-oom', 'root'],
      [0, 110, 'nccl-watchdog-timeout', 'collateral'],
      [2, 200, 'nccl-watchdog-timeout', 'collateral'],
    ]);
    const layout = layoutTimeline(d, { width: 500, labelWidth: 90 });
    assert.equal(layout.mode, 'time');
    const [first, second, third] = layout.marks;
    assert.equal(first.x, layout.plotLeft);
    assert.equal(third.x, layout.plotRight);
    const expected = layout.plotLeft + 0.1 * (layout.plotRight - layout.plotLeft);
    assert.ok(Math.abs(second.x - expected) < 0.1, `${second.x} vs ${expected}`);
    assert.deepEqual(layout.marks.map((m) => m.kind), ['initiating', 'collateral', 'collateral']);
    assert.equal(layout.ticks[0].label, '00:01:40');
    assert.equal(layout.ticks[4].label, '+100 s');
  });

  it('adds a "no rank" row for events without a rank', () => {
    const d = timed([
      [1, null, 'cuda-oom', 'root'],
      [null, null, 'elastic-child-failed', 'collateral'],
    ]);
    const layout = layoutTimeline(d);
    assert.deepEqual(layout.rows.map((r) => r.label), ['rank 1', 'no rank']);
    assert.equal(layout.marks[1].y, layout.rows[1].y);
  });

  it('falls back to findings when the timeline is empty', () => {
    const d = sample();
    d.timeline = [];
    const events = timelineEvents(d);
    assert.equal(events.length, d.findings.length);
    assert.ok(events.some((e) => e.signature === 'cuda-oom' && e.rank === 5));
  });
});

describe('renderTimelineSvg', () => {
  it('draws focusable marks with a title and their log line', () => {
    const svg = renderTimelineSvg(layoutTimeline(sample()));
    assert.match(svg, /^<svg class="timeline"[^>]* role="img" aria-label="Rank timeline, 8 rows, \d+ events, positioned by order in the log; initiating event: rank 5: CUDA out of memory/);
    assert.match(svg, /<g class="tl-mark tl-initiating" tabindex="0" role="button" aria-label="rank 5: CUDA out of memory in the caching allocator \[initiating\] — sample.log:18" data-path="sample.log" data-line="18"><title>/);
    assert.ok(svg.lastIndexOf('tl-initiating') > svg.lastIndexOf('tl-collateral'), 'initiating mark drawn last, on top');
    assert.ok(svg.endsWith('</svg>'));
  });
});
