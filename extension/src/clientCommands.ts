/**
 * The commands the server's code actions name but only this extension implements (copy or
 * run a verification command, open a library entry). The server offers an action with one of
 * them only to a client that lists it in `initializationOptions.clientCommands`
 * (`server/rootrank/lsp/actions.py`, `usable_commands`): another editor would send it back
 * to the server, which has no such command, and the action would do nothing.
 */

/** Copy a verification command (argument: the command text). */
export const COPY_VERIFY = 'rootrank.copyVerifyCommand';
/** Run a verification command in a terminal, after asking (argument: the command text). */
export const RUN_VERIFY = 'rootrank.runVerifyCommand';
/** Open a library entry in the report view (argument: the signature id). */
export const OPEN_ENTRY = 'rootrank.openEntry';

/** Every command above: registered in `activate` and sent to the server at start. */
export const CLIENT_COMMANDS: readonly string[] = [COPY_VERIFY, RUN_VERIFY, OPEN_ENTRY];
