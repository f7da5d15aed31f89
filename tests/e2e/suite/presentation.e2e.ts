/**
 * What a person sees (issue 10), in the real VS Code of run.sh: the hover and the root-cause
 * diagnostic lead with the verdict; no raw `{placeholder}`, `None` or `rank ?` in a hover,
 * a diagnostic, the report or a library entry; the timeline's initiating mark on the named
 * rank's row, which is emphasised; no sideways scroll of the report at 540 px (measured in
 * the webview's DOM by the Playwright runner, `[e2e-probe]`); one report column after two
 * diagnoses; a library entry in its own tab; Diagnose Selection reads `file:line`.
 * Screenshots of each step: test-artifacts/e2e/*.png.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';

const WORKSPACE = vscode.workspace.workspaceFolders![0].uri.fsPath;
const ARTIFACTS = process.env.ROOTRANK_E2E_ARTIFACTS ?? path.join(WORKSPACE, '..', 'artifacts');

interface Api {
  lastReport(): { initiating_rank: number | null; root_cause: { signature: string; title: string } | null } | undefined;
  lastReportHtml(): string | undefined;
  lastEntryHtml(): string | undefined;
}

/** Raw text a person must never see: template syntax, Python's None, an unknown rank. */
const RAW = /\{[A-Za-z_][A-Za-z0-9_]*\}|\bNone\b|\brank \?|\brank None\b|\b\d+ lines? read\b.*\(s\)|:\d+-\d+:\d+/;

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

interface Probe {
  error?: string;
  innerWidth: number;
  pageScrollWidth: number;
  pageClientWidth: number;
  timelineScrollWidth: number | null;
  timelineClientWidth: number | null;
  initiatingRowRank: string | null;
  initiatingRowLabel: string | null;
  initiatingRowEmphasised: boolean;
  initiatingRowBackground: string | null;
  marksOutsideLane: number;
  collateralBorder: string | null;
  collateralBackground: string | null;
  bodyBackground: string;
  tip: { display: string; text: string; left: number; right: number; role: string } | null;
  firstHeading: string | null;
  bodyText: string;
}

/** Ask the Playwright runner to measure the report webview at `width` px (and screenshot it). */
async function probe(name: string, width: number, text = ''): Promise<Probe> {
  const file = path.join(ARTIFACTS, `${name}.json`);
  fs.rmSync(file, { force: true });
  console.log(`[e2e-probe] ${name} ${width}${text ? ` ${text.replace(/ /g, '_')}` : ''}`);
  const result = await waitFor(
    `probe ${name}`,
    () => (fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Probe) : undefined),
    40_000,
  );
  assert.equal(result.error, undefined, `probe ${name}: ${result.error}`);
  return result;
}

/** WCAG contrast ratio of two CSS `rgb(...)`/`rgba(...)` colours (1..21). */
function contrast(a: string, b: string): number {
  const lum = (css: string): number => {
    const [r, g, bl] = (css.match(/[\d.]+/g) ?? ['0', '0', '0']).slice(0, 3).map(Number);
    const lin = (c: number) => {
      const v = c / 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(bl);
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

function hoverText(hovers: vscode.Hover[]): string {
  return hovers
    .flatMap((h) => h.contents)
    .map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : ''))
    .join('\n');
}

/** The text of an HTML page as a person reads it (tags dropped, code blocks kept apart). */
function visibleText(html: string): { prose: string; code: string } {
  const code: string[] = [];
  const prose = html
    .replace(/<script[\s\S]*?<\/script>/g, '')
    .replace(/<pre>[\s\S]*?<\/pre>/g, (m) => {
      code.push(m);
      return ' ';
    })
    .replace(/<[^>]+>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
  return { prose, code: code.join('\n').replace(/<[^>]+>/g, ' ') };
}

/** Editor groups that hold a rootrank report or entry tab, and how many such tabs. */
function reportTabs(): { groups: number; reports: number; entries: number; allGroups: number } {
  let reports = 0;
  let entries = 0;
  let groups = 0;
  for (const group of vscode.window.tabGroups.all) {
    const here = group.tabs.filter(
      (t) => t.input instanceof vscode.TabInputWebview && /rootrank\.(report|entry)/.test(t.input.viewType),
    );
    if (here.length) {
      groups++;
    }
    for (const t of here) {
      if ((t.input as vscode.TabInputWebview).viewType.includes('rootrank.report')) {
        reports++;
      } else {
        entries++;
      }
    }
  }
  return { groups, reports, entries, allGroups: vscode.window.tabGroups.all.length };
}

describe('what a person sees (issue 10)', function () {
  let api: Api;

  before(async function () {
    api = await vscode.extensions.getExtension<Api>('rootrank.rootrank')!.activate();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('workbench.action.closeSidebar');
    await vscode.commands.executeCommand('workbench.action.closePanel');
  });

  it('hover and diagnostic lead with the verdict; no raw placeholder, None or ? anywhere', async function () {
    await vscode.commands.executeCommand('rootrank.trySample');
    const editor = await waitFor('the sample log editor', () =>
      vscode.window.visibleTextEditors.find((e) => e.document.uri.path.endsWith('/torchrun-8gpu-oom.log')),
    );
    const uri = editor.document.uri;
    const diagnostics = await waitFor('rootrank diagnostics', () => {
      const ds = vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'rootrank');
      // One diagnostic for the root cause and one per collateral signature (each groups its
      // ranks): cuda-oom, the watchdog timeouts, the async teardown, the agent's SIGTERM, the
      // child failure.
      return ds.length >= 5 ? ds : undefined;
    });
    assert.equal(diagnostics.length, 5, 'the root cause and four collateral groups');
    const root = diagnostics.find((d) => d.severity === vscode.DiagnosticSeverity.Error)!;
    const [first, fix, verify] = root.message.split('\n');
    assert.equal(first, 'Root cause: CUDA out of memory in the caching allocator (rank 5, host host-1)');
    // The fix names the user's own line first, then the step the log selects (fragmentation).
    assert.match(fix, /^Fix: model\.py:97 \(in forward\), where rank 5 raised OutOfMemoryError: /);
    assert.match(verify, /^Verify: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nproc-per-node=/);
    const problems = diagnostics.flatMap((d) => [d.message, ...(d.relatedInformation ?? []).map((r) => r.message)]);
    const raw = problems.filter((m) => RAW.test(m));
    assert.deepEqual(raw, [], 'no raw text in Problems');

    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>(
      'vscode.executeHoverProvider',
      uri,
      new vscode.Position(root.range.start.line, root.range.start.character + 2),
    );
    const text = hoverText(hovers);
    const lines = text.split('\n');
    log(`hover starts: ${lines.slice(0, 9).join(' | ')}`);
    assert.equal(lines[0], '### CUDA out of memory in the caching allocator');
    assert.match(lines[2], /^\*\*Root cause\*\* \(confidence 0\.\d\d\) — rank \*\*5\*\*, host \*\*host-1\*\*/);
    assert.match(lines[4], /^\*\*Fix:\*\* model\.py:97 \(in forward\), where rank 5 raised OutOfMemoryError/);
    assert.deepEqual(lines.slice(6, 8), ['#### Verify', '```sh']);
    assert.ok(text.indexOf('#### What happened') > text.indexOf('#### Verify'), 'details after the verdict');
    assert.doesNotMatch(text, RAW);
    // Every hover on a rootrank line (collateral, rankless) is free of raw text too.
    for (const d of diagnostics) {
      const h = hoverText(
        await vscode.commands.executeCommand<vscode.Hover[]>(
          'vscode.executeHoverProvider',
          uri,
          d.range.start.translate(0, 1),
        ),
      );
      assert.doesNotMatch(h.split('```')[0], RAW, `hover at line ${d.range.start.line + 1}`);
    }
    // The real hover widget, for the record.
    await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, preserveFocus: false });
    editor.selection = new vscode.Selection(root.range.start.translate(0, 2), root.range.start.translate(0, 2));
    await vscode.commands.executeCommand('editor.action.showHover');
    await new Promise((r) => setTimeout(r, 1500));
    await shot('hover-verdict');
    await vscode.commands.executeCommand('editor.action.hideHover').then(undefined, () => undefined);

    const html = await waitFor('the report', () => api.lastReportHtml());
    const { prose } = visibleText(html.slice(html.indexOf('<main')));
    assert.doesNotMatch(prose, RAW, 'report prose');
    assert.match(
      prose.trimStart(),
      /^Root cause\s+CUDA out of memory in the caching allocator\s+on\s+rank 5\s+· host\s+host-1/,
    );
  });

  it("timeline: initiating mark on rank 5's emphasised row, no sideways scroll at 540 px, HTML tooltip on focus", async function () {
    // The report alone in the editor area (the probe sizes the window around it).
    await vscode.commands.executeCommand('workbench.action.focusSecondEditorGroup');
    await vscode.commands.executeCommand('workbench.action.closeEditorsInOtherGroups');
    const tabs = reportTabs();
    log(`tabs: ${JSON.stringify(tabs)}`);
    const p = await probe('report-540', 540);
    log(
      `probe: webview ${p.innerWidth} px, page ${p.pageScrollWidth}/${p.pageClientWidth}, timeline ${p.timelineScrollWidth}/${p.timelineClientWidth}, row ${p.initiatingRowLabel}`,
    );
    assert.ok(Math.abs(p.innerWidth - 540) <= 40, `webview about 540 px wide, got ${p.innerWidth}`);
    assert.ok(
      p.pageScrollWidth <= p.pageClientWidth,
      `no horizontal scroll: ${p.pageScrollWidth} > ${p.pageClientWidth}`,
    );
    assert.ok(p.timelineScrollWidth! <= p.timelineClientWidth!, 'the timeline fits its column');
    assert.equal(p.marksOutsideLane, 0, 'every mark is drawn inside its lane');
    assert.equal(p.initiatingRowRank, '5');
    assert.equal(p.initiatingRowLabel, 'rank 5');
    assert.ok(p.initiatingRowEmphasised);
    assert.notEqual(p.initiatingRowBackground, 'rgba(0, 0, 0, 0)', 'the row has a highlight background');
    assert.ok(
      p.tip && p.tip.display === 'block' && p.tip.role === 'tooltip',
      'an HTML tooltip shows on keyboard focus',
    );
    assert.match(p.tip!.text, /CUDA out of memory in the caching allocator\s+Initiating event · rank 5/);
    assert.ok(
      p.tip!.left >= 0 && p.tip!.right <= p.innerWidth + 1,
      `tooltip inside the page: ${p.tip!.left}..${p.tip!.right}`,
    );
    const dark = contrast(p.collateralBorder!, p.bodyBackground);
    log(`collateral mark contrast (dark theme): ${dark.toFixed(1)}:1`);
    assert.ok(dark >= 3, `collateral marks legible on the dark theme: ${dark.toFixed(1)}:1`);
    // The same report in a light theme.
    const config = vscode.workspace.getConfiguration('workbench');
    await config.update('colorTheme', 'Default Light Modern', vscode.ConfigurationTarget.Global);
    try {
      await new Promise((r) => setTimeout(r, 1500));
      const light = await probe('report-540-light', 540);
      const ratio = contrast(light.collateralBorder!, light.bodyBackground);
      log(
        `collateral mark contrast (light theme): ${ratio.toFixed(1)}:1 (${light.collateralBorder} on ${light.bodyBackground})`,
      );
      assert.notEqual(light.bodyBackground, p.bodyBackground, 'the theme changed');
      assert.ok(ratio >= 3, `collateral marks legible on the light theme: ${ratio.toFixed(1)}:1`);
      assert.equal(light.initiatingRowRank, '5');
    } finally {
      await config.update('colorTheme', undefined, vscode.ConfigurationTarget.Global);
    }
    assert.equal(p.firstHeading, 'CUDA out of memory in the caching allocator');
    assert.doesNotMatch(p.bodyText, RAW);
  });

  it('Diagnose Selection: file:line locations, not collateral of itself, one report column after two diagnoses', async function () {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('rootrank.trySample');
    await waitFor('the first report', () => api.lastReport()?.root_cause?.signature === 'cuda-oom');
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(path.join(WORKSPACE, 'notes.md')), {
      viewColumn: vscode.ViewColumn.One,
    });
    const lines = editor.document.getText().split('\n');
    const first = lines.findIndex((l) => l.startsWith('[rank2]: step 912'));
    const last = lines.findIndex((l) => l.includes('Watchdog caught collective operation timeout'));
    editor.selection = new vscode.Selection(first, 0, last, lines[last].length);
    const before = api.lastReport();
    await vscode.commands.executeCommand('rootrank.diagnoseSelection');
    const report = await waitFor('the selection report', () =>
      api.lastReport() !== before ? api.lastReport() : undefined,
    );
    assert.equal(report.initiating_rank, 3);
    const html = api.lastReportHtml()!;
    // notes.md line 11 holds the OutOfMemoryError (the selection's 5th line).
    assert.match(html, />notes\.md:11<\/a>/);
    assert.doesNotMatch(visibleText(html).prose, /notes\.md:\d+-\d+/, 'no "notes.md:7-12:5" style location');
    const collateral = html.slice(html.indexOf('id="h-coll"'), html.indexOf('</table>'));
    assert.doesNotMatch(
      collateral,
      /OutOfMemoryError|CUDA out of memory|data-line="5"/,
      'the selected error is not its own collateral',
    );
    await new Promise((r) => setTimeout(r, 1000));
    const tabs = reportTabs();
    log(`after two diagnoses: ${JSON.stringify(tabs)}`);
    assert.equal(tabs.reports, 1, 'one report tab');
    assert.equal(tabs.groups, 1, 'in one column');
    assert.ok(tabs.allGroups <= 2, `two columns at most (editor + report), got ${tabs.allGroups}`);
    await probe('selection-report', 0, 'notes.md:11');
  });

  it('a library entry opens in its own tab, with placeholders as words', async function () {
    const before = api.lastReport();
    await vscode.commands.executeCommand('rootrank.openEntry', 'nccl-watchdog-timeout');
    const html = await waitFor('the entry page', () =>
      api.lastEntryHtml()?.includes('nccl-watchdog-timeout') ? api.lastEntryHtml() : undefined,
    );
    const { prose, code } = visibleText(html!);
    assert.doesNotMatch(prose, RAW, 'entry prose');
    assert.doesNotMatch(code, /\{[A-Za-z_]\w*\}/, 'entry code has blanks, not template syntax');
    assert.match(
      prose,
      /A collective \(SeqNum N, its OpType\) did not complete within the process-group timeout \(N ms\)/,
    );
    const tabs = await waitFor('the entry tab', () => (reportTabs().entries > 0 ? reportTabs() : undefined), 10_000);
    log(`with an entry: ${JSON.stringify(tabs)}`);
    assert.equal(tabs.reports, 1, 'the diagnosis is still open');
    assert.equal(tabs.entries, 1, 'the entry has its own tab');
    assert.equal(tabs.groups, 1, 'beside it, in the same column');
    assert.equal(api.lastReport(), before, 'the diagnosis was not replaced');
    await probe('library-entry-tab', 0, 'SeqNum N');
  });
});

describe('training curves in the report (metrics of the contract)', function () {
  it('draws one uPlot chart per metric from the bundled script, fitting 540 px, onsets listed with their line', async function () {
    const api = await vscode.extensions
      .getExtension<Api & { showReport(d: unknown): void }>('rootrank.rootrank')!
      .activate();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('rootrank.trySample');
    const base = await waitFor('the sample report', () =>
      api.lastReport()?.root_cause?.signature === 'cuda-oom' ? api.lastReport() : undefined,
    );
    // The sample's own progress lines (rank 0: steps 4100, 4110, 4119; loss and lr), as the
    // engine's `metrics` writes them, plus a second rank whose loss turns NaN at step 4119.
    const d = {
      ...base,
      metrics: [
        {
          name: 'loss',
          rank: 0,
          points: [
            [4100, 2.3198],
            [4110, 2.316],
            [4119, 2.3141],
          ],
          onsets: [],
        },
        {
          name: 'loss',
          rank: 5,
          points: [
            [4100, 2.3201],
            [4110, 2.3302],
            [4119, 'nan'],
          ],
          onsets: [
            {
              kind: 'nan',
              step: 4119,
              rank: 5,
              line: 18,
              path: (base as unknown as { sources: string[] }).sources[0],
              why: 'loss became NaN',
            },
          ],
        },
        {
          name: 'lr',
          rank: 0,
          points: [
            [4100, 0.00029],
            [4110, 0.00029],
            [4119, 0.00029],
          ],
          onsets: [],
        },
      ],
    };
    api.showReport(d);
    await vscode.commands.executeCommand('workbench.action.focusSecondEditorGroup');
    await vscode.commands.executeCommand('workbench.action.closeEditorsInOtherGroups');
    const p = (await probe('report-curves-540', 540)) as Probe & {
      charts: Array<{ metric: string; canvases: number; width: number; label: string }>;
    };
    log(`charts: ${JSON.stringify(p.charts)}`);
    assert.deepEqual(
      p.charts.map((c) => c.metric),
      ['loss', 'lr'],
    );
    assert.ok(
      p.charts.every((c) => c.canvases >= 1),
      'uPlot drew a canvas for each chart',
    );
    assert.ok(
      p.charts.every((c) => c.width > 300 && c.width <= p.innerWidth),
      'charts fit the column',
    );
    assert.match(p.charts[0].label, /^loss against step, rank 0; rank 5; onset at step 4119/);
    assert.ok(p.pageScrollWidth <= p.pageClientWidth, 'no horizontal scroll with the charts');
    assert.match(p.bodyText, /nan at step 4119 on rank 5: loss became NaN torchrun-8gpu-oom\.log:18/);
  });
});
