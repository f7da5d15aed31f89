/**
 * rootrank in a real VS Code (code-server 4.100.3 = VS Code 1.100.3), installed from the
 * built .vsix into a fresh profile, with a fresh Python venv that has nothing installed as
 * `rootrank.interpreter`. Run by tests/e2e/run.sh; see tests/e2e/README.md.
 *
 * Screenshots: `shot(name)` logs `[e2e-shot] name`; the Playwright runner saves
 * test-artifacts/<name>.png and writes <name>.png.done, which this waits for.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';

const WORKSPACE = vscode.workspace.workspaceFolders![0].uri.fsPath;
const ARTIFACTS = process.env.ROOTRANK_E2E_ARTIFACTS ?? path.join(WORKSPACE, '..', 'artifacts');
const EMPTY_VENV_PYTHON = process.env.ROOTRANK_E2E_PYTHON ?? '';

interface Api {
  notifications: string[];
  lastReport(): { initiating_rank: number | null; root_cause: { signature: string } | null } | undefined;
  lastReportHtml(): string | undefined;
  server: { interpreterInfo(): { executable: string; version: number[] } | undefined; pid(): number | undefined };
}

function log(message: string): void {
  console.log(`[e2e-log] ${message}`);
}

async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 45_000,
): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) {
      return value as T;
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function shot(name: string): Promise<void> {
  const done = path.join(ARTIFACTS, `${name}.png.done`);
  fs.rmSync(done, { force: true });
  console.log(`[e2e-shot] ${name}`);
  await waitFor(`screenshot ${name}`, () => fs.existsSync(done), 30_000);
}

function rootrankDiagnostics(uri: vscode.Uri): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'rootrank');
}

function codeOf(d: vscode.Diagnostic): string {
  return typeof d.code === 'object' && d.code !== null ? String(d.code.value) : String(d.code);
}

function hoverText(hovers: vscode.Hover[]): string {
  return hovers
    .flatMap((h) => h.contents)
    .map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : ''))
    .join('\n');
}

/** Open notes.md and select its pasted rank-2/rank-3 traceback (0-based first/last lines). */
async function selectNotesTraceback(): Promise<{ lines: string[]; first: number; last: number }> {
  await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  const editor = await vscode.window.showTextDocument(vscode.Uri.file(path.join(WORKSPACE, 'notes.md')));
  const lines = editor.document.getText().split('\n');
  const first = lines.findIndex((l) => l.startsWith('[rank2]: step 912'));
  const last = lines.findIndex((l) => l.includes('Watchdog caught collective operation timeout'));
  assert.ok(first > 0 && last > first);
  editor.selection = new vscode.Selection(first, 0, last, lines[last].length);
  return { lines, first, last };
}

describe('rootrank extension (installed .vsix, real VS Code)', function () {
  let api: Api;

  before(async function () {
    const ext = vscode.extensions.getExtension<Api>('rootrank.rootrank');
    assert.ok(ext, 'rootrank.rootrank is installed');
    assert.ok(!ext.extensionPath.includes('/tests/e2e/'), `runs from the installed .vsix: ${ext.extensionPath}`);
    api = await ext.activate();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('starts the bundled server on a Python venv with nothing installed', async function () {
    const info = await waitFor('the server to run', () => api.server.interpreterInfo());
    log(`interpreter ${info.executable} ${info.version.join('.')}`);
    if (EMPTY_VENV_PYTHON) {
      assert.equal(path.dirname(path.dirname(info.executable)), path.dirname(path.dirname(EMPTY_VENV_PYTHON)));
    }
    assert.ok(info.version[0] === 3 && info.version[1] >= 10);
  });

  it('shows the root cause on the right line of a bundled multi-rank log, with the entry on hover', async function () {
    await vscode.commands.executeCommand('rootrank.trySample');
    const editor = await waitFor('the sample log editor', () =>
      vscode.window.visibleTextEditors.find((e) => e.document.uri.path.endsWith('/torchrun-8gpu-oom.log')),
    );
    const uri = editor.document.uri;
    const diagnostics = await waitFor('rootrank diagnostics on the sample', () => {
      const ds = rootrankDiagnostics(uri);
      return ds.some((d) => codeOf(d) === 'cuda-oom') ? ds : undefined;
    });
    const root = diagnostics.find((d) => codeOf(d) === 'cuda-oom')!;
    log(`diagnostics: ${diagnostics.map((d) => `${codeOf(d)}@${d.range.start.line + 1}`).join(', ')}`);
    assert.equal(root.range.start.line, 17, 'line 18 holds torch.OutOfMemoryError on rank 5');
    assert.equal(root.severity, vscode.DiagnosticSeverity.Error);
    assert.match(editor.document.lineAt(root.range.start.line).text, /torch\.OutOfMemoryError: CUDA out of memory/);
    const collateral = diagnostics.filter((d) => codeOf(d) === 'nccl-watchdog-timeout');
    assert.equal(collateral.length, 1, 'the watchdog timeouts are one collateral diagnostic');
    assert.match(collateral[0].message, /on 7 ranks \(0-4, 6, 7\): collateral of/);
    assert.equal(collateral[0].relatedInformation?.length, 8, "the root cause, then each rank's first line");

    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>(
      'vscode.executeHoverProvider',
      uri,
      new vscode.Position(root.range.start.line, root.range.start.character + 2),
    );
    const text = hoverText(hovers);
    log(`hover: ${text.slice(0, 160).replace(/\n/g, ' ')}`);
    assert.match(text, /CUDA out of memory in the caching allocator/);
    assert.match(text, /Verify/);

    // Try a Sample Log also opens the report: initiating rank 5, drawn with its timeline.
    const report = await waitFor('the report', () => api.lastReport());
    assert.equal(report.root_cause?.signature, 'cuda-oom');
    assert.equal(report.initiating_rank, 5);
    assert.match(api.lastReportHtml()!, /tl-mark tl-initiating/);
    await vscode.commands.executeCommand('workbench.action.closeSidebar');
    await vscode.commands.executeCommand('workbench.action.closePanel');
    await new Promise((r) => setTimeout(r, 1500));
    await shot('sample-log-and-report');
    await vscode.commands.executeCommand('workbench.action.focusFirstEditorGroup');
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    await new Promise((r) => setTimeout(r, 1500));
    await shot('report');
  });

  it('offers the quick fixes and applies the fix to a workspace file', async function () {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const uri = vscode.Uri.file(path.join(WORKSPACE, 'logs', 'ddp-2gpu.log'));
    const editor = await vscode.window.showTextDocument(uri);
    const root = await waitFor('the DDP diagnostic', () =>
      rootrankDiagnostics(uri).find((d) => codeOf(d) === 'e2e-ddp-unused-parameters-fix'),
    );
    assert.equal(root.range.start.line, 10, 'line 11 holds the RuntimeError on rank 1');
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>(
      'vscode.executeCodeActionProvider',
      uri,
      root.range,
      vscode.CodeActionKind.QuickFix.value,
    );
    const titles = actions.map((a) => a.title);
    log(`code actions: ${titles.join(' | ')}`);
    assert.ok(titles.some((t) => t.startsWith('Copy the verification command')));
    // the e2e signature's verify names its command whole (no blank to fill in): offered to run
    assert.ok(titles.includes('Run the verification command in a terminal'));
    assert.ok(titles.some((t) => t.startsWith('Open the full entry')));
    const fix = actions.find((a) => a.edit && a.title.includes('find_unused_parameters=True'));
    assert.ok(fix, `a quick fix with an edit among: ${titles.join(' | ')}`);
    // The UI path: the light bulb lists the same fixes (screenshot), then the edit is applied.
    editor.selection = new vscode.Selection(root.range.start, root.range.start);
    await vscode.commands.executeCommand('editor.action.quickFix');
    await new Promise((r) => setTimeout(r, 1500));
    await shot('quick-fixes');
    await vscode.commands.executeCommand('hideCodeActionWidget');
    assert.ok(await vscode.workspace.applyEdit(fix.edit!));
    const train = vscode.Uri.file(path.join(WORKSPACE, 'train.py'));
    const doc = await vscode.workspace.openTextDocument(train);
    assert.match(
      doc.getText(),
      /model = DistributedDataParallel\(model, device_ids=\[local_rank\], find_unused_parameters=True\)/,
    );
    await doc.save();
    assert.match(fs.readFileSync(train.fsPath, 'utf8'), /find_unused_parameters=True/);

    // Open the full entry: a client command the server's code action names.
    const entry = actions.find((a) => a.command?.command === 'rootrank.openEntry')!;
    await vscode.commands.executeCommand(entry.command!.command, ...(entry.command!.arguments ?? []));
    await waitFor('the entry page', () => (api.lastReportHtml()?.includes('class="report entry"') ? true : undefined));
  });

  it('Diagnose Selection on a selected traceback reports the initiating rank', async function () {
    const { lines, first } = await selectNotesTraceback();
    const before = api.lastReport();
    await vscode.commands.executeCommand('rootrank.diagnoseSelection');
    const report = await waitFor('a new report', () => (api.lastReport() !== before ? api.lastReport() : undefined));
    assert.equal(report.root_cause?.signature, 'cuda-oom');
    assert.equal(report.initiating_rank, 3);
    // The selection (notes.md lines 7-12) is diagnosed with the file's line numbers: its 5th
    // line, notes.md line 11, is the OutOfMemoryError, in the evidence, the reasoning and the link.
    assert.equal(first, 6);
    assert.match(lines[first + 4], /torch\.OutOfMemoryError/);
    const html = api.lastReportHtml()!;
    assert.match(html, /class="evidence-link" data-path="notes.md" data-line="11"/);
    assert.doesNotMatch(html, /data-path="notes\.md:7-12"|notes\.md:7-12:/);
  });

  it('notifies when a command fails in a bash terminal with a known failure', async function () {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    fs.copyFileSync(
      path.join(
        vscode.extensions.getExtension('rootrank.rootrank')!.extensionPath,
        'extension',
        'samples',
        'torchrun-8gpu-oom.log',
      ),
      path.join(WORKSPACE, 'logs', 'train-8gpu.log'),
    );
    const terminal = vscode.window.createTerminal({ name: 'e2e bash', shellPath: '/bin/bash', cwd: WORKSPACE });
    terminal.show();
    const integration = await waitFor('shell integration in bash', () => terminal.shellIntegration, 30_000);
    const count = api.notifications.length;
    integration.executeCommand('./failing-job.sh');
    const message = await waitFor('the failure notification', () => api.notifications[count], 45_000);
    log(`notification: ${message}`);
    assert.match(message, /CUDA out of memory in the caching allocator on rank 5/);
    await new Promise((r) => setTimeout(r, 1000));
    await shot('terminal-notification');

    // Diagnose Terminal Output with no selection (the terminal menu's entry then): the last
    // command's output, read through shell integration.
    const before = api.lastReport();
    await vscode.commands.executeCommand('rootrank.diagnoseLastCommand');
    const report = await waitFor('the terminal report', () =>
      api.lastReport() !== before ? api.lastReport() : undefined,
    );
    assert.equal(report.root_cause?.signature, 'cuda-oom');
    assert.equal(report.initiating_rank, 5);
    terminal.dispose();
  });

  it('Browse Failure Library lists the signatures and opens the picked entry', async function () {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const picked = vscode.commands.executeCommand<string | undefined>('rootrank.browseLibrary');
    await new Promise((r) => setTimeout(r, 2000)); // the quick pick fills from rootrank.signatures
    await shot('failure-library');
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
    const id = await picked;
    log(`picked: ${id}`);
    assert.ok(typeof id === 'string' && /^[a-z0-9-]+$/.test(id), `a signature id, got ${String(id)}`);
    const html = await waitFor('the entry page', () => {
      const h = api.lastReportHtml();
      return h?.includes('class="report entry"') && h.includes(id) ? h : undefined;
    });
    assert.match(html, /Verify/);
  });

  it('restarts a server that crashed, and diagnoses again', async function () {
    const pid = await waitFor('the server pid', () => api.server.pid());
    process.kill(pid, 'SIGKILL');
    const next = await waitFor('a restarted server', () => {
      const p = api.server.pid();
      return p !== undefined && p !== pid ? p : undefined;
    });
    log(`server ${pid} killed; restarted as ${next}`);
    await selectNotesTraceback();
    const before = api.lastReport();
    await vscode.commands.executeCommand('rootrank.diagnoseSelection');
    const report = await waitFor('a report from the new server', () =>
      api.lastReport() !== before ? api.lastReport() : undefined,
    );
    assert.equal(report.root_cause?.signature, 'cuda-oom');
    assert.equal(report.initiating_rank, 3);
  });
});
