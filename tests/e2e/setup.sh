#!/usr/bin/env bash
# One-time setup for the end-to-end tests: code-server 4.100.3 (VS Code 1.100.3), Debian's
# Chromium and playwright-core, in a folder outside the repository (default
# ~/.cache/rootrank-e2e, or $ROOTRANK_E2E_PREFIX). Follows ../shared/vscode-e2e/setup.sh and
# calls it when something is missing; a second run only checks (a few seconds).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=${ROOTRANK_E2E_PREFIX:-$HOME/.cache/rootrank-e2e}
SHARED=${ROOTRANK_SHARED:-$REPO/../shared}
if [ -x "$PREFIX/cs/node_modules/.bin/code-server" ] && [ -d "$PREFIX/tools/node_modules/playwright-core" ] \
   && command -v chromium >/dev/null; then
  echo "e2e setup: already in $PREFIX ($("$PREFIX/cs/node_modules/.bin/code-server" --version 2>/dev/null | head -1))"
  exit 0
fi
if [ ! -f "$SHARED/vscode-e2e/setup.sh" ]; then
  echo "e2e setup: $SHARED/vscode-e2e/setup.sh not found (set ROOTRANK_SHARED)" >&2
  exit 1
fi
mkdir -p "$PREFIX"
PREFIX="$PREFIX" bash "$SHARED/vscode-e2e/setup.sh"
