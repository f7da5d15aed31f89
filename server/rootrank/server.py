"""``python -m rootrank.server``: run the language server over stdio (same as ``rootrank serve``)."""

from __future__ import annotations

import sys

from rootrank.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve"]))
