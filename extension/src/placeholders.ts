/**
 * Placeholders a verification command leaves for the user to fill in: `<gpus>`, `<ckpt>`,
 * `<failing step + 10>`. Such a command is never run as it stands: in a shell, `<gpus> train.py`
 * reads the file `gpus` and truncates `train.py`. No vscode import, so mocha tests it.
 */

// `<name>` blanks, and a bare `...` word standing for the rest of the user's command line.
const PLACEHOLDER = /<[A-Za-z][^<>\n]{0,60}>|(?<!\S)\.\.\.(?!\S)/g;

/**
 * The placeholders in `command`, in order of appearance (duplicates kept once). A trailing
 * `  # comment` (what the verification shows) is not part of the command.
 */
export function unfilledPlaceholders(command: string): string[] {
  const code = command.split('  # ')[0];
  return [...new Set(code.match(PLACEHOLDER) ?? [])];
}
