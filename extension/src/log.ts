/**
 * The `rootrank` output channel: the extension's log and (through the language client's
 * `traceOutputChannel`) the LSP trace share it. A `LogOutputChannel` gives levels and times.
 */
import * as vscode from 'vscode';

let channel: vscode.LogOutputChannel | undefined;

/** The channel, created on first use. */
export function outputChannel(): vscode.LogOutputChannel {
  if (!channel) {
    channel = vscode.window.createOutputChannel('rootrank', { log: true });
  }
  return channel;
}

/** Log an informational line. */
export function info(message: string): void {
  outputChannel().info(message);
}

/** Log an error line. */
export function error(message: string): void {
  outputChannel().error(message);
}
