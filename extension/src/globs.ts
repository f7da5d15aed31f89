/**
 * The server matches `documentGlobs` with Python's `fnmatch` on the file name (or on the
 * path when the glob has a `/`; `server/rootrank/lsp/documents.py`). The client's document
 * selector needs VS Code glob patterns, so a name glob `*.log` becomes `**\/*.log`. Pure.
 */

/** Convert one server glob to a VS Code `DocumentFilter.pattern`. */
export function toSelectorPattern(glob: string): string {
  const g = glob.trim();
  if (g.startsWith('**/') || g.startsWith('/')) {
    return g;
  }
  return `**/${g}`;
}
