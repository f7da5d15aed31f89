/**
 * The extension's settings (`rootrank.*` in package.json) and what goes to the server as
 * `initializationOptions` (names from `server/rootrank/lsp/settings.py`).
 */
import * as vscode from 'vscode';
import { CLIENT_COMMANDS } from './clientCommands';

/** Settings read by the extension. */
export interface ExtensionSettings {
  interpreter: string;
  signatureFolders: string[];
  mask: boolean;
  documentGlobs: string[];
  notifyOnFailure: boolean;
  maxOutputChars: number;
  terminalLinks: boolean;
}

/** The server's `initializationOptions` / `didChangeConfiguration` settings. */
export interface ServerSettings {
  signatureFolders: string[];
  mask: boolean;
  documentGlobs: string[];
  /** The commands of the server's code actions this extension implements (clientCommands.ts). */
  clientCommands: string[];
}

/** Read the current settings (for `resource`'s folder when given). */
export function readSettings(resource?: vscode.Uri): ExtensionSettings {
  const c = vscode.workspace.getConfiguration('rootrank', resource);
  return {
    interpreter: c.get<string>('interpreter', '').trim(),
    signatureFolders: c.get<string[]>('signatureFolders', []),
    mask: c.get<boolean>('mask', true),
    documentGlobs: c.get<string[]>('documentGlobs', []),
    notifyOnFailure: c.get<boolean>('terminal.notifyOnFailure', true),
    maxOutputChars: Math.max(10_000, c.get<number>('terminal.maxOutputChars', 2_000_000)),
    terminalLinks: c.get<boolean>('terminal.links', true),
  };
}

/** The part of the settings the server takes. */
export function serverSettings(s: ExtensionSettings): ServerSettings {
  return {
    signatureFolders: s.signatureFolders,
    mask: s.mask,
    documentGlobs: s.documentGlobs,
    clientCommands: [...CLIENT_COMMANDS],
  };
}

/** Settings whose change needs a server restart (the others are read when used). */
export const RESTART_SETTINGS = [
  'rootrank.interpreter',
  'rootrank.signatureFolders',
  'rootrank.mask',
  'rootrank.documentGlobs',
];
