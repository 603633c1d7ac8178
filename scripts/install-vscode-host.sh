#!/usr/bin/env bash
# Install what the VS Code extension (editors/vscode) needs to build and to be tested in a
# real extension host, pinned, into its own prefix $ROOT/.tools/vscode-host (git-ignored):
#   - code-server (VS Code's own server and extension host; desktop VS Code downloads
#     builds at run time, which a machine without internet cannot do),
#   - @vscode/vsce (packages the .vsix), vscode-jsonrpc (bundled into the extension),
#     @types/vscode, @types/node and typescript (the strict type check and the build),
#   - from Debian: chromium (the headless workbench), ripgrep (code-server's search; its
#     own postinstall would download it), libkrb5-dev (a native module's headers) and the
#     compiler node-gyp builds code-server's native modules with (g++, make, python3).
# Idempotent: when the pinned set is installed and a stamp file records it, nothing is
# fetched. code-server is installed with --ignore-scripts and its postinstall steps are
# done by hand without the steps that download (see the comments below).
#
# Usage: scripts/install-vscode-host.sh   (AGENT_BRIDGE_VSCODE_TOOLS names another prefix)
# Afterwards: $PREFIX/node_modules/.bin/{vsce,tsc}, and
#   node $PREFIX/node_modules/code-server/out/node/entry.js ...
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/apt.sh
source "$ROOT/scripts/lib/apt.sh"
PREFIX="${AGENT_BRIDGE_VSCODE_TOOLS:-$ROOT/.tools/vscode-host}"

# npm package        version  (code-server 4.100.x is the last line whose engines allow
# Node 20; @types/vscode must not be newer than its VS Code 1.100; vsce 4 needs Node 22)
PACKAGES=(
  "code-server       4.100.3"
  "@vscode/vsce      3.9.1"
  "vscode-jsonrpc    8.2.1"
  "@types/vscode     1.100.0"
  "@types/node       20.19.43"
  "typescript        5.9.3"
)
APT_PACKAGES=(chromium ripgrep libkrb5-dev g++ make python3)

log() { printf '[install-vscode-host] %s\n' "$*" >&2; }

command -v npm >/dev/null || { log "npm not found (need Node >= 20 and npm)"; exit 1; }
command -v node >/dev/null || { log "node not found"; exit 1; }

want_stamp() {
  printf '%s\n' "${PACKAGES[@]}" "node $(node --version)" "postinstall v2"
}

apt_missing() {
  local p missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  printf '%s\n' "${missing[@]}"
}

install_apt() {
  local missing
  mapfile -t missing < <(apt_missing | sed '/^$/d')
  [[ ${#missing[@]} == 0 ]] && { log "apt: ${APT_PACKAGES[*]} already installed"; return 0; }
  if [[ "$(id -u)" != "0" ]] || ! command -v apt-get >/dev/null 2>&1; then
    log "missing Debian packages ${missing[*]} and no root apt-get to install them"
    return 1
  fi
  log "apt: installing ${missing[*]}"
  # Others may run apt at the same time: wait for the lock instead of failing.
  apt_get update -qq >/dev/null
  apt_get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

host_ok() {
  [[ -f "$PREFIX/.installed" ]] && [[ "$(cat "$PREFIX/.installed")" == "$(want_stamp)" ]] \
    && [[ -x "$PREFIX/node_modules/.bin/vsce" ]] && [[ -x "$PREFIX/node_modules/.bin/tsc" ]] \
    && [[ -f "$PREFIX/node_modules/code-server/out/node/entry.js" ]] \
    && [[ -d "$PREFIX/node_modules/code-server/lib/vscode/node_modules" ]]
}

install_apt

mkdir -p "$PREFIX"
exec 9>"$PREFIX/.lock"
flock 9

if host_ok; then
  log "code-server and the build tools already installed in $PREFIX"
  exit 0
fi
rm -f "$PREFIX/.installed"

specs=()
for line in "${PACKAGES[@]}"; do
  read -r pkg version <<<"$line"
  specs+=("$pkg@$version")
done
log "npm: installing into $PREFIX: ${specs[*]}"
# --ignore-scripts: code-server's postinstall downloads; its steps are run below without
# the downloads. --no-package-lock/--no-save: nothing is written that names a registry.
npm install --prefix "$PREFIX" --no-package-lock --no-save --no-audit --no-fund \
  --ignore-scripts --loglevel=error "${specs[@]}" >&2

CS="$PREFIX/node_modules/code-server"
# node-gyp builds against the running Node's own headers (it would download them else).
NODEDIR="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
[[ -f "$NODEDIR/include/node/node.h" ]] || NODEDIR=/usr
[[ -f "$NODEDIR/include/node/node.h" ]] || { log "no Node.js headers (include/node/node.h) next to node"; exit 1; }
log "code-server: installing VS Code's own dependencies"
(cd "$CS/lib/vscode" && npm install --omit=dev --ignore-scripts --no-audit --no-fund \
  --no-package-lock --loglevel=error >&2)
# @vscode/ripgrep's postinstall fetches a binary from the internet: use Debian's.
mkdir -p "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin"
ln -sf /usr/bin/rg "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
log "code-server: building native modules (node-gyp, takes a minute)"
(cd "$CS/lib/vscode" && npm_config_nodedir="$NODEDIR" npm rebuild --foreground-scripts \
  --loglevel=error >/dev/null 2>"$PREFIX/rebuild.log") || {
  log "native module build failed; see $PREFIX/rebuild.log"; exit 1; }
log "code-server: its postinstall steps (without the downloads)"
# What lib/vscode's part of code-server's postinstall.sh does, done here so that no
# package script runs: link node_modules.asar and the helper scripts, install the
# built-in extensions' shared dependency (typescript) and trim it as VS Code does.
(cd "$CS/lib/vscode" && rm -rf node_modules.asar && ln -s node_modules node_modules.asar \
  && (cd bin/remote-cli && rm -f code-server && ln -s code-linux.sh code-server) \
  && (cd bin/helpers && rm -f browser.sh && ln -s browser-linux.sh browser.sh) \
  && cd extensions && npm install --omit=dev --ignore-scripts --no-audit --no-fund \
    --no-package-lock --loglevel=error >"$PREFIX/postinstall.log" 2>&1 \
  && node ./postinstall.mjs >>"$PREFIX/postinstall.log" 2>&1) || {
  log "code-server postinstall steps failed; see $PREFIX/postinstall.log"; exit 1; }
# argon2's prebuilt download fails without internet; it builds from source.
(cd "$PREFIX" && npm_config_nodedir="$NODEDIR" npm rebuild argon2 --loglevel=error \
  >>"$PREFIX/rebuild.log" 2>&1) || {
  log "argon2 build failed; see $PREFIX/rebuild.log"; exit 1; }

node "$CS/out/node/entry.js" --version >/dev/null || { log "code-server does not run"; exit 1; }
want_stamp >"$PREFIX/.installed"
log "installed: ${specs[*]}"
