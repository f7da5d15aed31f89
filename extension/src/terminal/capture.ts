/**
 * Keeping the end of a command's terminal output, and turning the raw terminal data that
 * `TerminalShellExecution.read()` yields (VS Code API, "shell integration") into plain
 * log text. Pure: no `vscode` import, unit-tested with mocha.
 */

/**
 * Accumulates chunks and keeps only the last `maxChars` characters (UTF-16 code units, as
 * JavaScript counts string length). The end is what matters: a failing run prints its
 * root cause near the end, and a training loop's early output is mostly progress lines.
 */
export class OutputTail {
  private chunks: string[] = [];
  private length = 0;
  /** How many characters were dropped from the start so far. */
  dropped = 0;

  /** @param maxChars cap in characters; must be >= 1 (throws RangeError otherwise). */
  constructor(readonly maxChars: number) {
    if (!(maxChars >= 1)) {
      throw new RangeError(`maxChars must be >= 1, got ${maxChars}`);
    }
  }

  /** Add a chunk at the end, dropping whole chunks (then a prefix) from the start when over the cap. */
  push(chunk: string): void {
    if (!chunk) {
      return;
    }
    if (chunk.length >= this.maxChars) {
      this.dropped += this.length + chunk.length - this.maxChars;
      this.chunks = [chunk.slice(chunk.length - this.maxChars)];
      this.length = this.maxChars;
      return;
    }
    this.chunks.push(chunk);
    this.length += chunk.length;
    while (this.length > this.maxChars) {
      const first = this.chunks[0];
      const excess = this.length - this.maxChars;
      if (first.length <= excess) {
        this.chunks.shift();
        this.length -= first.length;
        this.dropped += first.length;
      } else {
        this.chunks[0] = first.slice(excess);
        this.length -= excess;
        this.dropped += excess;
      }
    }
  }

  /** Number of characters kept (always <= maxChars). */
  get size(): number {
    return this.length;
  }

  /** The kept text. */
  text(): string {
    if (this.chunks.length > 1) {
      this.chunks = [this.chunks.join('')];
    }
    return this.chunks[0] ?? '';
  }
}

/**
 * Keep the last `maxChars` characters of `text`, starting at a line boundary when one is
 * within the kept part (so the first kept line is whole). Returns `text` unchanged when
 * it fits.
 */
export function capOutput(text: string, maxChars: number): string {
  if (text.length <= maxChars) {
    return text;
  }
  const kept = text.slice(text.length - maxChars);
  const newline = kept.indexOf('\n');
  return newline >= 0 && newline < kept.length - 1 ? kept.slice(newline + 1) : kept;
}

// CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \), DCS/SOS/PM/APC strings, and the
// remaining two-byte escapes (ECMA-48 5.3/5.6). The OSC 633/133 marks VS Code's shell
// integration writes are OSC sequences, so they go too.
const ESCAPES =
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]/g;

/**
 * Turn raw terminal data into log text: escape sequences removed, `\r\n` made `\n`, and a
 * bare `\r` (a progress bar redrawing its line) resolved to what the line shows last.
 */
export function terminalDataToText(data: string): string {
  const plain = data.replace(ESCAPES, '').replace(/\r+\n/g, '\n');
  if (!plain.includes('\r')) {
    return plain;
  }
  return plain
    .split('\n')
    .map((line) => {
      const parts = line.split('\r').filter((part) => part.length > 0);
      return parts.length ? parts[parts.length - 1] : '';
    })
    .join('\n');
}
