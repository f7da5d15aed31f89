/**
 * Live watching in VS Code, through the engine's own `rootrank watch --format json`
 * (`server/rootrank/live/`), run with the bundled libraries on the server's interpreter:
 *
 * - a command started in a terminal with shell integration (and matching
 *   `rootrank.live.commands`) has its output stream (`execution.read()`) piped into
 *   `rootrank watch -` while it runs: a failure or a stall raises a notification before the
 *   job exits, with **Show Diagnosis** for a failure;
 * - **rootrank: Watch Log File** follows a log written elsewhere (`rootrank watch PATH`);
 *   **rootrank: Stop Watching** ends every watch;
 * - the status bar item (`LiveStatus`) shows the watched job: its step, its ranks, stalled or failed.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  EventLineParser,
  initialState,
  JobState,
  LiveEvent,
  reduce,
  rankList,
  shouldWatch,
  statusText,
  statusTooltip,
} from './liveEvents';
import { info } from './log';
import { headline, Diagnosis } from './report/diagnosis';
import type { ServerManager } from './server';
import { readSettings } from './settings';

/** Seconds between progress events the status bar asks for. */
const PROGRESS_EVERY = 2;

/** One running `rootrank watch`. */
export class LiveJob implements vscode.Disposable {
  state: JobState = initialState();
  private readonly parser = new EventLineParser();
  private child: ChildProcess | undefined;
  private stderr = '';
  /** Resolves when the watcher process ended. */
  readonly done: Promise<void>;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    cwd: string,
    private readonly onEvent: (job: LiveJob, e: LiveEvent) => void,
  ) {
    info(`Live: ${command} ${args.join(' ')}`);
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, PYTHONUTF8: '1', PYTHONDONTWRITEBYTECODE: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    this.child = child;
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      for (const e of this.parser.push(chunk)) {
        this.state = reduce(this.state, e);
        this.onEvent(this, e);
      }
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4000);
    });
    child.stdin?.on('error', () => undefined); // the watcher ended first: nothing to write to
    this.done = new Promise((resolve) => {
      child.on('error', (err) => {
        info(`Live watch "${name}" could not start: ${err.message}`);
        resolve();
      });
      child.on('exit', (code) => {
        if (code !== 0 && code !== 1 && code !== null) {
          info(`Live watch "${name}" stopped (exit ${code}): ${this.stderr.trim().split('\n').slice(-3).join(' | ')}`);
        }
        this.child = undefined;
        resolve();
      });
    });
  }

  /** Terminal data for `rootrank watch -`. */
  write(data: string): void {
    if (this.child?.stdin?.writable) {
      this.child.stdin.write(data);
    }
  }

  /** The command ended: close the input; the watcher reports what is left and exits. */
  end(exitCode: number | undefined): void {
    this.child?.stdin?.end();
    if (exitCode !== undefined) {
      this.state = reduce(this.state, { event: 'exit', time: Date.now() / 1000, code: exitCode });
      this.onEvent(this, { event: 'exit', time: Date.now() / 1000, code: exitCode });
    }
  }

  dispose(): void {
    this.child?.kill('SIGTERM');
    this.child = undefined;
  }
}

/** Watches terminal commands and log files; see the module docstring. */
export class LiveWatcher implements vscode.Disposable {
  private readonly jobs = new Set<LiveJob>();
  private readonly terminalJobs = new Map<vscode.TerminalShellExecution, LiveJob>();
  private readonly notified = new Map<vscode.Terminal, Set<string>>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly status: vscode.StatusBarItem;
  private shown: LiveJob | undefined;
  private readonly eventEmitter = new vscode.EventEmitter<{ job: LiveJob; event: LiveEvent }>();
  readonly onDidReceiveEvent = this.eventEmitter.event;

  /**
   * `notifications`: the extension's list of every notification shown (newest last; the
   * end-to-end tests read it); live ones are added to it too.
   */
  constructor(
    private readonly server: ServerManager,
    private readonly showReport: (d: Diagnosis) => void,
    readonly notifications: string[] = [],
  ) {
    this.status = vscode.window.createStatusBarItem('rootrank.live', vscode.StatusBarAlignment.Left, 50);
    this.status.name = 'rootrank live';
    this.status.command = 'rootrank.showLiveJob';
    this.disposables.push(
      this.status,
      this.eventEmitter,
      vscode.window.onDidStartTerminalShellExecution((e) => void this.started(e)),
      vscode.window.onDidEndTerminalShellExecution((e) => this.ended(e)),
      vscode.window.onDidCloseTerminal((t) => this.notified.delete(t)),
    );
  }

  /** The status bar item's text now ('' when hidden). */
  statusBarText(): string {
    return this.shown ? this.status.text : '';
  }

  /** Whether a live notification already named this failure for `terminal`. */
  alreadyNotified(terminal: vscode.Terminal, line: string): boolean {
    return this.notified.get(terminal)?.has(line) ?? false;
  }

  private async command(): Promise<{ command: string; args: string[]; cwd: string } | undefined> {
    await this.server.start();
    const interpreter = this.server.interpreterInfo();
    if (!interpreter) {
      return undefined;
    }
    // The bundled libraries, as the server's launcher puts them first (-I: nothing of the user's).
    const libs = path.join(this.server.bundledDir(), 'libs');
    const boot = 'import sys; sys.path.insert(0, sys.argv.pop(1)); from rootrank.cli import main; sys.exit(main())';
    return {
      command: interpreter.command,
      args: [...interpreter.args, '-I', '-c', boot, libs],
      cwd: this.server.bundledDir(),
    };
  }

  private async startJob(name: string, target: string, terminal?: vscode.Terminal): Promise<LiveJob | undefined> {
    const cmd = await this.command();
    if (!cmd) {
      info(`Live watch of "${name}" not started: the rootrank server is not running`);
      return undefined;
    }
    const args = [...cmd.args, 'watch', '--format', 'json', '--progress-every', String(PROGRESS_EVERY)];
    if (!readSettings().mask) {
      args.push('--no-mask');
    }
    const stall = vscode.workspace.getConfiguration('rootrank').get<number>('live.stallSeconds', 0);
    if (stall > 0) {
      args.push('--stall', String(stall));
    }
    args.push(target);
    const job = new LiveJob(name, cmd.command, args, cmd.cwd, (j, e) => this.onEvent(j, e, terminal));
    this.jobs.add(job);
    this.show(job);
    void job.done.then(() => {
      this.jobs.delete(job);
    });
    return job;
  }

  private async started(e: vscode.TerminalShellExecutionStartEvent): Promise<void> {
    const config = vscode.workspace.getConfiguration('rootrank');
    const commandLine = e.execution.commandLine.value;
    if (
      !config.get<boolean>('live.terminal', true) ||
      !shouldWatch(commandLine, config.get<string>('live.commands') || undefined)
    ) {
      return;
    }
    const stream = e.execution.read(); // at once: only data written after the first read() is seen
    const job = await this.startJob(`terminal: ${commandLine || e.terminal.name}`, '-', e.terminal);
    if (!job) {
      return;
    }
    this.terminalJobs.set(e.execution, job);
    try {
      for await (const chunk of stream) {
        job.write(chunk);
      }
    } catch (err) {
      info(`Live: reading terminal output failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private ended(e: vscode.TerminalShellExecutionEndEvent): void {
    const job = this.terminalJobs.get(e.execution);
    this.terminalJobs.delete(e.execution);
    // Let the last chunks of the stream reach the watcher before its input closes.
    setTimeout(() => job?.end(e.exitCode), 500);
  }

  /** rootrank: Watch Log File. */
  async watchFile(uri?: vscode.Uri): Promise<LiveJob | undefined> {
    let target = uri;
    if (!target) {
      const active = vscode.window.activeTextEditor?.document.uri;
      const picked = await vscode.window.showOpenDialog({
        canSelectFiles: true,
        canSelectFolders: true,
        canSelectMany: false,
        defaultUri: active?.scheme === 'file' ? active : undefined,
        openLabel: 'Watch',
        title: 'rootrank: a log file or a folder of logs to follow',
      });
      target = picked?.[0];
    }
    if (!target) {
      return undefined;
    }
    if (target.scheme !== 'file') {
      void vscode.window.showWarningMessage(
        'rootrank: only files on this machine (or a mounted shared filesystem) can be watched.',
      );
      return undefined;
    }
    return this.startJob(path.basename(target.fsPath), target.fsPath);
  }

  /** rootrank: Stop Watching. */
  stopAll(): void {
    for (const job of this.jobs) {
      job.dispose();
    }
    this.jobs.clear();
    this.show(undefined);
  }

  /** rootrank: Show Live Job (the status bar item's click). */
  showShown(): void {
    const job = this.shown;
    if (job?.state.diagnosis) {
      this.showReport(job.state.diagnosis);
    } else if (job) {
      void vscode.window.showInformationMessage(statusTooltip(job.name, job.state).replace(/\n/g, ' · '));
    }
  }

  private show(job: LiveJob | undefined): void {
    this.shown = job;
    if (!job) {
      this.status.hide();
      return;
    }
    this.status.text = statusText(job.state);
    this.status.tooltip = statusTooltip(job.name, job.state);
    this.status.backgroundColor =
      job.state.phase === 'failed'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : job.state.phase === 'stalled'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    this.status.show();
  }

  private onEvent(job: LiveJob, e: LiveEvent, terminal?: vscode.Terminal): void {
    this.show(job);
    this.eventEmitter.fire({ job, event: e });
    if (e.event === 'stall' || e.event === 'straggler') {
      const stalled = rankList((e.ranks ?? []).map((r) => r.rank));
      const message = `rootrank: ${e.event} in ${job.name}: ${e.why ?? ''}${stalled && e.event === 'stall' ? ` (no progress: ranks ${stalled})` : ''}`;
      this.notifications.push(message);
      info(message);
      void vscode.window.showWarningMessage(message);
    } else if (e.event === 'withdrawn' || e.event === 'healthy') {
      // an alarm said earlier was none: say so where it was said
      const message =
        e.event === 'healthy'
          ? `rootrank: ${job.name} finished healthy; earlier alarms withdrawn: ${(e.withdrawn ?? []).map((a) => `${a.alarm} (${a.why})`).join('; ')}`
          : `rootrank: ${e.alarm ?? 'alarm'} in ${job.name} withdrawn: ${e.why ?? ''}`;
      this.notifications.push(message);
      info(message);
      void vscode.window.showInformationMessage(message);
    } else if (e.event === 'failure' && e.diagnosis?.root_cause && !(terminal && e.final)) {
      // A terminal command's diagnosis at its end is the terminal watcher's to show.
      const line = headline(e.diagnosis);
      if (!line) {
        return;
      }
      if (terminal) {
        const seen = this.notified.get(terminal) ?? new Set<string>();
        seen.add(line);
        this.notified.set(terminal, seen);
      }
      // a terminal command runs; a watched file is only written to
      const message = `rootrank: ${line} (${terminal ? `while "${job.name}" runs` : `in "${job.name}"`})`;
      this.notifications.push(message);
      info(message);
      const diagnosis = e.diagnosis;
      void vscode.window.showErrorMessage(message, 'Show Diagnosis').then((choice) => {
        if (choice) {
          this.showReport(diagnosis);
        }
      });
    }
  }

  dispose(): void {
    this.stopAll();
    this.disposables.forEach((d) => d.dispose());
  }
}
