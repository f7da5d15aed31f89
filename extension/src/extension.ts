/**
 * rootrank for VS Code: starts the bundled language server (diagnostics, hover and quick
 * fixes on log files) and adds what only an editor can do: diagnose a selection or a
 * terminal's output, notice failed commands, link failure lines in terminals, browse the
 * failure library, and show a report with a rank timeline.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { copyText, runInTerminal } from './actions';
import { COPY_VERIFY, OPEN_ENTRY, RUN_VERIFY } from './clientCommands';
import { LibraryCache, pickSignature } from './library';
import { info, outputChannel } from './log';
import { Diagnosis, headline, oneLineFix } from './report/diagnosis';
import { entryTitle, type Entry } from './report/html';
import { ReportPanel } from './report/panel';
import { ServerManager } from './server';
import { readSettings, RESTART_SETTINGS } from './settings';
import { linkSpan, matchLine } from './terminal/matchers';
import { CommandOutput, TerminalWatcher } from './terminal/watch';
import { LiveWatcher } from './liveWatch';

/** Where a diagnosed text came from, by the name given to the server. */
interface Source {
  uri: vscode.Uri;
  /** 0-based line of the document where the text starts. */
  lineOffset: number;
}

/** What `activate` returns: used by the end-to-end tests. */
export interface RootrankApi {
  server: ServerManager;
  watcher: TerminalWatcher;
  /** Live watching of running commands and log files (`rootrank watch`). */
  live: LiveWatcher;
  library: LibraryCache;
  /** Every failure notification shown, newest last. */
  notifications: string[];
  /** The last diagnosis shown in the report. */
  lastReport(): Diagnosis | undefined;
  /** The last page rendered (a report or an entry). */
  lastReportHtml(): string | undefined;
  /** The last library-entry page rendered. */
  lastEntryHtml(): string | undefined;
  /** The tooltips of the terminal links made, newest last. */
  terminalLinks: string[];
  /** Show a diagnosis in the report (as a diagnose command does). */
  showReport(d: Diagnosis): void;
}

let sequence = 0;

/** Activate: called once by VS Code. */
export async function activate(context: vscode.ExtensionContext): Promise<RootrankApi> {
  const channel = outputChannel();
  context.subscriptions.push(channel);
  info(
    `rootrank ${context.extension.packageJSON.version} activating (VS Code ${vscode.version}, ${vscode.env.uiKind === vscode.UIKind.Web ? 'web' : 'desktop'} UI)`,
  );
  const server = new ServerManager(context);
  const library = new LibraryCache(server);
  const sources = new Map<string, Source>();
  const notifications: string[] = [];
  context.subscriptions.push(server);

  const remember = (name: string, source: Source): string => {
    sources.set(name, source);
    if (sources.size > 200) {
      sources.delete(sources.keys().next().value as string);
    }
    return name;
  };

  const host = {
    extensionUri: context.extensionUri,
    openEntry: (id: string) => openEntry(id),
    runInTerminal: async (command: string) => {
      await runInTerminal(context, command);
    },
    resolveSource: (p: string) => sources.get(p),
  };

  const showReport = (d: Diagnosis): void => {
    ReportPanel.show(host, `rootrank: ${d.root_cause ? d.root_cause.title : 'no known failure'}`).showDiagnosis(d);
  };

  async function openEntry(id: string): Promise<void> {
    const entry = (await server.signature(id)) as Entry | null;
    if (!entry) {
      void vscode.window.showWarningMessage(`rootrank: no signature "${id}" in the library.`);
      return;
    }
    ReportPanel.showEntryPanel(host, entryTitle(entry)).showEntry(entry);
  }

  const diagnoseAndShow = async (text: string, name: string, firstLine = 1): Promise<Diagnosis | undefined> => {
    try {
      const d = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'rootrank: diagnosing' },
        () => server.diagnose(text, name, firstLine),
      );
      info(`Diagnosed ${name}: ${headline(d) ?? 'no known failure'}`);
      showReport(d);
      return d;
    } catch (e) {
      void vscode.window.showErrorMessage(`rootrank: ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    }
  };

  const diagnoseDocument = async (editor: vscode.TextEditor | undefined, selectionOnly: boolean) => {
    if (!editor) {
      void vscode.window.showInformationMessage('rootrank: open a log or select a traceback first.');
      return undefined;
    }
    const doc = editor.document;
    const base = path.basename(doc.uri.path) || 'untitled';
    const selection = editor.selection;
    if (selectionOnly && !selection.isEmpty) {
      const range = new vscode.Range(
        selection.start.line,
        0,
        selection.end.line,
        doc.lineAt(selection.end.line).text.length,
      );
      // The server counts the selection's lines from its first line in the file, so the
      // reasoning, the evidence and the JSON name the file's lines (`train.log:16`).
      const name = remember(base, { uri: doc.uri, lineOffset: 0 });
      return diagnoseAndShow(doc.getText(range), name, selection.start.line + 1);
    }
    const name = remember(base, { uri: doc.uri, lineOffset: 0 });
    return diagnoseAndShow(doc.getText(), name);
  };

  const live = new LiveWatcher(server, showReport, notifications);
  context.subscriptions.push(
    live,
    vscode.commands.registerCommand('rootrank.watchLogFile', (uri?: vscode.Uri) => live.watchFile(uri)),
    vscode.commands.registerCommand('rootrank.stopWatching', () => live.stopAll()),
    vscode.commands.registerCommand('rootrank.showLiveJob', () => live.showShown()),
  );

  const notifyFailure = (output: CommandOutput, d: Diagnosis, terminal: vscode.Terminal) => {
    const line = headline(d);
    if (!line || live.alreadyNotified(terminal, line)) {
      return; // the live watch named this failure while the command ran
    }
    // The answer first: what failed and where, then the one-line fix; the exit status last.
    const fix = oneLineFix(d);
    const message = `rootrank: ${line}.${fix ? ` Fix: ${fix}` : ''} (exit ${output.exitCode} in "${terminal.name}")`;
    notifications.push(message);
    const verify = d.root_cause?.verify;
    const buttons = verify ? ['Show Diagnosis', 'Copy Verify Command'] : ['Show Diagnosis'];
    void vscode.window.showInformationMessage(message, ...buttons).then((choice) => {
      if (choice === 'Show Diagnosis') {
        showReport(d);
      } else if (choice === 'Copy Verify Command' && verify) {
        void copyText(verify);
      }
    });
  };

  const watcher = new TerminalWatcher((text, name) => server.diagnose(text, name), notifyFailure);
  context.subscriptions.push(watcher);

  const terminalSelection = async (): Promise<string> => {
    // Terminal.selection is not stable API in 1.100: copy the selection and read the clipboard
    // (restored afterwards). A clipboard the browser refuses (web UI) counts as no selection.
    const withTimeout = <T>(p: Thenable<T>): Promise<T> =>
      Promise.race([
        Promise.resolve(p),
        new Promise<T>((_, reject) => setTimeout(() => reject(new Error('clipboard timeout')), 2000)),
      ]);
    try {
      const saved = await withTimeout(vscode.env.clipboard.readText());
      const marker = `rootrank-no-selection-${Date.now()}`;
      await withTimeout(vscode.env.clipboard.writeText(marker));
      await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
      const copied = await withTimeout(vscode.env.clipboard.readText());
      await withTimeout(vscode.env.clipboard.writeText(saved));
      return copied === marker ? '' : copied;
    } catch (e) {
      info(`Terminal selection unavailable: ${e instanceof Error ? e.message : String(e)}`);
      return '';
    }
  };

  // `readSelection`: false when the terminal has no selection (the `terminalTextSelected`
  // context), so VS Code does not warn "The terminal has no selection to copy".
  const diagnoseTerminal = async (terminal?: vscode.Terminal, preferLine?: string, readSelection = true) => {
    const active = terminal ?? vscode.window.activeTerminal;
    if (!active) {
      void vscode.window.showInformationMessage('rootrank: no terminal is open.');
      return undefined;
    }
    const selected = terminal || !readSelection ? '' : await terminalSelection();
    if (selected.trim()) {
      return diagnoseAndShow(selected, `terminal selection ${++sequence}`);
    }
    const last = watcher.lastOutput(active);
    if (last && (!preferLine || last.text.includes(preferLine.trim()))) {
      return diagnoseAndShow(last.text, `terminal: ${last.commandLine || active.name}`);
    }
    if (preferLine) {
      return diagnoseAndShow(preferLine, `terminal line ${++sequence}`);
    }
    void vscode.window.showInformationMessage(
      'rootrank: select text in the terminal, or run a command in a terminal with shell integration first.',
    );
    return undefined;
  };

  // Terminal links: each link diagnoses what it labels, so its tooltip is the diagnosis it
  // opens. The text diagnosed is the last command's output when the line is in it, else the
  // line alone; one server call per output (or line), cached.
  const terminalLinks: string[] = [];
  const outputDiagnoses = new WeakMap<CommandOutput, Promise<Diagnosis | undefined>>();
  const lineDiagnoses = new Map<string, Promise<Diagnosis | undefined>>();
  const quietly = (p: Promise<Diagnosis>): Promise<Diagnosis | undefined> => p.catch(() => undefined);
  const linkDiagnosis = (
    terminal: vscode.Terminal,
    line: string,
  ): { diagnosis: Promise<Diagnosis | undefined>; name: string } => {
    const last = watcher.lastOutput(terminal);
    if (last && last.text.includes(line.trim())) {
      const name = `terminal: ${last.commandLine || terminal.name}`;
      let p = outputDiagnoses.get(last);
      if (!p) {
        p = quietly(server.diagnose(last.text, name));
        outputDiagnoses.set(last, p);
      }
      return { diagnosis: p, name };
    }
    let p = lineDiagnoses.get(line);
    if (!p) {
      p = quietly(server.diagnose(line, `terminal line ${++sequence}`));
      lineDiagnoses.set(line, p);
      if (lineDiagnoses.size > 200) {
        lineDiagnoses.delete(lineDiagnoses.keys().next().value as string);
      }
    }
    return { diagnosis: p, name: 'terminal line' };
  };

  const trySample = async () => {
    const uri = vscode.Uri.joinPath(context.extensionUri, 'extension', 'samples', 'torchrun-8gpu-oom.log');
    const doc = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(doc, vscode.ViewColumn.One);
    return diagnoseDocument(editor, false);
  };

  context.subscriptions.push(
    vscode.commands.registerCommand('rootrank.diagnoseSelection', () =>
      diagnoseDocument(vscode.window.activeTextEditor, true),
    ),
    vscode.commands.registerCommand('rootrank.diagnoseFile', () =>
      diagnoseDocument(vscode.window.activeTextEditor, false),
    ),
    vscode.commands.registerCommand('rootrank.diagnoseTerminalOutput', () => diagnoseTerminal()),
    vscode.commands.registerCommand('rootrank.diagnoseLastCommand', () =>
      diagnoseTerminal(undefined, undefined, false),
    ),
    vscode.commands.registerCommand('rootrank.browseLibrary', async () => {
      const id = await pickSignature(library);
      if (id) {
        await openEntry(id);
      }
      return id;
    }),
    vscode.commands.registerCommand('rootrank.trySample', trySample),
    vscode.commands.registerCommand('rootrank.showOutput', () => channel.show(true)),
    vscode.commands.registerCommand('rootrank.restartServer', async () => {
      library.reset();
      await server.restart();
    }),
    // Client-side commands the server's code actions name (server/rootrank/lsp/actions.py); the
    // server offers them because serverSettings() lists them as clientCommands.
    vscode.commands.registerCommand(COPY_VERIFY, (command: string) => copyText(String(command ?? ''))),
    vscode.commands.registerCommand(RUN_VERIFY, (command: string) => runInTerminal(context, String(command ?? ''))),
    vscode.commands.registerCommand(OPEN_ENTRY, (id: string) => openEntry(String(id ?? ''))),
    vscode.window.registerTerminalLinkProvider({
      provideTerminalLinks: async (ctx: vscode.TerminalLinkContext) => {
        if (!readSettings().terminalLinks) {
          return [];
        }
        const match = matchLine(ctx.line, library.currentMatchers());
        if (!match) {
          return [];
        }
        const d = await linkDiagnosis(ctx.terminal, ctx.line).diagnosis;
        const label = d && headline(d);
        if (!d || !label) {
          return []; // the server explains nothing here: no link that would promise otherwise
        }
        // The span starts where the diagnosis's evidence on this line matched, at a word start.
        const onLine = [...(d.root_cause?.evidence ?? []), ...(d.findings ?? []).flatMap((f) => f.evidence ?? [])];
        const span = linkSpan(ctx.line, onLine, match);
        if (!span) {
          return [];
        }
        const tooltip = `rootrank: ${label}`;
        terminalLinks.push(tooltip);
        const link: vscode.TerminalLink & { diagnosis: Diagnosis } = {
          startIndex: span.start,
          length: span.length,
          tooltip,
          diagnosis: d,
        };
        return [link];
      },
      handleTerminalLink: (link: vscode.TerminalLink & { diagnosis: Diagnosis }) => {
        showReport(link.diagnosis);
      },
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_SETTINGS.some((s) => e.affectsConfiguration(s))) {
        info('Settings changed: restarting the server');
        library.reset();
        void server.restart().then(() => library.loadMatchers().catch(() => undefined));
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => info('Workspace trusted: Run in Terminal is enabled')),
  );

  void server.start().then((client) => {
    if (client) {
      library
        .loadMatchers()
        .catch((e) => info(`Terminal links unavailable: ${e instanceof Error ? e.message : String(e)}`));
    }
  });

  return {
    server,
    watcher,
    live,
    library,
    notifications,
    lastReport: () => ReportPanel.lastDiagnosis,
    lastReportHtml: () => ReportPanel.lastHtml,
    lastEntryHtml: () => ReportPanel.lastEntryHtml,
    terminalLinks,
    showReport,
  };
}

/** Deactivate: the client is stopped by the disposables. */
export function deactivate(): void {
  // Disposables registered on the context stop the server and the watchers.
}
