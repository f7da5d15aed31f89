/**
 * Reading terminal output with the stable shell-integration API: every command's output is
 * read from `onDidStartTerminalShellExecution` on (`execution.read()` yields only data
 * written after the first call), capped to `rootrank.terminal.maxOutputChars` keeping the
 * end. When a command exits non-zero and the server recognises a failure in its output, a
 * notification names it with a "Show Diagnosis" button. Terminal links use the same store.
 */
import * as vscode from 'vscode';
import { headline, Diagnosis } from '../report/diagnosis';
import { info } from '../log';
import { readSettings } from '../settings';
import { capOutput, OutputTail, terminalDataToText } from './capture';

/** A finished command's output. */
export interface CommandOutput {
  commandLine: string;
  exitCode: number | undefined;
  /** Plain text (escape sequences removed), capped. */
  text: string;
  /** How many characters of the start were dropped by the cap. */
  dropped: number;
}

/** What the watcher calls on a failed command whose output names a failure. */
export type FailureHandler = (output: CommandOutput, diagnosis: Diagnosis, terminal: vscode.Terminal) => void;

interface Running {
  tail: OutputTail;
  done: Promise<void>;
}

/** Tracks shell executions in every terminal. */
export class TerminalWatcher implements vscode.Disposable {
  private readonly running = new Map<vscode.TerminalShellExecution, Running>();
  private readonly last = new Map<vscode.Terminal, CommandOutput>();
  private readonly disposables: vscode.Disposable[] = [];
  /** Fires after each command ends and has been handled (tests wait on it). */
  private readonly endedEmitter = new vscode.EventEmitter<{ output: CommandOutput; diagnosis?: Diagnosis }>();
  readonly onDidHandleCommand = this.endedEmitter.event;

  constructor(
    private readonly diagnose: (text: string, name: string) => Promise<Diagnosis>,
    private readonly onFailure: FailureHandler,
  ) {
    this.disposables.push(
      vscode.window.onDidStartTerminalShellExecution((e) => this.started(e)),
      vscode.window.onDidEndTerminalShellExecution((e) => void this.ended(e)),
      vscode.window.onDidCloseTerminal((t) => this.last.delete(t)),
      this.endedEmitter,
    );
  }

  private started(e: vscode.TerminalShellExecutionStartEvent): void {
    // Raw data holds escape sequences too: keep twice the cap raw, cap again after cleaning.
    const tail = new OutputTail(readSettings().maxOutputChars * 2);
    const stream = e.execution.read();
    const done = (async () => {
      try {
        for await (const chunk of stream) {
          tail.push(chunk);
        }
      } catch (err) {
        info(`Reading terminal output failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    })();
    this.running.set(e.execution, { tail, done });
  }

  private async ended(e: vscode.TerminalShellExecutionEndEvent): Promise<void> {
    const run = this.running.get(e.execution);
    this.running.delete(e.execution);
    if (!run) {
      return;
    }
    // The stream ends with the execution; do not wait forever for a stuck one.
    await Promise.race([run.done, new Promise((resolve) => setTimeout(resolve, 3000))]);
    const settings = readSettings();
    const text = capOutput(terminalDataToText(run.tail.text()), settings.maxOutputChars);
    const output: CommandOutput = {
      commandLine: e.execution.commandLine.value,
      exitCode: e.exitCode,
      text,
      dropped: run.tail.dropped,
    };
    this.last.set(e.terminal, output);
    let diagnosis: Diagnosis | undefined;
    if (e.exitCode !== undefined && e.exitCode !== 0 && settings.notifyOnFailure && text.trim()) {
      try {
        diagnosis = await this.diagnose(text, `terminal: ${output.commandLine || e.terminal.name}`);
        info(`Command "${output.commandLine}" exited ${e.exitCode}: ${headline(diagnosis) ?? 'no known failure'}`);
        if (diagnosis.root_cause) {
          this.onFailure(output, diagnosis, e.terminal);
        }
      } catch (err) {
        info(`Diagnosing terminal output failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.endedEmitter.fire({ output, diagnosis });
  }

  /** The last finished command's output in `terminal`, if shell integration saw one. */
  lastOutput(terminal: vscode.Terminal): CommandOutput | undefined {
    return this.last.get(terminal);
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
    this.running.clear();
    this.last.clear();
  }
}
