"""The rootrank language server: LSP wiring only (pygls 2, ``from lsprotocol import types``).

Handlers are named after the LSP method they serve and take the server as ``ls`` (as in
pygls' ``examples/servers``). Matching is the engine's (:mod:`rootrank.engine`, run in
child processes by :mod:`.worker`); this module turns documents into engine calls and
engine results into LSP messages.

Commands served (``workspace/executeCommand``):

- ``rootrank.diagnose`` ``{text, name?, firstLine?}`` -> the ``rootrank.diagnosis/1`` dict,
  exactly as ``rootrank diagnose --format json`` prints it for the same text; ``firstLine``
  (1-based, default 1) is the line of ``name`` the text starts at (a selection of that
  file), so every line the diagnosis names is the file's;
- ``rootrank.signature`` ``id`` -> the signature's entry (``Signature.to_entry()``), or null;
- ``rootrank.signatures`` -> ``[{id, title, failure_class, category, keys}]``;
- ``rootrank.failureClasses`` -> ``[{slug, description}]`` (the taxonomy);
- ``rootrank.showLocation`` ``uri, range`` -> asks the client to show it (``window/showDocument``).

Code actions may also name client-side commands (copy/run the verification command, open
the entry); they are offered only to a client that lists them in
``initializationOptions.clientCommands`` (the VS Code extension), and ``showLocation`` only
to a client that supports ``window/showDocument`` (:func:`.actions.usable_commands`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import re
import sys
import threading
from typing import Any, BinaryIO, cast

import attrs
from cattrs import ClassValidationError, transform_error
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from rootrank import __version__, re_code
from rootrank.signatures import Library, SignatureError, load_library
from rootrank.taxonomy import failure_classes

from .actions import SHOW_LOCATION, code_actions, quickfixes, usable_commands
from .analysis import DEBOUNCE_SECONDS, Analyser
from .documents import DocumentStore, LogDocument, is_log_document
from .framing import FramedReader
from .hover import hover_markdown
from .positions import normalise_encoding, to_client_units
from .settings import Settings, client_commands
from .worker import EngineError, EnginePool

#: Most ``window/showMessage`` notices sent for one load of the signature folders.
MAX_PROBLEM_MESSAGES = 5
#: Seconds the process may take to end once the client is gone.
EXIT_GRACE_SECONDS = 3.0
#: Longest a hover waits for a diagnosis going on before it answers "diagnosing…", in
#: seconds (VS Code shows "Loading…" meanwhile; a small log's run usually ends within it).
HOVER_WAIT_SECONDS = 1.0
#: Most characters ``rootrank.diagnose`` accepts (a terminal selection, not a whole disk).
MAX_DIAGNOSE_CHARS = 256 * 1024 * 1024


logger = logging.getLogger(__name__)


def _validation_problems(exc: BaseException) -> str:
    """What is wrong with a message's params, from cattrs' validation error behind pygls'
    exception ("missing required field @ $.params.range"), at most three of them."""
    cause = exc.__cause__
    if isinstance(cause, ClassValidationError):
        problems = [_lsp_names(p) for p in transform_error(cause, path="$")]
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return "; ".join(problems[:3]) + more
    return "the params do not fit the method's type"


_PATH_FIELD = re_code.compile(r"(?<=\.)[a-z][a-z0-9_]*")


def _lsp_names(problem: str) -> str:
    """cattrs names a field by its Python attribute (``$.params.text_document.uri``); a
    client sent, and the LSP specification names, the JSON field (``$.params.textDocument.uri``).
    The renaming is lsprotocol's own (``_to_camel_case`` in ``lsprotocol/_hooks.py``: a
    trailing ``_`` dropped, then snake_case to camelCase: ``from_`` is ``from``)."""
    head, sep, path = problem.rpartition(" @ ")
    if not sep:
        return problem

    def camel(m: re.Match[str]) -> str:
        parts = m[0].removesuffix("_").split("_")
        return parts[0] + "".join(p.title() for p in parts[1:])

    return head + sep + _PATH_FIELD.sub(camel, path)


def _is_id(value: Any) -> bool:
    """Whether ``value`` is a request id LSP allows (``integer | string``)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


@attrs.define
class Rejected:
    """A message answered with an error and handed to no handler: ``id`` is the request's,
    or ``None`` when it cannot be known (sent as ``"id": null``, JSON-RPC 2.0 section 5)."""

    id: int | str | None
    error: types.ResponseError


#: What :meth:`RootrankProtocol.structure_message` returns for a notification whose params do
#: not fit its method's type (logged in one line; a notification is never answered).
DROPPED = object()


class OneLineLog(logging.Filter):
    """Makes every record one line on stderr (an editor's output channel shows the server's
    stderr): a traceback becomes ``message: ExceptionType: first line of the exception``.

    pygls logs each malformed message with a full traceback (``Unable to deserialize
    message`` with cattrs' exception group; ``Unable to handle message`` for content that is
    no JSON); the server answers both itself and logs the answer in one line
    (:meth:`RootrankProtocol.reject`, the ``dropped notification`` line), so pygls' own
    record of them is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        if record.name.startswith("pygls.") and message.startswith("Unable to deserialize message"):
            return False  # structure_message answers or drops it, in one line of its own
        if message.startswith("Unable to handle message") and isinstance(
            exc, (json.JSONDecodeError, UnicodeDecodeError, RecursionError)
        ):
            return False  # answered as a Parse error by _message_error, which logs that
        first = message.split("\n", 1)[0]
        if exc is not None:
            detail = str(exc).split("\n", 1)[0]
            first += f": {type(exc).__name__}" + (f": {detail}" if detail else "")
        record.msg, record.args = first, ()
        record.exc_info = record.exc_text = record.stack_info = None
        return True


def _error(exc_type: type[JsonRpcException], detail: str) -> types.ResponseError:
    return types.ResponseError(code=exc_type.CODE, message=f"{exc_type.MESSAGE}: {detail}")


class RootrankProtocol(LanguageServerProtocol):
    """pygls' protocol with a cheaper document store, cancellable commands, and an answer
    for every request, as JSON-RPC 2.0 and the LSP base protocol ask:

    - ``didOpen``/``didChange``/``didClose`` go to :class:`DocumentStore` (line lists;
      an edit splices only its lines) instead of pygls' ``Workspace``, whose documents
      re-split their whole text on every incremental change.
    - ``workspace/executeCommand`` runs as a coroutine keyed by the request id, so a
      client's ``$/cancelRequest`` cancels a running ``rootrank.diagnose``.
    - content that is not JSON: Parse error (-32700, ``id: null``), see :meth:`parse_error`;
      JSON that is no request object: Invalid Request (-32600, with the id when it has a
      usable one); a request after ``shutdown``: Invalid Request (LSP ``shutdown``);
      a request for a method nobody serves, with or without params: Method not found
      (-32601; pygls' generic request type wants params); params that do not fit the
      method's type: Invalid Params (-32602). Unknown notifications are logged, not
      answered (notifications never are).
    """

    _server: RootrankServer

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        # lsprotocol drops an optional field that is None, but an error response's id is
        # required: null when the request's id could not be read (JSON-RPC 2.0 section 5).
        converter.register_unstructure_hook(
            types.ResponseErrorMessage,
            lambda m: {
                "jsonrpc": m.jsonrpc,
                "id": m.id,
                "error": converter.unstructure(m.error),
            },
        )
        # A client that answers window/showDocument with a result that is no
        # ShowDocumentResult (``null``, seen from a hand-written client) would fail to
        # deserialize, leave the server's pending request unresolved and so the
        # rootrank.showLocation command that asked unanswered: such a reply reads as
        # ``success: false`` (the document was not shown), and the command answers ``false``.
        converter.register_structure_hook(types.ShowDocumentResponse, _show_document_response)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Any:
        self._server.documents.put(LogDocument.open(params.text_document))
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        document = self._server.documents.get(params.text_document.uri)
        if document is not None:
            encoding = normalise_encoding(self.workspace.position_encoding)
            for change in params.content_changes:
                document.apply(change, encoding)
            document.version = params.text_document.version
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Any:
        self._server.documents.remove(params.text_document.uri)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    def reject(self, msg_id: int | str | None, error: types.ResponseError) -> None:
        """Send ``error`` as the response to ``msg_id`` (``None``: ``"id": null``)."""
        logger.warning("answering %r with error %s: %s", msg_id, error.code, error.message)
        self._send_response(msg_id, None, error)  # type: ignore[arg-type]  # (null id)

    def parse_error(self, detail: str) -> None:
        """Answer content that is not JSON (Parse error, -32700, ``id: null``)."""
        self.reject(None, _error(JsonRpcParseError, detail))

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls' parsing of one JSON object (called for every object in a message, the
        message itself last), plus the checks that decide an answer before any handler:
        a message whose ``method`` is not a string, whose ``id`` is neither an integer nor
        a string, or whose ``jsonrpc`` is not ``"2.0"`` becomes a :class:`Rejected`
        Invalid Request; a request whose params do not fit its method's type a
        :class:`Rejected` Invalid Params naming the field (pygls raises while parsing,
        before the request has a handler, so nobody would answer it). A malformed
        notification needs no answer: it is logged and dropped, as in pygls."""
        if "jsonrpc" not in data or "method" not in data:
            return super().structure_message(data)  # an inner object, or a response
        method, is_request = data["method"], "id" in data
        msg_id = data.get("id") if is_request and _is_id(data.get("id")) else None
        if is_request and msg_id is None:
            return Rejected(
                None, _error(JsonRpcInvalidRequest, "id must be an integer or a string")
            )
        if not isinstance(method, str):
            return Rejected(msg_id, _error(JsonRpcInvalidRequest, "method must be a string"))
        if data["jsonrpc"] != JsonRPCProtocol.VERSION:
            if not is_request:
                return super().structure_message(data)  # pygls logs and drops it
            return Rejected(msg_id, _error(JsonRpcInvalidRequest, 'jsonrpc must be "2.0"'))
        kind = self.get_message_type(method)
        if is_request and kind is not None and kind.__name__.endswith("Notification"):
            # an id makes it a request, and every request gets an answer (JSON-RPC 2.0)
            return Rejected(
                msg_id,
                _error(JsonRpcInvalidRequest, f"{method} is a notification: send it without an id"),
            )
        if "params" not in data and kind is None:
            data = {**data, "params": None}  # JSON-RPC: params may be omitted
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not is_request:
                logger.warning("dropped notification %s: %s", method, _validation_problems(exc))
                return DROPPED
            return Rejected(
                msg_id, _error(JsonRpcInvalidParams, f"{method}: {_validation_problems(exc)}")
            )

    def handle_message(self, message: Any) -> None:
        """pygls' dispatch, after answering what :meth:`structure_message` rejected, JSON
        that is no JSON-RPC object (an array is a batch, which LSP does not use), and a
        request that arrives after ``shutdown``."""
        if isinstance(message, Rejected):
            self.reject(message.id, message.error)
            return
        if message is DROPPED:
            return
        if not hasattr(message, "jsonrpc"):
            if isinstance(message, list):
                why = "a batch (an array); LSP sends one message at a time"
            else:
                why = 'not a JSON-RPC 2.0 message object (it needs "jsonrpc": "2.0")'
            maybe_id = message.get("id") if isinstance(message, dict) else None
            self.reject(
                maybe_id if _is_id(maybe_id) and "method" in message else None,
                _error(JsonRpcInvalidRequest, why),
            )
            return
        if self._shutdown and isinstance(message, RPCRequest):
            self.reject(message.id, _error(JsonRpcInvalidRequest, "the server is shut down"))
            return
        super().handle_message(message)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    async def lsp_workspace__execute_command(  # type: ignore[override]
        self, params: types.ExecuteCommandParams
    ) -> Any:
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams.of(
                ValueError(f"Command name {params.command!r} is not defined")
            )
        result = handler(*(params.arguments or []))
        if inspect.isawaitable(result):
            result = await result
        return result


def _show_document_response(data: Any, _type: Any) -> types.ShowDocumentResponse:
    """Structure a ``window/showDocument`` response whatever its ``result`` holds: a
    ``{"success": bool}`` object gives that success, anything else (``null``, a bare
    ``true``, a missing field) ``success=False``."""
    result = data.get("result") if isinstance(data, dict) else None
    success = isinstance(result, dict) and result.get("success") is True
    return types.ShowDocumentResponse(
        id=data.get("id") if isinstance(data, dict) else 0,
        result=types.ShowDocumentResult(success=success),
    )


class RootrankServer(LanguageServer):
    """The server object handed to every handler as ``ls``.

    Attributes:
        documents: the open documents.
        settings: current settings (:class:`Settings`).
        library: the signatures in use (built-in + ``settings.signature_folders``).
        generation: bumped whenever the library is reloaded (tells the engine processes).
        pool: the engine processes.
        analyser: per-document scheduling and results.
        commands: the commands this client can carry out, which code actions may name
            (:func:`.actions.usable_commands`; set at ``initialize``).
    """

    def __init__(self) -> None:
        super().__init__(
            "rootrank",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=RootrankProtocol,
        )
        self.documents = DocumentStore()
        self.settings = Settings()
        self.library: Library = Library(signatures={})
        self.generation = 0
        self.pool = EnginePool()
        self.analyser = Analyser(self)
        self.commands: frozenset[str] = frozenset()

    # ---------------------------------------------------------------- helpers
    def log(self, level: types.MessageType, message: str) -> None:
        """Send ``window/logMessage`` (the server never prints: stdout is the protocol)."""
        self.window_log_message(types.LogMessageParams(type=level, message=message))

    def is_diagnosed(self, document: LogDocument) -> bool:
        """Whether ``document`` is a log this server diagnoses (see :func:`is_log_document`)."""
        return is_log_document(document.uri, document.language_id, self.settings.document_globs)

    def workspace_roots(self) -> list[str]:
        """Local paths of the workspace folders (the root URI when there are none)."""
        try:
            folders = list(self.workspace.folders.values())
            root_uri = self.workspace.root_uri
        except RuntimeError:
            return []
        paths = [to_fs_path(f.uri) for f in folders]
        if not paths and root_uri:
            paths = [to_fs_path(root_uri)]
        return [p for p in paths if p]

    def load_signatures(self) -> list[str]:
        """(Re)load the library with the extra folders; returns the problems found."""
        problems: list[str] = []
        try:
            library = load_library(list(self.settings.signature_folders), strict=False)
        except SignatureError as exc:  # a broken built-in file: keep serving, say so
            problems.append(f"rootrank: built-in signatures failed to load: {exc}")
            library = Library(signatures={})
        by_file: dict[str, list[SignatureError]] = {}
        for err in library.problems:  # one message per skipped file, however many fields are wrong
            by_file.setdefault(err.path, []).append(err)
        for errs in by_file.values():
            more = f" (and {len(errs) - 1} more problem(s) in this file)" if len(errs) > 1 else ""
            problems.append(f"rootrank: signature file skipped: {errs[0]}{more}")
        for signature in library.signatures.values():
            problems += [f"rootrank: signature file skipped: {p}" for p in quickfixes(signature)[1]]
        self.library = library
        self.generation += 1
        return problems

    def show_problems(self, problems: list[str]) -> None:
        """One ``window/showMessage`` per problem (at most :data:`MAX_PROBLEM_MESSAGES`)."""
        for problem in problems[:MAX_PROBLEM_MESSAGES]:
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=problem)
            )
        if len(problems) > MAX_PROBLEM_MESSAGES:
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"rootrank: {len(problems) - MAX_PROBLEM_MESSAGES} more signature problems (see the log)",
                )
            )
        for problem in problems:
            self.log(types.MessageType.Warning, problem)

    def reanalyse_all(self) -> None:
        """Analyse every open log again; clear diagnostics of documents no longer diagnosed."""
        for uri in self.documents.uris():
            document = self.documents.get(uri)
            if document is None:
                continue
            if self.is_diagnosed(document):
                self.analyser.schedule(uri)
            else:
                self.analyser.forget(uri)


server = RootrankServer()
_pending_problems: list[str] = []


@server.feature(types.INITIALIZE)
def initialize(ls: RootrankServer, params: types.InitializeParams) -> None:
    roots = ls.workspace_roots()
    ls.settings = ls.settings.updated(params.initialization_options, roots[0] if roots else None)
    ls.commands = usable_commands(
        client_commands(params.initialization_options), params.capabilities
    )
    _pending_problems[:] = [*ls.settings.problems, *ls.load_signatures()]


@server.feature(types.INITIALIZED)
async def initialized(ls: RootrankServer, params: types.InitializedParams) -> None:
    ls.show_problems(_pending_problems)
    _pending_problems.clear()
    await ls.pool.warm_up(ls.settings.signature_folders, ls.generation)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def workspace_did_change_configuration(
    ls: RootrankServer, params: types.DidChangeConfigurationParams
) -> None:
    roots = ls.workspace_roots()
    old = ls.settings
    ls.settings = old.updated(params.settings, roots[0] if roots else None)
    problems = list(ls.settings.problems)
    if ls.settings.signature_folders != old.signature_folders:
        problems += ls.load_signatures()
    ls.show_problems(problems)
    if ls.settings != old:
        ls.reanalyse_all()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def text_document_did_open(ls: RootrankServer, params: types.DidOpenTextDocumentParams) -> None:
    document = ls.documents.get(params.text_document.uri)
    if document is not None and ls.is_diagnosed(document):
        ls.analyser.schedule(document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def text_document_did_change(ls: RootrankServer, params: types.DidChangeTextDocumentParams) -> None:
    document = ls.documents.get(params.text_document.uri)
    if document is not None and ls.is_diagnosed(document):
        ls.analyser.schedule(document.uri, DEBOUNCE_SECONDS)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def text_document_did_save(ls: RootrankServer, params: types.DidSaveTextDocumentParams) -> None:
    document = ls.documents.get(params.text_document.uri)
    if document is not None and ls.is_diagnosed(document):
        current = ls.analyser.current(document.uri)
        if current is None:
            ls.analyser.schedule(document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def text_document_did_close(ls: RootrankServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.analyser.forget(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def text_document_hover(ls: RootrankServer, params: types.HoverParams) -> types.Hover | None:
    """The entry of the finding on the hovered line (root cause first), from the cached
    analysis of the current version; ``None`` on a line without a finding.

    While the current version is being diagnosed (a large log just opened, an edit), the
    hover waits at most :data:`HOVER_WAIT_SECONDS` for the result, then answers with one
    line saying so and how far the engine has read (:meth:`Analyser.status`): a hover
    never comes back empty only because the result is not there yet, and never holds the
    request for the whole run (tens of seconds on a 50 MB log)."""
    uri = params.text_document.uri
    analysis = ls.analyser.current(uri) or await ls.analyser.wait(uri, HOVER_WAIT_SECONDS)
    if analysis is None:
        status = ls.analyser.status(uri)
        if status is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.PlainText, value=status)
        )
    entries = analysis.by_line.get(params.position.line)
    if not entries:
        return None
    order = {"root": 0, "collateral": 1, "finding": 2}
    at = min(entries, key=lambda e: order.get(e.kind, 3))
    document = ls.documents.get(params.text_document.uri)
    line = document.line(params.position.line) if document else ""
    encoding = normalise_encoding(ls.workspace.position_encoding)
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=hover_markdown(at, analysis.diagnosis, ls.library)
        ),
        range=types.Range(
            start=types.Position(line=params.position.line, character=0),
            end=types.Position(
                line=params.position.line, character=to_client_units(line, len(line), encoding)
            ),
        ),
    )


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False
    ),
)
async def text_document_code_action(
    ls: RootrankServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """Actions for our diagnostics only (``source == "rootrank"``), naming only commands this
    client can carry out (``ls.commands``); computed off the event loop because finding a
    quick fix's target reads workspace files.

    The actions answer for the document's current text: the analysis of its current version
    (waiting at most :data:`HOVER_WAIT_SECONDS` for a run going on, as a hover does), never
    an older version's; a diagnostic that analysis did not publish (one the client kept from
    before an edit) gets nothing (:func:`~rootrank.lsp.actions.code_actions`)."""
    if not any(d.source == "rootrank" for d in params.context.diagnostics):
        return []
    uri = params.text_document.uri
    analysis = ls.analyser.current(uri) or await ls.analyser.wait(uri, HOVER_WAIT_SECONDS)
    if analysis is None:
        return []
    encoding = normalise_encoding(ls.workspace.position_encoding)
    return await asyncio.to_thread(
        code_actions,
        params,
        analysis,
        ls.library,
        ls.documents,
        ls.workspace_roots(),
        encoding,
        ls.commands,
    )


@server.command("rootrank.diagnose")
async def diagnose_command(ls: RootrankServer, *args: Any) -> dict[str, Any]:
    """``{text, name?, firstLine?}`` -> the CLI's JSON for the same text
    (``rootrank.diagnosis/1``); lines are counted from ``firstLine`` (1-based, default 1)."""
    request = args[0] if args else None
    if isinstance(request, str):
        request = {"text": request}
    if not isinstance(request, dict) or not isinstance(request.get("text"), str):
        raise JsonRpcInvalidParams.of(
            ValueError("rootrank.diagnose takes {text: string, name?: string, firstLine?: int}")
        )
    first_line = request.get("firstLine", 1)
    if isinstance(first_line, bool) or not isinstance(first_line, int) or first_line < 1:
        raise JsonRpcInvalidParams.of(ValueError("firstLine must be an integer >= 1"))
    text: str = request["text"]
    if len(text) > MAX_DIAGNOSE_CHARS:
        raise JsonRpcInvalidParams.of(
            ValueError(f"text longer than {MAX_DIAGNOSE_CHARS} characters")
        )
    name = str(request["name"]) if isinstance(request.get("name"), str) else "<text>"
    try:
        return await ls.pool.diagnose(
            text,
            name,
            folders=ls.settings.signature_folders,
            mask=ls.settings.mask,
            generation=ls.generation,
            first_line=first_line,
        )
    except EngineError as exc:
        ls.log(types.MessageType.Error, f"rootrank.diagnose failed: {exc}")
        raise


@server.command("rootrank.signature")
def signature_command(ls: RootrankServer, *args: Any) -> dict[str, Any] | None:
    """``id`` (or ``{id}``) -> the signature's entry, or ``None`` when unknown."""
    sig_id = args[0] if args else None
    if isinstance(sig_id, dict):
        sig_id = sig_id.get("id")
    signature = ls.library.get(str(sig_id)) if sig_id is not None else None
    if signature is None:
        return None
    from .entry_view import readable_entry

    entry = readable_entry(signature.to_entry())
    fixes, _ = quickfixes(signature)
    entry["quickfix"] = [{"title": f.title} for f in fixes]
    return entry


@server.command("rootrank.signatures")
def signatures_command(ls: RootrankServer, *args: Any) -> list[dict[str, Any]]:
    """Every signature: ``{id, title, failure_class, category, keys}``; ``keys`` are the
    words to search by (tags, affected stacks, pattern literals)."""
    listing = []
    for signature in sorted(ls.library.signatures.values(), key=lambda s: (s.category, s.id)):
        keys = sorted(
            {*signature.tags, *signature.affects, *(p.literal for p in signature.patterns)}
        )
        listing.append(
            {
                "id": signature.id,
                "title": signature.title,
                "failure_class": signature.failure_class,
                "category": signature.category,
                "keys": keys,
            }
        )
    return listing


@server.command("rootrank.failureClasses")
def failure_classes_command(ls: RootrankServer, *args: Any) -> list[dict[str, str]]:
    """The taxonomy (``signatures/taxonomy.json``): ``[{slug, description}]`` in its order."""
    return [{"slug": c.slug, "description": c.description} for c in failure_classes().values()]


@server.command(SHOW_LOCATION)
async def show_location_command(ls: RootrankServer, *args: Any) -> bool:
    """``uri, range`` -> ``window/showDocument`` with that selection; returns its success."""
    if len(args) < 2 or not isinstance(args[0], str):
        raise JsonRpcInvalidParams.of(ValueError("rootrank.showLocation takes uri, range"))
    selection = ls.protocol._converter.structure(args[1], types.Range)
    result = await ls.window_show_document_async(
        types.ShowDocumentParams(uri=args[0], take_focus=True, selection=selection)
    )
    return bool(result and result.success)


@server.feature(types.SHUTDOWN)
def shutdown(ls: RootrankServer, params: None) -> None:
    # Answer at once (a client may send `exit` right after): stop the running analyses now;
    # the engine processes are reaped in _serve_stdio's cleanup while the event loop still
    # runs, so their pipes close cleanly.
    ls.analyser.cancel_all()


def _skipped_input(count: int, why: str) -> None:
    """Tell the client's log that input which was no LSP message was skipped (no id to
    answer: the header that would frame it could not be read)."""
    server.log(
        types.MessageType.Warning,
        f"rootrank: skipped {count} byte(s) of input that were no LSP message ({why});"
        " reading resumed at the next Content-Length header",
    )


def _message_error(error: Exception, source: Any) -> None:
    """pygls' loop reports here what failed while reading or dispatching a message: the
    JSON decoder's errors (invalid JSON, bytes that are not UTF-8, nesting deeper than the
    decoder's recursion limit) are answered as a Parse error (-32700, ``id: null``);
    anything else goes to pygls' ``report_server_error`` (a ``window/showMessage``)."""
    if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError, RecursionError)):
        detail = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        cast(RootrankProtocol, server.protocol).parse_error(detail)
    else:
        server.report_server_error(error, source)


async def _serve_stdio(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """pygls' stdio loop over :class:`FramedReader` (which recovers after input that is no
    message), then our own cleanup while the event loop still runs."""
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout))
    reader = FramedReader(
        stdin,
        server.thread_pool,
        on_skip=_skipped_input,
        on_unreadable=cast(RootrankProtocol, server.protocol).parse_error,
    )
    try:
        await run_async(
            stop_event=server._stop_event,
            reader=reader,
            protocol=server.protocol,
            logger=logger,
            error_handler=_message_error,
        )
    finally:
        # The client exited or disappeared (stdin closed). Stop the engine processes now,
        # and make sure the process ends even if a cancelled task never finishes.
        code = 0 if server.protocol._shutdown else 1
        watchdog = threading.Timer(EXIT_GRACE_SECONDS, os._exit, args=(code,))
        watchdog.daemon = True
        watchdog.start()
        server.analyser.cancel_all()
        await server.pool.aclose()


def serve() -> int:
    """Run the server over stdio until the client exits or disappears; returns the exit
    code: 0 when the client sent ``shutdown`` before it left, else 1 (LSP 3.17, ``exit``:
    the server exits "with error code 1" when no shutdown request came first; pygls raises
    that code as SystemExit, which ends the loop below and is read back from the protocol).

    The real stdout is kept for the protocol and file descriptor 1 is pointed at stderr,
    so a stray ``print`` anywhere cannot corrupt the stream. When stdin closes (the
    client is gone) the engine processes are killed and the process exits within
    :data:`EXIT_GRACE_SECONDS`.
    """
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    handler = logging.StreamHandler(sys.stderr)  # warnings and errors, one line each
    handler.setLevel(logging.WARNING)
    handler.addFilter(OneLineLog())
    logging.getLogger().addHandler(handler)
    try:
        asyncio.run(_serve_stdio(sys.stdin.buffer, protocol_out))
    except (BrokenPipeError, KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.pool.close()
    return 0 if server.protocol._shutdown else 1
