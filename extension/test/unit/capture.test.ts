import * as assert from 'node:assert/strict';
import { capOutput, OutputTail, terminalDataToText } from '../../src/terminal/capture';

describe('OutputTail', () => {
  it('keeps everything under the cap', () => {
    const t = new OutputTail(10);
    t.push('abc');
    t.push('def');
    assert.equal(t.text(), 'abcdef');
    assert.equal(t.size, 6);
    assert.equal(t.dropped, 0);
  });

  it('keeps the last maxChars characters across chunks', () => {
    const t = new OutputTail(5);
    t.push('abc');
    t.push('defg');
    assert.equal(t.text(), 'cdefg');
    assert.equal(t.dropped, 2);
    t.push('hi');
    assert.equal(t.text(), 'efghi');
    assert.equal(t.dropped, 4);
  });

  it('keeps the end of one chunk larger than the cap', () => {
    const t = new OutputTail(4);
    t.push('ab');
    t.push('0123456789');
    assert.equal(t.text(), '6789');
    assert.equal(t.dropped, 8);
  });

  it('rejects a cap below 1', () => {
    assert.throws(() => new OutputTail(0), RangeError);
  });
});

describe('capOutput', () => {
  it('returns short text unchanged', () => {
    assert.equal(capOutput('a\nb\n', 100), 'a\nb\n');
  });

  it('keeps the end and starts at a whole line', () => {
    const text = 'line one\nline two\nCUDA out of memory\n';
    assert.equal(capOutput(text, 25), 'CUDA out of memory\n');
  });

  it('keeps a partial line when the kept part has no line break', () => {
    assert.equal(capOutput('0123456789', 4), '6789');
  });
});

describe('terminalDataToText', () => {
  it('removes colours, OSC 633 shell-integration marks and CRLF', () => {
    const raw = '\x1b]633;C\x07\x1b[31mRuntimeError\x1b[0m: boom\r\n\x1b]633;D;1\x07';
    assert.equal(terminalDataToText(raw), 'RuntimeError: boom\n');
  });

  it('resolves carriage-return redraws to the last state of the line', () => {
    assert.equal(terminalDataToText(' 10%\r 50%\r100%\r\ndone\n'), '100%\ndone\n');
  });

  it('removes OSC sequences ended by ESC backslash', () => {
    assert.equal(terminalDataToText('\x1b]0;title\x1b\\[rank3]: x'), '[rank3]: x');
  });
});
