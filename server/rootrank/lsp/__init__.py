"""The language server (the only pygls-aware code): a thin adapter from LSP to the engine.

Start it with ``rootrank serve``, ``python -m rootrank.server`` or :func:`main`; it speaks
LSP over stdio. See :mod:`rootrank.lsp.server` for what it serves.
"""

from __future__ import annotations


def main() -> int:
    """Run the rootrank language server over stdin/stdout until the client exits; returns
    the exit code (0 after a ``shutdown`` request, else 1: :func:`rootrank.lsp.server.serve`).

    Takes no arguments. Imports pygls only here, so the engine and CLI never pay for it.
    """
    from .server import serve

    return serve()


__all__ = ["main"]
