/**
 * Starting, restarting and talking to the bundled rootrank language server
 * (`python -I dist/python/rootrank_server.py`, which runs `python -m rootrank.server`
 * over stdio) through `vscode-languageclient`. A status bar item shows its state and opens
 * the output channel. A crashed server is restarted up to {@link MAX_RESTARTS} times in
 * {@link RESTART_WINDOW_MS}; then the user is told why (the last lines it wrote to stderr).
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorHandler,
  ErrorHandlerResult,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  State,
} from 'vscode-languageclient/node';
import { asDiagnosis, Diagnosis } from './report/diagnosis';
import { toSelectorPattern } from './globs';
import { outputChannel, info, error as logError } from './log';
import { InterpreterError, resolveInterpreter, Interpreter } from './python';
import { readSettings, serverSettings } from './settings';
import { OutputTail } from './terminal/capture';

/** Restarts allowed within the window before giving up. */
export const MAX_RESTARTS = 4;
/** The window, in milliseconds. */
export const RESTART_WINDOW_MS = 3 * 60 * 1000;

/** A signature as `rootrank.signatures` lists it (extra fields are ignored). */
export interface SignatureSummary {
  id: string;
  title: string;
  failure_class: string;
  category?: string;
  /** Substrings every matching line contains (from the signature's patterns). */
  literals?: string[];
  patterns?: Array<{ literal?: string; regex?: string; ignorecase?: boolean }>;
  tags?: string[];
  [key: string]: unknown;
}

class RestartingErrorHandler implements ErrorHandler {
  private restarts: number[] = [];
  constructor(private readonly stderrTail: () => string) {}

  error(): ErrorHandlerResult {
    return { action: ErrorAction.Continue };
  }

  closed(): CloseHandlerResult {
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    this.restarts.push(now);
    const why = this.stderrTail().trim().split('\n').slice(-3).join(' | ');
    if (this.restarts.length <= MAX_RESTARTS) {
      logError(
        `The rootrank server stopped (${this.restarts.length}/${MAX_RESTARTS} restarts in 3 minutes); restarting. ${why}`,
      );
      return { action: CloseAction.Restart, handled: true };
    }
    return {
      action: CloseAction.DoNotRestart,
      message:
        `The rootrank server stopped ${this.restarts.length} times in 3 minutes, so it was not restarted again` +
        (why ? `. Its last words: ${why}` : '') +
        `. See the rootrank output channel; "rootrank: Restart Language Server" tries again.`,
    };
  }
}

/** Owns the language client and the status bar item. */
export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private readonly status: vscode.StatusBarItem;
  private readonly stderr = new OutputTail(4000);
  private interpreter: Interpreter | undefined;
  private child: ChildProcess | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<string>();
  /** Fires with `running`, `stopped`, `starting` or `failed`. */
  readonly onDidChangeState = this.stateEmitter.event;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.status = vscode.window.createStatusBarItem('rootrank.status', vscode.StatusBarAlignment.Right, 100);
    this.status.name = 'rootrank';
    this.status.command = 'rootrank.showOutput';
    this.setStatus('stopped', 'not started');
    this.status.show();
  }

  private setStatus(state: 'starting' | 'running' | 'stopped' | 'failed', detail: string): void {
    const icon = { starting: '$(sync~spin)', running: '$(pulse)', stopped: '$(circle-slash)', failed: '$(error)' }[
      state
    ];
    this.status.text = `${icon} rootrank`;
    this.status.tooltip = `rootrank language server: ${detail.replace(/\.+$/, '')}. Click to open its output.`;
    this.status.backgroundColor =
      state === 'failed' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    this.stateEmitter.fire(state);
  }

  /** The folder with the bundled Python server (built by bundle-python.js). */
  bundledDir(): string {
    return path.join(this.context.extensionPath, 'dist', 'python');
  }

  /** Start the server if it is not running; resolves to the client, or undefined when it cannot start. */
  async start(): Promise<LanguageClient | undefined> {
    if (this.client?.isRunning()) {
      return this.client;
    }
    if (!this.starting) {
      this.starting = this.doStart().finally(() => (this.starting = undefined));
    }
    return this.starting;
  }

  private async doStart(): Promise<LanguageClient | undefined> {
    const settings = readSettings();
    this.setStatus('starting', 'starting');
    const launcher = path.join(this.bundledDir(), 'rootrank_server.py');
    if (!fs.existsSync(launcher)) {
      const message = `The rootrank server is missing from this install (${launcher}); reinstall the extension.`;
      logError(message);
      this.setStatus('failed', message);
      void vscode.window.showErrorMessage(message);
      return undefined;
    }
    try {
      this.interpreter = await resolveInterpreter(
        settings.interpreter,
        vscode.workspace.workspaceFolders?.[0]?.uri,
        info,
      );
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      logError(message);
      this.setStatus('failed', message);
      if (e instanceof InterpreterError) {
        void vscode.window.showErrorMessage(message, 'Open Setting').then((choice) => {
          if (choice) {
            void vscode.commands.executeCommand('workbench.action.openSettings', 'rootrank.interpreter');
          }
        });
      }
      return undefined;
    }
    const interpreter = this.interpreter;
    const serverOptions = async (): Promise<ChildProcess> => {
      const args = [...interpreter.args, '-I', launcher];
      info(`Starting: ${interpreter.command} ${args.join(' ')}`);
      const child = spawn(interpreter.command, args, {
        // Our own folder: `python -m` children put the working directory on sys.path (3.10).
        cwd: this.bundledDir(),
        env: { ...process.env, PYTHONUTF8: '1', PYTHONDONTWRITEBYTECODE: '1' },
        windowsHide: true,
      });
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => {
        this.stderr.push(chunk);
        outputChannel().append(chunk);
      });
      child.on('exit', (code, signal) => info(`Server process exited (code ${code}, signal ${signal ?? 'none'})`));
      this.child = child;
      return child;
    };
    const selector = [
      { language: 'log' },
      ...settings.documentGlobs.map((glob) => ({ scheme: 'file', pattern: toSelectorPattern(glob) })),
      ...settings.documentGlobs.map((glob) => ({ scheme: 'untitled', pattern: toSelectorPattern(glob) })),
    ];
    const clientOptions: LanguageClientOptions = {
      documentSelector: selector,
      outputChannel: outputChannel(),
      traceOutputChannel: outputChannel(),
      initializationOptions: serverSettings(settings),
      errorHandler: new RestartingErrorHandler(() => this.stderr.text()),
    };
    const client = new LanguageClient('rootrank', 'rootrank', serverOptions, clientOptions);
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        this.setStatus('running', `running on Python ${interpreter.version.join('.')} (${interpreter.executable})`);
      } else if (e.newState === State.Starting) {
        this.setStatus('starting', 'starting');
      } else {
        this.setStatus('stopped', 'stopped');
      }
    });
    this.client = client;
    try {
      await client.start();
      return client;
    } catch (e) {
      const message = `The rootrank server did not start: ${e instanceof Error ? e.message : String(e)}. ${this.stderr.text().trim().split('\n').slice(-3).join(' | ')}`;
      logError(message);
      this.setStatus('failed', message);
      void vscode.window.showErrorMessage(message, 'Show Output').then((c) => c && outputChannel().show());
      return undefined;
    }
  }

  /** The interpreter of the running server, or undefined while it is not running. */
  interpreterInfo(): Interpreter | undefined {
    return this.client?.isRunning() ? this.interpreter : undefined;
  }

  /** The process id of the running server, or undefined while it is not running. */
  pid(): number | undefined {
    return this.client?.isRunning() && this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /** Stop and start again (after a settings change, or on the user's request). */
  async restart(): Promise<void> {
    const old = this.client;
    this.client = undefined;
    if (old) {
      try {
        await old.stop(5000);
      } catch (e) {
        info(`Stopping the old server: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    await this.start();
  }

  /** `workspace/executeCommand` on the server; starts it first if needed. */
  async execute<T>(command: string, args: unknown[]): Promise<T> {
    const client = await this.start();
    if (!client) {
      throw new Error('the rootrank server is not running (see the rootrank output channel)');
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args })) as T;
  }

  /**
   * `rootrank.diagnose` {text, name, firstLine} -> diagnosis. `firstLine` (1-based) is the
   * line of `name` the text starts at (a selection): the diagnosis then names the file's lines.
   */
  async diagnose(text: string, name: string, firstLine = 1): Promise<Diagnosis> {
    const request = firstLine > 1 ? { text, name, firstLine } : { text, name };
    return asDiagnosis(await this.execute('rootrank.diagnose', [request]));
  }

  /** `rootrank.signatures` -> every signature of the loaded library. */
  async signatures(): Promise<SignatureSummary[]> {
    const result = await this.execute<unknown>('rootrank.signatures', []);
    const list = Array.isArray(result)
      ? result
      : result && typeof result === 'object' && Array.isArray((result as { signatures?: unknown }).signatures)
        ? (result as { signatures: unknown[] }).signatures
        : [];
    return list.filter((s): s is SignatureSummary => !!s && typeof (s as SignatureSummary).id === 'string');
  }

  /** `rootrank.signature` {id} -> the entry. */
  async signature(id: string): Promise<Record<string, unknown>> {
    return this.execute('rootrank.signature', [{ id }]);
  }

  dispose(): void {
    this.status.dispose();
    this.stateEmitter.dispose();
    void this.client?.stop();
  }
}
