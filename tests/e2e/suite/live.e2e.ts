/**
 * Live watching in a real VS Code (see extension.e2e.ts for the harness): a command that is
 * still running in a bash terminal with shell integration raises the failure notification
 * before it exits, the status bar item shows a stall and its rank, and Watch Log File follows
 * a log that another process appends to.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';

const WORKSPACE = vscode.workspace.workspaceFolders![0].uri.fsPath;

interface LiveApi {
  notifications: string[];
  live: { statusBarText(): string; stopAll(): void };
}

function log(message: string): void {
  console.log(`[e2e-log] ${message}`);
}

async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 45_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) {
      return value as T;
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function bash(
  name: string,
): Promise<{ terminal: vscode.Terminal; integration: vscode.TerminalShellIntegration }> {
  const terminal = vscode.window.createTerminal({ name, shellPath: '/bin/bash', cwd: WORKSPACE });
  terminal.show();
  const integration = await waitFor(`shell integration in ${name}`, () => terminal.shellIntegration, 30_000);
  return { terminal, integration };
}

describe('rootrank live watching (installed .vsix, real VS Code)', function () {
  let api: LiveApi;

  before(async function () {
    api = (await vscode.extensions.getExtension<LiveApi>('rootrank.rootrank')!.activate()) as LiveApi;
  });

  afterEach(async function () {
    api.live.stopAll();
    await vscode.workspace
      .getConfiguration('rootrank')
      .update('live.stallSeconds', undefined, vscode.ConfigurationTarget.Global);
  });

  it('notifies a failure while the command still runs in the terminal', async function () {
    const { terminal, integration } = await bash('e2e live failure');
    let ended = false;
    const sub = vscode.window.onDidEndTerminalShellExecution((e) => {
      if (e.terminal === terminal) {
        ended = true;
      }
    });
    const count = api.notifications.length;
    integration.executeCommand('./live-failing-job.sh');
    const message = await waitFor(
      'the live failure notification',
      () => api.notifications.slice(count).find((m) => /while/.test(m)),
      60_000,
    );
    log(`notification: ${message}`);
    assert.match(message, /CUDA out of memory in the caching allocator on rank 1/);
    assert.equal(ended, false, 'the notification came before the command exited');
    assert.match(api.live.statusBarText(), /failed \(rank 1\)/);
    sub.dispose();
    terminal.dispose();
  });

  it('shows a stall and the rank behind in the status bar', async function () {
    await vscode.workspace
      .getConfiguration('rootrank')
      .update('live.stallSeconds', 3, vscode.ConfigurationTarget.Global);
    const { terminal, integration } = await bash('e2e live stall');
    const count = api.notifications.length;
    integration.executeCommand('./live-stalling-job.sh');
    const text = await waitFor(
      'the stalled status bar',
      () => (/stalled/.test(api.live.statusBarText()) ? api.live.statusBarText() : undefined),
      60_000,
    );
    log(`status bar: ${text}`);
    assert.match(text, /stalled \(rank 1\) · step 5 · 2 ranks/);
    const message = await waitFor(
      'the stall notification',
      () => api.notifications.slice(count).find((m) => /stall/.test(m)),
      10_000,
    );
    assert.match(message, /rank 1 is behind at step 4/);
    terminal.dispose();
  });

  it('Watch Log File follows a log another process appends to', async function () {
    const file = path.join(WORKSPACE, 'logs', 'live-watched.log');
    fs.writeFileSync(file, '[rank0]: step 1 loss 1.0\n[rank3]: step 1 loss 1.0\n');
    const count = api.notifications.length;
    await vscode.commands.executeCommand('rootrank.watchLogFile', vscode.Uri.file(file));
    await waitFor('the status bar to show the file', () => /step 1 · 2 ranks/.test(api.live.statusBarText()), 30_000);
    fs.appendFileSync(
      file,
      '[rank3]: Traceback (most recent call last):\n' +
        '[rank3]:   File "train.py", line 42, in <module>\n' +
        '[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.20 GiB is free.\n',
    );
    const message = await waitFor(
      'the failure notification',
      () => api.notifications.slice(count).find((m) => /out of memory/.test(m)),
      30_000,
    );
    assert.match(message, /on rank 3 \(in "live-watched.log"\)/);
    assert.match(api.live.statusBarText(), /failed \(rank 3\)/);
    fs.rmSync(file);
  });
});
