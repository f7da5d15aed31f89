import * as assert from 'node:assert/strict';
import { toSelectorPattern } from '../../src/globs';
import { unfilledPlaceholders } from '../../src/placeholders';
import { meetsFloor, parseProbe } from '../../src/pythonVersion';
import { buildMatchers, matchLine } from '../../src/terminal/matchers';

describe('python version', () => {
  it('parses the probe output', () => {
    const info = parseProbe(
      'noise\n{"version": [3, 12, 4], "executable": "/usr/bin/python3", "implementation": "cpython"}\n',
    );
    assert.deepEqual(info.version, [3, 12, 4]);
    assert.equal(info.executable, '/usr/bin/python3');
  });
  it('rejects anything else', () => {
    assert.throws(() => parseProbe('Python 3.12.4'), /unexpected output/);
  });
  it('checks the 3.10 floor', () => {
    assert.equal(meetsFloor([3, 9, 18]), false);
    assert.equal(meetsFloor([3, 10, 0]), true);
    assert.equal(meetsFloor([3, 14, 0]), true);
    assert.equal(meetsFloor([2, 7, 18]), false);
  });
});

describe('toSelectorPattern', () => {
  it('turns a file-name glob into a VS Code pattern', () => {
    assert.equal(toSelectorPattern('*.log'), '**/*.log');
    assert.equal(toSelectorPattern('slurm-*.out'), '**/slurm-*.out');
    assert.equal(toSelectorPattern('**/logs/*.txt'), '**/logs/*.txt');
  });
});

describe('terminal link matchers', () => {
  const matchers = buildMatchers([
    { id: 'cuda-oom', title: 'CUDA out of memory', literals: ['CUDA out of memory', 'oom'] },
    {
      id: 'nccl-watchdog-timeout',
      title: 'NCCL watchdog timeout',
      patterns: [{ literal: 'watchdog caught collective operation timeout', ignorecase: true }],
    },
  ]);

  it('skips literals too short to mean a failure', () => {
    assert.deepEqual(matchers.map((m) => m.literal).sort(), [
      'CUDA out of memory',
      'watchdog caught collective operation timeout',
    ]);
  });

  it('links from the literal to the end of the line', () => {
    const line = '[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.   ';
    const m = matchLine(line, matchers);
    assert.equal(m?.signature, 'cuda-oom');
    assert.equal(m?.start, line.indexOf('CUDA out of memory'));
    assert.equal(m!.start + m!.length, line.trimEnd().length);
  });

  it('matches case-insensitive literals', () => {
    const m = matchLine('[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)', matchers);
    assert.equal(m?.signature, 'nccl-watchdog-timeout');
    assert.equal(m?.start, 9);
  });

  it('returns nothing for a normal line', () => {
    assert.equal(matchLine('step 4119 loss 2.3141', matchers), undefined);
  });
});

describe('unfilledPlaceholders', () => {
  it('finds the blanks a verification command leaves, once each', () => {
    assert.deepEqual(
      unfilledPlaceholders('torchrun --nproc-per-node=<gpus> train.py --max-steps <failing step + 10> # <gpus>'),
      ['<gpus>', '<failing step + 10>'],
    );
    assert.deepEqual(unfilledPlaceholders(`python -c "import torch; torch.load('<ckpt>')"`), ['<ckpt>']);
    assert.deepEqual(unfilledPlaceholders('NCCL_DEBUG=INFO torchrun --nnodes=<n> ... 2>&1 | grep -c WARN'), [
      '<n>',
      '...',
    ]);
    assert.deepEqual(unfilledPlaceholders('python a.py  # loss... stays finite <ok>'), []);
  });

  it('leaves comparisons and redirections alone', () => {
    assert.deepEqual(unfilledPlaceholders('test $(nproc) -gt 1 && python a.py 2>&1 | grep -c "x < 3" > out.txt'), []);
    assert.deepEqual(unfilledPlaceholders('TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc-per-node=8 train.py'), []);
  });
});
