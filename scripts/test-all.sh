#!/usr/bin/env bash
# Set up everything from scratch and run every test: the engine, signatures, corpus,
# language server, real torchrun scenarios, the extension's unit tests and the end-to-end
# tests in a real (headless) VS Code. Usage: bash scripts/test-all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}

echo "== Python environment"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
# A CPU build of torch for the real torchrun scenarios (pip takes it from this machine's disk).
.venv/bin/python -m pip install -q torch==2.13.0

echo "== Engine, signatures, corpus, language server, safety"
.venv/bin/python -m pytest -q -p no:cacheprovider

echo "== Real torchrun scenarios (gloo on CPU)"
.venv/bin/python -m pytest -q -p no:cacheprovider -m scenarios
