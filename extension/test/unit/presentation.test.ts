import * as assert from 'node:assert/strict';
import { chartData } from '../../src/report/curves';
import { linkSpan, wordStart } from '../../src/terminal/matchers';

describe('terminal link span', () => {
  const line = '[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.';

  it('starts at the word boundary, not inside torch.OutOfMemoryError', () => {
    assert.equal(wordStart(line, line.indexOf('OutOfMemoryError')), line.indexOf('torch.'));
    assert.equal(wordStart(line, line.indexOf('CUDA')), line.indexOf('CUDA'));
    assert.equal(wordStart('abc', 0), 0);
  });

  it('uses the diagnosis evidence columns on that line, snapped to the word, to the end of the text', () => {
    const text = line.slice(line.indexOf('[rank5]'));
    const span = linkSpan(line + '   ', [{ text, column_start: text.indexOf('OutOfMemoryError') }], undefined)!;
    assert.equal(span.start, line.indexOf('torch.OutOfMemoryError'));
    assert.equal(span.start + span.length, line.length);
  });

  it('falls back to the literal match when no evidence is on the line', () => {
    const span = linkSpan(line, [{ text: 'another line', column_start: 0 }], {
      start: line.indexOf('utOfMemory'),
      length: 10,
      signature: 's',
      title: 't',
    })!;
    assert.equal(line.slice(span.start, span.start + 22), 'torch.OutOfMemoryError');
    assert.equal(linkSpan(line, [], undefined), undefined);
  });
});

describe('chartData (training curves from metrics)', () => {
  it('one chart per metric, loss first, one line per rank where ranks differ, NaN as a gap', () => {
    const charts = chartData([
      {
        name: 'lr',
        rank: 0,
        points: [
          [10, 3e-4],
          [20, 3e-4],
        ],
        onsets: [],
      },
      {
        name: 'loss',
        rank: 0,
        points: [
          [10, 2.5],
          [20, 2.4],
          [30, 'nan'],
        ],
        onsets: [{ kind: 'nan', step: 30, rank: 0, line: 41, path: 'train.log', why: 'loss is NaN' }],
      },
      {
        name: 'loss',
        rank: 1,
        points: [
          [10, 2.6],
          [20, 2.5],
          [30, 2.3],
        ],
        onsets: [],
      },
      {
        name: 'loss',
        rank: 2,
        points: [
          [10, 2.6],
          [20, 2.5],
          [30, 2.3],
        ],
        onsets: [],
      },
    ]);
    assert.deepEqual(
      charts.map((c) => c.name),
      ['loss', 'lr'],
    );
    const loss = charts[0];
    assert.deepEqual(loss.steps, [10, 20, 30]);
    assert.deepEqual(
      loss.lines.map((l) => l.label),
      ['rank 0', 'ranks 1, 2'],
    );
    assert.deepEqual(loss.lines[0].values, [2.5, 2.4, null]);
    assert.deepEqual(loss.nonFinite, [{ step: 30, rank: 0, value: 'nan' }]);
    assert.equal(loss.onsets[0].line, 41);
    assert.deepEqual(
      charts[1].lines.map((l) => l.label),
      ['rank 0'],
    );
  });

  it('ranks with identical curves share one line; empty or absent metrics give no chart', () => {
    const same = chartData([
      { name: 'lr', rank: 0, points: [[1, 1e-4]], onsets: [] },
      { name: 'lr', rank: 1, points: [[1, 1e-4]], onsets: [] },
    ]);
    assert.deepEqual(
      same[0].lines.map((l) => [l.label, l.ranks]),
      [['all ranks', [0, 1]]],
    );
    assert.deepEqual(chartData(undefined), []);
    assert.deepEqual(chartData([{ name: 'loss', rank: null, points: [], onsets: [] }]), []);
  });
});

describe('relabelLocations', () => {
  it("reads a selection's engine locations as file:line", async () => {
    const { relabelLocations } = await import('../../src/report/html');
    const label = (p: string, line: number) => (p === 'notes.md:7-12' ? `notes.md:${line + 6}` : `${p}:${line}`);
    assert.equal(
      relabelLocations(
        'Rank 3 hit "CUDA out of memory" (notes.md:7-12:5); rank 0 at notes.md:7-12:6.',
        ['notes.md:7-12'],
        label,
      ),
      'Rank 3 hit "CUDA out of memory" (notes.md:11); rank 0 at notes.md:12.',
    );
  });
});
