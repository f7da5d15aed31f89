"""``python -m rootrank.server``: run the language server over stdio (same as ``rootrank serve``)."""

from __future__ import annotations

from rootrank.lsp import main

if __name__ == "__main__":
    main()
