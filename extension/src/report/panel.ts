/**
 * The report webviews: the diagnosis report and the library entry, each one panel reused,
 * opened beside the editor in one column. They show a diagnosis (`renderReportHtml`) or a
 * library entry (`renderEntryHtml`) and answer the page's
 * messages: open a log line or the user's traceback frame in the workspace, copy text, run a
 * command in a terminal (asks first, never in an untrusted workspace), open an entry.
 */
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Diagnosis } from './diagnosis';
import { bestFrameFile, frameFileName } from './frameFile';
import { Entry, entryTitle, renderEntryHtml, renderReportHtml, PageContext } from './html';

/** What the panel needs from the rest of the extension. */
export interface PanelHost {
  extensionUri: vscode.Uri;
  /** Fetch and show an entry by signature id. */
  openEntry(id: string): Promise<void>;
  /** Run a command in a terminal after the user agreed (see actions.ts). */
  runInTerminal(command: string): Promise<void>;
  /**
   * Where a `path` of the report is: the document a text was taken from and the 0-based
   * line the text started at (a selection's line 1 is its first line), or undefined.
   */
  resolveSource(p: string): { uri: vscode.Uri; lineOffset: number } | undefined;
}

type Message =
  | { type: 'open'; path: string; line: number }
  | { type: 'frame'; file: string; line: number }
  | { type: 'copy'; text: string }
  | { type: 'run'; command: string }
  | { type: 'entry'; id: string }
  | { type: 'external'; url: string }
  | { type: 'ready' };

/**
 * Where a report path reads as `file:line`: a diagnosed selection `notes.md:7-12` with its
 * line 5 is `notes.md:11`; other paths read as their base name and the line.
 */
export function locationLabel(resolve: PanelHost['resolveSource']): (p: string, line: number) => string {
  return (p, line) => {
    const source = resolve(p);
    if (source) {
      return `${path.basename(source.uri.path)}:${source.lineOffset + line}`;
    }
    return `${p.split(/[\\/]/).pop()}:${line}`;
  };
}

/**
 * A report panel. Two kinds, each one panel reused: the diagnosis report (`show`) and library
 * entries (`showEntryPanel`), so an entry opens in its own tab beside the diagnosis instead of
 * replacing it. Both stay in the column the report first opened in: a second diagnosis
 * reuses that column (no new editor column per report).
 */
export class ReportPanel {
  private static current: ReportPanel | undefined;
  private static entry: ReportPanel | undefined;
  /** The last diagnosis shown (tests read it). */
  static lastDiagnosis: Diagnosis | undefined;
  /** The last HTML rendered (tests read it). */
  static lastHtml: string | undefined;
  /** The last diagnosis report's HTML (tests read it). */
  static lastReportHtml: string | undefined;
  /** The last entry page's HTML (tests read it). */
  static lastEntryHtml: string | undefined;

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    private readonly host: PanelHost,
    private readonly kind: 'report' | 'entry',
  ) {
    panel.onDidDispose(() => {
      if (kind === 'report' && ReportPanel.current === this) {
        ReportPanel.current = undefined;
      }
      if (kind === 'entry' && ReportPanel.entry === this) {
        ReportPanel.entry = undefined;
      }
    });
    panel.webview.onDidReceiveMessage((m: Message) => this.onMessage(m));
  }

  /** The column a new panel opens in: the other panel's column, else beside the active editor. */
  private static column(): vscode.ViewColumn {
    return ReportPanel.current?.panel.viewColumn ?? ReportPanel.entry?.panel.viewColumn ?? vscode.ViewColumn.Beside;
  }

  private static create(host: PanelHost, title: string, kind: 'report' | 'entry'): ReportPanel {
    const media = vscode.Uri.joinPath(host.extensionUri, 'extension', 'media');
    const webviewDist = vscode.Uri.joinPath(host.extensionUri, 'dist', 'webview');
    const panel = vscode.window.createWebviewPanel(
      kind === 'report' ? 'rootrank.report' : 'rootrank.entry',
      title,
      { viewColumn: ReportPanel.column(), preserveFocus: false },
      { enableScripts: true, localResourceRoots: [media, webviewDist], retainContextWhenHidden: false },
    );
    panel.iconPath = vscode.Uri.joinPath(media, 'icon.svg');
    return new ReportPanel(panel, host, kind);
  }

  /** Show (or reuse, in its column) the diagnosis report panel. */
  static show(host: PanelHost, title: string): ReportPanel {
    if (ReportPanel.current) {
      ReportPanel.current.panel.title = title;
      ReportPanel.current.panel.reveal(ReportPanel.current.panel.viewColumn, false);
      return ReportPanel.current;
    }
    ReportPanel.current = ReportPanel.create(host, title, 'report');
    return ReportPanel.current;
  }

  /** Show (or reuse) the library-entry panel: its own tab, in the report's column. */
  static showEntryPanel(host: PanelHost, title: string): ReportPanel {
    if (ReportPanel.entry) {
      ReportPanel.entry.panel.title = title;
      ReportPanel.entry.panel.reveal(ReportPanel.entry.panel.viewColumn, false);
      return ReportPanel.entry;
    }
    ReportPanel.entry = ReportPanel.create(host, title, 'entry');
    return ReportPanel.entry;
  }

  /** Whether the report panel is open. */
  static isOpen(): boolean {
    return ReportPanel.current !== undefined;
  }

  private context(): PageContext {
    const webview = this.panel.webview;
    const media = vscode.Uri.joinPath(this.host.extensionUri, 'extension', 'media');
    const dist = vscode.Uri.joinPath(this.host.extensionUri, 'dist', 'webview');
    return {
      cspSource: webview.cspSource,
      nonce: randomBytes(16).toString('base64'),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'report.css')).toString(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'report.js')).toString(),
      chartsScriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'charts.js')).toString(),
      chartsStyleUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'charts.css')).toString(),
      canRun: vscode.workspace.isTrusted,
      location: locationLabel((p) => this.host.resolveSource(p)),
    };
  }

  /** Render a diagnosis. */
  showDiagnosis(d: Diagnosis): void {
    const html = renderReportHtml(d, this.context());
    ReportPanel.lastDiagnosis = d;
    ReportPanel.lastHtml = html;
    ReportPanel.lastReportHtml = html;
    this.panel.webview.html = html;
  }

  /** Render a library entry. */
  showEntry(e: Entry): void {
    const html = renderEntryHtml(e, this.context());
    ReportPanel.lastHtml = html;
    ReportPanel.lastEntryHtml = html;
    this.panel.title = entryTitle(e);
    this.panel.webview.html = html;
  }

  /** The panel's editor column (tests read it). */
  get viewColumn(): vscode.ViewColumn | undefined {
    return this.panel.viewColumn;
  }

  private async onMessage(m: Message): Promise<void> {
    switch (m.type) {
      case 'copy':
        await vscode.env.clipboard.writeText(m.text);
        vscode.window.setStatusBarMessage('rootrank: copied', 2000);
        return;
      case 'run':
        await this.host.runInTerminal(m.command);
        return;
      case 'entry':
        await this.host.openEntry(m.id);
        return;
      case 'open':
        await this.openLine(m.path, m.line);
        return;
      case 'frame':
        await this.openFrame(m.file, m.line);
        return;
      case 'external':
        // a reference the user clicked: only http(s) addresses, opened by the browser
        if (/^https?:\/\/[^\s"'<>]+$/.test(m.url)) {
          await vscode.env.openExternal(vscode.Uri.parse(m.url, true));
        }
        return;
      default:
        return;
    }
  }

  /**
   * Open the user's traceback frame (`file`, 1-based `line`) in the workspace file it names
   * (bestFrameFile over the workspace's files of that name; dependency and VCS folders left
   * out), or say that the workspace has no such file.
   */
  private async openFrame(file: string, line: number): Promise<void> {
    const name = frameFileName(file);
    const hits: vscode.Uri[] = [];
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      hits.push(
        ...(await vscode.workspace.findFiles(
          new vscode.RelativePattern(folder, `**/${name}`),
          '**/{node_modules,.git,.venv,venv,site-packages,__pycache__}/**',
          500,
        )),
      );
    }
    const best = bestFrameFile(
      file,
      hits.map((u) => u.fsPath),
    );
    if (!best) {
      void vscode.window.showWarningMessage(`rootrank: ${name} (${file}) is not in this workspace.`);
      return;
    }
    await this.showAt(vscode.Uri.file(best), Math.max(0, line - 1));
  }

  private async openLine(p: string, line: number): Promise<void> {
    const source =
      this.host.resolveSource(p) ?? (path.isAbsolute(p) ? { uri: vscode.Uri.file(p), lineOffset: 0 } : undefined);
    if (!source) {
      void vscode.window.showWarningMessage(`rootrank: ${p} is not a file that can be opened.`);
      return;
    }
    await this.showAt(source.uri, Math.max(0, source.lineOffset + line - 1));
  }

  /** Show `uri` at the 0-based `line` in the first editor group, never in the report's column. */
  private async showAt(uri: vscode.Uri, line: number): Promise<void> {
    const position = new vscode.Position(line, 0);
    const column = this.panel.viewColumn === vscode.ViewColumn.One ? vscode.ViewColumn.Two : vscode.ViewColumn.One;
    await vscode.window.showTextDocument(uri, {
      viewColumn: column,
      selection: new vscode.Range(position, position),
      preserveFocus: false,
    });
  }
}
