/**
 * Placeholders a verification command leaves for the user to fill in: `<gpus>`, `<ckpt>`,
 * `<failing step + 10>`. Such a command is never run as it stands: in a shell, `<gpus> train.py`
 * reads the file `gpus` and truncates `train.py`. No vscode import, so mocha tests it.
 */

const PLACEHOLDER = /<[A-Za-z][^<>\n]{0,60}>/g;

/** The placeholders in `command`, in order of appearance (duplicates kept once). */
export function unfilledPlaceholders(command: string): string[] {
  return [...new Set(command.match(PLACEHOLDER) ?? [])];
}
