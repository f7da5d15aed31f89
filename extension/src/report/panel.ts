/**
 * The report webview: one panel, reused, opened beside the editor. It shows a diagnosis
 * (`renderReportHtml`) or a library entry (`renderEntryHtml`) and answers the page's
 * messages: open a log line, copy text, run a command in a terminal (asks first, never in
 * an untrusted workspace), open an entry.
 */
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Diagnosis } from './diagnosis';
import { Entry, renderEntryHtml, renderReportHtml, PageContext } from './html';

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
  | { type: 'copy'; text: string }
  | { type: 'run'; command: string }
  | { type: 'entry'; id: string }
  | { type: 'ready' };

/** The single report panel. */
export class ReportPanel {
  private static current: ReportPanel | undefined;
  /** The last diagnosis shown (tests read it). */
  static lastDiagnosis: Diagnosis | undefined;
  /** The last HTML rendered (tests read it). */
  static lastHtml: string | undefined;

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    private readonly host: PanelHost,
  ) {
    panel.onDidDispose(() => {
      if (ReportPanel.current === this) {
        ReportPanel.current = undefined;
      }
    });
    panel.webview.onDidReceiveMessage((m: Message) => this.onMessage(m));
  }

  /** Show (or reuse) the panel beside the active editor. */
  static show(host: PanelHost, title: string): ReportPanel {
    if (ReportPanel.current) {
      ReportPanel.current.panel.title = title;
      ReportPanel.current.panel.reveal(vscode.ViewColumn.Beside, false);
      return ReportPanel.current;
    }
    const media = vscode.Uri.joinPath(host.extensionUri, 'extension', 'media');
    const panel = vscode.window.createWebviewPanel(
      'rootrank.report',
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false },
      { enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: false },
    );
    panel.iconPath = vscode.Uri.joinPath(media, 'icon.svg');
    ReportPanel.current = new ReportPanel(panel, host);
    return ReportPanel.current;
  }

  /** Whether the report panel is open. */
  static isOpen(): boolean {
    return ReportPanel.current !== undefined;
  }

  private context(): PageContext {
    const webview = this.panel.webview;
    const media = vscode.Uri.joinPath(this.host.extensionUri, 'extension', 'media');
    return {
      cspSource: webview.cspSource,
      nonce: randomBytes(16).toString('base64'),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'report.css')).toString(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'report.js')).toString(),
      canRun: vscode.workspace.isTrusted,
    };
  }

  /** Render a diagnosis. */
  showDiagnosis(d: Diagnosis): void {
    const html = renderReportHtml(d, this.context());
    ReportPanel.lastDiagnosis = d;
    ReportPanel.lastHtml = html;
    this.panel.webview.html = html;
  }

  /** Render a library entry. */
  showEntry(e: Entry): void {
    const html = renderEntryHtml(e, this.context());
    ReportPanel.lastHtml = html;
    this.panel.title = `rootrank: ${e.title ?? e.id}`;
    this.panel.webview.html = html;
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
      default:
        return;
    }
  }

  private async openLine(p: string, line: number): Promise<void> {
    const source = this.host.resolveSource(p) ?? (path.isAbsolute(p) ? { uri: vscode.Uri.file(p), lineOffset: 0 } : undefined);
    if (!source) {
      void vscode.window.showWarningMessage(`rootrank: ${p} is not a file that can be opened.`);
      return;
    }
    const { uri } = source;
    const position = new vscode.Position(Math.max(0, source.lineOffset + line - 1), 0);
    await vscode.window.showTextDocument(uri, {
      viewColumn: vscode.ViewColumn.One,
      selection: new vscode.Range(position, position),
      preserveFocus: false,
    });
  }
}
