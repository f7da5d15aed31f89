#!/usr/bin/env bash
# One-time setup for the end-to-end tests, from the registries only (Debian, npm): a real
# VS Code 1.100.3 (code-server 4.100.3 from npm), Debian's Chromium and playwright-core, all in
# a folder outside the repository: $ROOTRANK_E2E_PREFIX, default ~/.cache/rootrank-e2e.
# A second run only checks (a second or two). Usage: bash tests/e2e/setup.sh
#
# Why these pieces (no VS Code build can be downloaded here: @vscode/test-electron and
# @vscode/test-web fetch builds from update.code.visualstudio.com):
# - code-server 4.100.3 embeds VS Code 1.100.3 and is the last release that runs on Node 20;
#   its postinstall compiles native modules (node-pty, kerberos, spdlog...) with node-gyp, so it
#   needs a C++ toolchain, pkg-config and the Kerberos headers.
# - @vscode/ripgrep's postinstall downloads rg from GitHub; its download cache is filled with
#   Debian's rg first, so nothing but the registries is contacted.
# - playwright-core drives Debian's /usr/bin/chromium (never `playwright install`, which
#   downloads a browser from a CDN).
set -euo pipefail
PREFIX=${ROOTRANK_E2E_PREFIX:-$HOME/.cache/rootrank-e2e}
CODE_SERVER_VERSION=4.100.3       # VS Code 1.100.3 (package.json: engines.vscode ^1.100.0)
RIPGREP_PKG_VERSION=1.15.11       # the @vscode/ripgrep that code-server 4.100.3 depends on
RIPGREP_TAG=v13.0.0-10            # the rg release that @vscode/ripgrep 1.15.11 fetches
PLAYWRIGHT_CORE_VERSION=1.65.1
APT_PACKAGES=(build-essential python3 pkg-config libkrb5-dev ripgrep chromium curl)
CODE_SERVER="$PREFIX/cs/node_modules/.bin/code-server"
# code-server --version writes a config under XDG_CONFIG_HOME: keep it in PREFIX.
cs_version() { XDG_CONFIG_HOME="$PREFIX/xdg-config" XDG_DATA_HOME="$PREFIX/xdg-data" "$CODE_SERVER" --version 2>/dev/null | grep -E "^[0-9]" | sed -n 1p; }
PW_CORE="$PREFIX/tools/node_modules/playwright-core"
t0=$(date +%s); step() { echo "== e2e setup [$(( $(date +%s) - t0 ))s] $*"; }

installed() {
  [ -x "$CODE_SERVER" ] && [ -f "$PW_CORE/package.json" ] && command -v chromium >/dev/null \
    && command -v curl >/dev/null \
    && [ "$(cs_version | cut -d' ' -f1)" = "$CODE_SERVER_VERSION" ]
}
if installed; then
  echo "e2e setup: already in $PREFIX (code-server $CODE_SERVER_VERSION, playwright-core $(node -p "require('$PW_CORE/package.json').version"), $(chromium --version 2>/dev/null | sed -n 1p))"
  exit 0
fi
mkdir -p "$PREFIX"
# Two setups into one PREFIX at once (two checkouts on one machine) would corrupt each other's
# node_modules: the second waits for the first, then finds everything installed.
exec 9>"$PREFIX/.setup.lock"
if ! flock -n 9; then
  echo "e2e setup: another setup is installing into $PREFIX; waiting for it"
  flock 9
  if installed; then echo "e2e setup: installed by the other run"; exit 0; fi
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "apt packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=900 update -qq
    apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "e2e setup: install these Debian packages first (as root): apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

# code-server's native modules build against Debian's Node headers, never downloaded ones.
if [ -d /usr/include/node ] && [ -z "${npm_config_nodedir:-}" ]; then export npm_config_nodedir=/usr; fi

case "$(uname -m)" in
  x86_64) RG_TARGET=x86_64-unknown-linux-musl ;;
  aarch64) RG_TARGET=aarch64-unknown-linux-musl ;;
  *) RG_TARGET= ;;
esac
if [ -n "$RG_TARGET" ]; then
  step "@vscode/ripgrep's download cache <- Debian's rg ($(rg --version | sed -n 1p))"
  RG_CACHE="$(node -p "require('os').tmpdir()")/vscode-ripgrep-cache-$RIPGREP_PKG_VERSION"
  STAGE=$(mktemp -d)
  cp "$(command -v rg)" "$STAGE/rg"
  mkdir -p "$RG_CACHE"
  tar czf "$RG_CACHE/ripgrep-$RIPGREP_TAG-$RG_TARGET.tar.gz" -C "$STAGE" rg
  rm -rf "$STAGE"
fi

step "npm install code-server@$CODE_SERVER_VERSION (compiles native modules; a few minutes)"
mkdir -p "$PREFIX/cs"
[ -f "$PREFIX/cs/package.json" ] || echo '{"name": "rootrank-e2e-code-server", "private": true}' > "$PREFIX/cs/package.json"
# As root, code-server's postinstall refuses to run without npm_config_unsafe_perm, and
# node-pty's `npx node-gyp` aborts without npm_config_yes.
# A node_modules left half-written (a setup killed mid-way, two setups at once before the
# lock existed) makes npm fail on missing modules: then it is installed again from nothing.
cs_install() {
  ( cd "$PREFIX/cs" && npm_config_unsafe_perm=true npm_config_yes=true \
      npm install --no-audit --no-fund "code-server@$CODE_SERVER_VERSION" >npm-install.log 2>&1 )
}
cs_install || {
  step "npm install failed in an existing folder; installing again from nothing"
  rm -rf "$PREFIX/cs/node_modules" "$PREFIX/cs/package-lock.json"
  cs_install
} || { tail -40 "$PREFIX/cs/npm-install.log" >&2; exit 1; }

step "npm install playwright-core@$PLAYWRIGHT_CORE_VERSION (no browser download)"
mkdir -p "$PREFIX/tools"
[ -f "$PREFIX/tools/package.json" ] || echo '{"name": "rootrank-e2e-tools", "private": true}' > "$PREFIX/tools/package.json"
tools_install() {
  ( cd "$PREFIX/tools" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
      npm install --no-audit --no-fund "playwright-core@$PLAYWRIGHT_CORE_VERSION" >npm-install.log 2>&1 )
}
tools_install || {
  rm -rf "$PREFIX/tools/node_modules" "$PREFIX/tools/package-lock.json"
  tools_install
} || { tail -40 "$PREFIX/tools/npm-install.log" >&2; exit 1; }

installed || { echo "e2e setup: $PREFIX is incomplete after installing (see $PREFIX/*/npm-install.log)" >&2; exit 1; }
step "done: code-server $(cs_version) in $PREFIX"
