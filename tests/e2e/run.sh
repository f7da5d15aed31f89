#!/usr/bin/env bash
# End-to-end tests of the built .vsix in a real VS Code (code-server 4.100.3) driven by headless
# Chromium. Fresh everything: HOME/XDG dirs, VS Code profile, extensions folder, a copy of
# tests/e2e/workspace, and a Python venv with nothing installed as rootrank.interpreter.
# Usage: bash tests/e2e/run.sh [path/to/rootrank-<version>.vsix]   (default: the package's name;
# built with `npm run package` when missing). Needs `bash tests/e2e/setup.sh` once.
# Screenshots and logs: test-artifacts/e2e/.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
PREFIX=${ROOTRANK_E2E_PREFIX:-$HOME/.cache/rootrank-e2e}
CODE_SERVER="$PREFIX/cs/node_modules/.bin/code-server"
PW_CORE="$PREFIX/tools/node_modules/playwright-core"
VERSION=$(node -p "require('./package.json').version")
VSIX=${1:-$REPO/rootrank-$VERSION.vsix}
ARTIFACTS="$REPO/test-artifacts/e2e"
PYTHON=${ROOTRANK_E2E_BASE_PYTHON:-python3}
PORT=${ROOTRANK_E2E_PORT:-$(( 20000 + RANDOM % 20000 ))}
t0=$(date +%s); step() { echo "== e2e [$(( $(date +%s) - t0 ))s] $*"; }

[ -x "$CODE_SERVER" ] || { echo "code-server missing: run bash tests/e2e/setup.sh" >&2; exit 1; }
if [ ! -f "$VSIX" ]; then step "building $VSIX"; npm run --silent package; fi
step "compiling the tests"
npx tsc -p tsconfig.json

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rootrank-e2e.XXXXXX")
CS_PID=
cleanup() {
  if [ -n "$CS_PID" ]; then kill "$CS_PID" 2>/dev/null || true; wait "$CS_PID" 2>/dev/null || true; fi
  mkdir -p "$ARTIFACTS/logs"
  cp -r "$TMP/ud/logs/." "$ARTIFACTS/logs/" 2>/dev/null || true
  cp "$TMP/code-server.log" "$ARTIFACTS/" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
rm -rf "$ARTIFACTS"; mkdir -p "$ARTIFACTS"
export HOME="$TMP/home" XDG_CONFIG_HOME="$TMP/home/.config" XDG_DATA_HOME="$TMP/home/.local/share" XDG_CACHE_HOME="$TMP/home/.cache"
mkdir -p "$HOME" "$TMP/ud/User" "$TMP/ext"

step "fresh Python venv with nothing installed ($($PYTHON --version 2>&1))"
"$PYTHON" -m venv --without-pip "$TMP/venv"
VENV_PY="$TMP/venv/bin/python"
if "$VENV_PY" -c "import pygls" 2>/dev/null || "$VENV_PY" -c "import regex" 2>/dev/null || "$VENV_PY" -c "import yaml" 2>/dev/null; then
  echo "the fresh venv can import a dependency: not a clean test" >&2; exit 1
fi

step "workspace"
cp -r "$REPO/tests/e2e/workspace" "$TMP/ws"
cat > "$TMP/ud/User/settings.json" <<JSON
{
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.colorTheme": "Default Dark Modern",
  "chat.commandCenter.enabled": false,
  "terminal.integrated.shellIntegration.enabled": true,
  "terminal.integrated.defaultProfile.linux": "bash",
  "rootrank.interpreter": "$VENV_PY",
  "rootrank.signatureFolders": ["$TMP/ws/e2e-signatures"]
}
JSON

step "installing $(basename "$VSIX") ($(du -h "$VSIX" | cut -f1)) into a fresh profile"
"$CODE_SERVER" --user-data-dir "$TMP/ud" --extensions-dir "$TMP/ext" --install-extension "$VSIX" >"$TMP/install.log" 2>&1 \
  || { cat "$TMP/install.log"; exit 1; }
ls "$TMP/ext" | grep -q '^rootrank\.rootrank-' || { echo "the .vsix did not install"; cat "$TMP/install.log"; exit 1; }

step "starting code-server on 127.0.0.1:$PORT"
ROOTRANK_E2E_ARTIFACTS="$ARTIFACTS" ROOTRANK_E2E_PYTHON="$VENV_PY" \
  "$CODE_SERVER" --user-data-dir "$TMP/ud" --extensions-dir "$TMP/ext" --auth none --bind-addr "127.0.0.1:$PORT" \
  --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
  "$TMP/ws" >"$TMP/code-server.log" 2>&1 &
CS_PID=$!
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  kill -0 "$CS_PID" 2>/dev/null || { cat "$TMP/code-server.log"; exit 1; }
  sleep 0.5
done

step "running the tests in the extension host"
set +e
CS_URL="http://127.0.0.1:$PORT" WORKSPACE="$TMP/ws" EXT_DEV_PATH="$REPO/tests/e2e/host" \
  EXT_TESTS_PATH="$REPO/out/tests/e2e/suite/index.js" ARTIFACTS="$ARTIFACTS" PW_CORE="$PW_CORE" \
  node "$REPO/tests/e2e/run.js"
status=$?
set -e
rm -f "$ARTIFACTS"/*.done
step "done: exit $status; screenshots and logs in ${ARTIFACTS#$REPO/}"
exit $status
