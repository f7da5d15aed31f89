/**
 * The failure library as the extension sees it: the list for Browse Failure Library, and
 * the literal matchers for terminal links (a signature's pattern literals are the keys
 * `rootrank.signatures` lists minus its tags and affected stacks, which `rootrank.signature`
 * returns).
 */
import * as vscode from 'vscode';
import { info } from './log';
import type { ServerManager, SignatureSummary } from './server';
import { buildMatchers, LiteralMatcher } from './terminal/matchers';

interface EntryTags {
  tags?: string[];
  affects?: string[];
  patterns?: unknown;
}

/** Caches the signature list and the link matchers; refreshed when the server (re)starts. */
export class LibraryCache {
  private list: Promise<SignatureSummary[]> | undefined;
  private matchers: LiteralMatcher[] = [];

  constructor(private readonly server: ServerManager) {}

  /** Forget everything (settings changed, server restarted). */
  reset(): void {
    this.list = undefined;
    this.matchers = [];
  }

  /** Every signature (cached). */
  signatures(): Promise<SignatureSummary[]> {
    if (!this.list) {
      this.list = this.server.signatures().catch((e) => {
        this.list = undefined;
        throw e;
      });
    }
    return this.list;
  }

  /** The current matchers (empty until {@link loadMatchers} has run). */
  currentMatchers(): LiteralMatcher[] {
    return this.matchers;
  }

  /** Build the terminal-link matchers in the background. */
  async loadMatchers(): Promise<void> {
    const list = await this.signatures();
    const withLiterals = await Promise.all(
      list.map(async (s) => {
        if (Array.isArray(s.literals) || Array.isArray(s.patterns)) {
          return s;
        }
        const keys = Array.isArray(s.keys) ? (s.keys as string[]) : [];
        let entry: EntryTags | null = null;
        try {
          entry = (await this.server.signature(s.id)) as EntryTags | null;
        } catch {
          entry = null;
        }
        const words = new Set([...(entry?.tags ?? []), ...(entry?.affects ?? [])]);
        return { ...s, literals: keys.filter((k) => !words.has(k)) };
      }),
    );
    this.matchers = buildMatchers(withLiterals);
    info(`Terminal links: ${this.matchers.length} literals from ${list.length} signatures`);
  }
}

/** Quick pick over every signature; resolves to the picked id. */
export async function pickSignature(cache: LibraryCache): Promise<string | undefined> {
  const quickPick = vscode.window.createQuickPick<vscode.QuickPickItem & { id: string }>();
  quickPick.title = 'rootrank: Failure Library';
  quickPick.placeholder = 'Search by title, failure class or error text';
  quickPick.matchOnDescription = true;
  quickPick.matchOnDetail = true;
  quickPick.busy = true;
  quickPick.show();
  try {
    const list = await cache.signatures();
    quickPick.items = list.map((s) => ({
      id: s.id,
      label: s.title,
      description: s.failure_class,
      detail: [s.id, ...((Array.isArray(s.keys) ? s.keys : []) as string[])].join(' · '),
    }));
  } catch (e) {
    quickPick.hide();
    void vscode.window.showErrorMessage(
      `rootrank: could not list the signatures: ${e instanceof Error ? e.message : String(e)}`,
    );
    return undefined;
  } finally {
    quickPick.busy = false;
  }
  return new Promise((resolve) => {
    quickPick.onDidAccept(() => {
      resolve(quickPick.selectedItems[0]?.id);
      quickPick.hide();
    });
    quickPick.onDidHide(() => {
      resolve(undefined);
      quickPick.dispose();
    });
  });
}
