#!/usr/bin/env bash
# Set up everything from scratch and run every test: the engine, signatures, corpus,
# language server, real torchrun scenarios, the extension's unit tests and the end-to-end
# tests in a real (headless) VS Code. Usage: bash scripts/test-all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}

echo "== System packages (Neovim drives the language server from a second, independent client)"
if ! command -v nvim >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null
fi

echo "== Python environment"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# The package, its test tools, a CPU build of torch for the real torchrun scenarios
# (pip takes torch==2.13.0 from this machine's disk), py-spy for the live stall dumps and
# Dask for fleet triage.
.venv/bin/python -m pip install -q -e '.[test,scenarios,live,fleet]'

echo "== Engine, signatures, corpus, language server, safety"
.venv/bin/python -m pytest -q -p no:cacheprovider

echo "== Real torchrun scenarios (gloo on CPU)"
.venv/bin/python -m pytest -q -p no:cacheprovider -m scenarios --durations=5

echo "== VS Code extension: unit tests, checks, the .vsix"
# Native modules (code-server's) build against Debian's Node headers, never downloaded ones.
if [ -d /usr/include/node ] && [ -z "${npm_config_nodedir:-}" ]; then
  export npm_config_nodedir=/usr
fi
npm ci --no-audit --no-fund
npm test
npm run check
npm run package

echo "== The .vsix in a real (headless) VS Code, with an empty Python venv"
bash tests/e2e/setup.sh
bash tests/e2e/run.sh
