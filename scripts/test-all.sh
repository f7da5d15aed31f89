#!/usr/bin/env bash
# Set up everything from scratch and run every test: the engine, signatures, language server,
# real torchrun scenarios, the extension's unit tests and the end-to-end tests in a real
# (headless) VS Code. Needs only this clone and the Debian/PyPI/npm registries. The corpus
# gate runs as its own step when the shared corpus of real logs is present
# ($ROOTRANK_CORPUS, default ../shared/corpus beside the clone); without it, it says so.
# Usage: bash scripts/test-all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}

echo "== System packages (Neovim drives the language server from a second, independent client)"
if ! command -v nvim >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq neovim >/dev/null
fi

echo "== Open MPI (the mpirun --tag-output scenarios; without mpirun they are skipped, with the reason)"
if ! command -v mpirun >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq openmpi-bin >/dev/null
fi

echo "== Python environment"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# The package, its test tools, a CPU build of torch for the real torchrun scenarios
# (pip takes torch==2.13.0 from this machine's disk), py-spy for the live stall dumps,
# Dask for fleet triage, and the pinned lint and type tools.
.venv/bin/python -m pip install -q -e '.[test,scenarios,live,fleet,lint]'
# The install's build hook (hatch_build.py) wrote the signature library's built form,
# server/rootrank/library.json, which rootrank reads at start: it must stand for signatures/.
.venv/bin/python -m rootrank.library_file --check

echo "== Python lint, format and types (ruff check, ruff format --check, mypy on server/)"
.venv/bin/ruff check server tests bench scenarios extension/python
.venv/bin/ruff format --check server tests bench scenarios extension/python
.venv/bin/mypy

echo "== Engine, signatures, language server, safety (skipped tests listed with their reason)"
.venv/bin/python -m pytest -q -p no:cacheprovider -rs --ignore=tests/test_corpus.py

CORPUS=${ROOTRANK_CORPUS:-$ROOT/../shared/corpus}
if [ -d "$CORPUS" ]; then
  echo "== Corpus gate: accuracy floors on the real logs in $CORPUS"
  ROOTRANK_CORPUS="$CORPUS" .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_corpus.py
else
  echo "== Corpus gate: SKIPPED ($CORPUS not present; set ROOTRANK_CORPUS to a folder of labelled cases)"
fi

echo "== Real torchrun scenarios (gloo on CPU)"
.venv/bin/python -m pytest -q -p no:cacheprovider -rs -m scenarios --durations=5

echo "== VS Code extension: unit tests, checks (generated types, tsc, eslint, prettier), the .vsix"
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
