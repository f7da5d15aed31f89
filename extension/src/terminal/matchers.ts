/**
 * Fast line matching for terminal links: every signature pattern carries a `literal`, a
 * substring each matching line contains (`server/rootrank/signatures.py`), so a terminal
 * line is a candidate when it contains one. The server still decides the diagnosis when
 * the link is opened. Pure (no `vscode` import).
 */
import type { Evidence } from '../report/diagnosis';

/** One literal of one signature. */
export interface LiteralMatcher {
  signature: string;
  title: string;
  literal: string;
  /** Compare lower-cased (the literal is then lower case, as the schema requires). */
  ignorecase: boolean;
}

/** A link to make: `start` and `length` in UTF-16 code units of the line. */
export interface LineMatch {
  start: number;
  length: number;
  signature: string;
  title: string;
}

interface SignatureLike {
  id: string;
  title?: string;
  literals?: unknown;
  patterns?: unknown;
}

/**
 * The matchers of a signature list (`rootrank.signatures`): from `patterns[].literal`, or
 * from `literals` when the server sends them flat. Literals shorter than 6 characters are
 * skipped: too common to mean a failure on their own.
 */
export function buildMatchers(signatures: SignatureLike[]): LiteralMatcher[] {
  const out: LiteralMatcher[] = [];
  const seen = new Set<string>();
  const add = (sig: SignatureLike, literal: unknown, ignorecase: unknown) => {
    if (typeof literal !== 'string' || literal.trim().length < 6) {
      return;
    }
    const ic = ignorecase === true;
    const key = `${sig.id}\u0000${ic ? literal.toLowerCase() : literal}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push({
        signature: sig.id,
        title: sig.title ?? sig.id,
        literal: ic ? literal.toLowerCase() : literal,
        ignorecase: ic,
      });
    }
  };
  for (const sig of signatures) {
    if (Array.isArray(sig.patterns)) {
      for (const p of sig.patterns as Array<{ literal?: unknown; ignorecase?: unknown }>) {
        add(sig, p?.literal, p?.ignorecase);
      }
    }
    if (Array.isArray(sig.literals)) {
      for (const l of sig.literals) {
        add(sig, l, false);
      }
    }
  }
  // Longest first: the most specific literal wins when several match at one place.
  return out.sort((a, b) => b.literal.length - a.literal.length);
}

/**
 * The first (leftmost, then longest) literal found in `line`, or undefined. The link spans
 * from the literal to the end of the line's text (trailing blanks excluded), so the whole
 * message is clickable.
 */
export function matchLine(line: string, matchers: LiteralMatcher[]): LineMatch | undefined {
  let best: LineMatch | undefined;
  let lower: string | undefined;
  const end = line.trimEnd().length;
  for (const m of matchers) {
    let index: number;
    if (m.ignorecase) {
      lower ??= line.toLowerCase();
      index = lower.indexOf(m.literal);
    } else {
      index = line.indexOf(m.literal);
    }
    if (index >= 0 && (!best || index < best.start)) {
      best = { start: index, length: Math.max(m.literal.length, end - index), signature: m.signature, title: m.title };
    }
  }
  return best;
}

/**
 * The start of the word that holds `index` in `line`: moves left over letters, digits, `_`
 * and `.` (so `torch.OutOfMemoryError` is linked whole, not from `OutOfMemoryError`).
 */
export function wordStart(line: string, index: number): number {
  let i = Math.max(0, Math.min(index, line.length));
  while (i > 0 && /[\w.]/.test(line[i - 1])) {
    i--;
  }
  return i;
}

/** Evidence of a diagnosis, as far as a terminal link needs it (`column_start` 0-based). */
type LinkEvidence = Pick<Evidence, 'text' | 'column_start'>;

/**
 * The link span on a terminal `line` for a diagnosis: from the word where the diagnosis's
 * evidence on that line matched (else where `fallback` matched) to the end of the line's
 * text. `undefined` when neither places it.
 */
export function linkSpan(
  line: string,
  evidence: LinkEvidence[],
  fallback: LineMatch | undefined,
): { start: number; length: number } | undefined {
  const end = line.trimEnd().length;
  const body = line.trim();
  for (const e of evidence) {
    const text = (e.text ?? '').trim();
    if (!text || typeof e.column_start !== 'number') {
      continue;
    }
    // The evidence line is this terminal line (a terminal may cut or indent it).
    const offset = line.indexOf(text.slice(0, Math.min(text.length, 40)));
    if (offset >= 0 || text === body) {
      const start = wordStart(line, Math.max(0, offset) + e.column_start - (text.length - text.trimStart().length));
      if (start < end) {
        return { start, length: end - start };
      }
    }
  }
  if (fallback) {
    const start = wordStart(line, fallback.start);
    return { start, length: Math.max(1, end - start) };
  }
  return undefined;
}
