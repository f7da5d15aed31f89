/**
 * Which workspace file a traceback frame's path names, for the report view's "open the
 * frame" link: the same rule as the language server's "Open the frame" code action
 * (server/rootrank/lsp/actions.py, frame_files): a path that exists in the workspace is used
 * as is; otherwise (a log from another machine: /home/user/proj/data.py) the candidate whose
 * path ends with the longest tail of the frame's path segments wins, at least its file name.
 */

/** A path's segments, `\` and `/` both separators, empty ones dropped. */
function segments(p: string): string[] {
  return p.split(/[\\/]+/).filter((s) => s.length > 0);
}

/**
 * The candidate (a workspace file's path) that ends with the longest tail of `framePath`'s
 * segments; `undefined` when none ends with its file name. Ties keep the first candidate.
 */
export function bestFrameFile(framePath: string, candidates: readonly string[]): string | undefined {
  const frame = segments(framePath);
  let best: string | undefined;
  let bestLength = 0;
  for (const candidate of candidates) {
    const parts = segments(candidate);
    let n = 0;
    while (n < frame.length && n < parts.length && frame[frame.length - 1 - n] === parts[parts.length - 1 - n]) {
      n += 1;
    }
    if (n > bestLength) {
      best = candidate;
      bestLength = n;
    }
  }
  return best;
}

/** The frame path's file name (`data.py` of `/home/user/proj/data.py` or `C:\\proj\\data.py`). */
export function frameFileName(framePath: string): string {
  const parts = segments(framePath);
  return parts.length ? parts[parts.length - 1] : framePath;
}
