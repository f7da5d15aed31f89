/**
 * Actions the report, the quick fixes and the notifications share: copy text, run a
 * verification command in a terminal, reveal a log line. Running a command is refused in an
 * untrusted workspace and asks first: the first time (per workspace) with a modal that can
 * also allow it for the rest of the session of this workspace.
 */
import * as vscode from 'vscode';
import { info } from './log';
import { unfilledPlaceholders } from './placeholders';

const ALLOW_KEY = 'rootrank.runAllowed';

/** Copy `text` to the clipboard. */
export async function copyText(text: string): Promise<void> {
  await vscode.env.clipboard.writeText(text);
  vscode.window.setStatusBarMessage('rootrank: copied to the clipboard', 2500);
}

/**
 * Run `command` in a terminal named "rootrank", after asking. Returns whether it ran.
 * `commandLine` is sent as typed text (`Terminal.sendText`), so the user's shell runs it.
 */
export async function runInTerminal(context: vscode.ExtensionContext, command: string): Promise<boolean> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage(
      'rootrank does not run commands in an untrusted workspace. Copy the command instead.',
    );
    return false;
  }
  const trimmed = command.trim();
  if (!trimmed) {
    return false;
  }
  if (!context.workspaceState.get<boolean>(ALLOW_KEY, false)) {
    const choice = await vscode.window.showWarningMessage(
      'Run this command in a terminal?',
      { modal: true, detail: trimmed },
      'Run',
      'Run and Do Not Ask Again',
    );
    if (!choice) {
      return false;
    }
    if (choice === 'Run and Do Not Ask Again') {
      await context.workspaceState.update(ALLOW_KEY, true);
    }
  }
  const existing = vscode.window.terminals.find((t) => t.name === 'rootrank' && t.exitStatus === undefined);
  const terminal = existing ?? vscode.window.createTerminal({ name: 'rootrank' });
  terminal.show();
  // A new terminal: wait until its shell is at the prompt (shell integration activates then),
  // so the text is not typed ahead of the prompt (where it would show twice).
  const integration = await waitForShellIntegration(terminal, existing ? 500 : SHELL_READY_MS);
  const blanks = unfilledPlaceholders(trimmed);
  if (blanks.length) {
    // Typed into the terminal but not run: the user fills in the blanks, then presses Enter.
    terminal.sendText(trimmed, false);
    void vscode.window.showInformationMessage(
      `rootrank: fill in ${blanks.join(', ')} in the terminal, then press Enter to run the command.`,
    );
    info(`Typed in terminal (not run: ${blanks.join(', ')} to fill in): ${trimmed}`);
    return false;
  }
  if (integration) {
    integration.executeCommand(trimmed);
  } else {
    terminal.sendText(trimmed, true);
  }
  info(`Ran in terminal${integration ? ' (shell integration)' : ''}: ${trimmed}`);
  return true;
}

/** How long a new terminal's shell gets to reach its prompt (ms). */
const SHELL_READY_MS = 4000;

/**
 * The terminal's shell integration once the shell is at its prompt, or undefined after
 * `timeoutMs` (a shell without integration): then a short pause lets the prompt print.
 */
export async function waitForShellIntegration(
  terminal: vscode.Terminal,
  timeoutMs: number,
): Promise<vscode.TerminalShellIntegration | undefined> {
  if (terminal.shellIntegration) {
    return terminal.shellIntegration;
  }
  return new Promise((resolve) => {
    const done = (value: vscode.TerminalShellIntegration | undefined) => {
      clearTimeout(timer);
      listener.dispose();
      resolve(value);
    };
    const listener = vscode.window.onDidChangeTerminalShellIntegration((e) => {
      if (e.terminal === terminal) {
        done(e.shellIntegration);
      }
    });
    const timer = setTimeout(() => done(terminal.shellIntegration), timeoutMs);
  });
}

/** Open `uri` with the cursor at 1-based `line` (and 0-based `column`). */
export async function revealLine(uri: vscode.Uri, line: number, column = 0): Promise<void> {
  const position = new vscode.Position(Math.max(0, line - 1), Math.max(0, column));
  await vscode.window.showTextDocument(uri, { selection: new vscode.Range(position, position) });
}
