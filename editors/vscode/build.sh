#!/usr/bin/env bash
# Build the VS Code extension: copy the bridge's published types (schemas/agent-bridge.d.ts)
# and its CommonJS runtime values (schemas/agent-bridge.cjs, .d.cts) into src/schema/, type-check and compile with tsc --strict, run the unit tests with the
# node test runner, and package the .vsix with @vscode/vsce.
#
#   editors/vscode/build.sh                 # everything; the .vsix goes to editors/vscode/dist/
#   editors/vscode/build.sh --out FILE      # the .vsix path
#   editors/vscode/build.sh --no-tests      # skip the unit tests
#   editors/vscode/build.sh --hooks-out F   # also a .vsix WITH the test and demo hooks
#                                           # (out/testMode.js, out/demoMode.js) for the
#                                           # extension-host test and the screenshot;
#                                           # the shipped .vsix holds only what runs
#
# The tools come from scripts/install-vscode-host.sh ($ROOT/.tools/vscode-host, or
# $AGENT_BRIDGE_VSCODE_TOOLS). The unit tests that talk to a real bridge use
# $AGENT_BRIDGE_BIN (default: $ROOT/.venv/bin/agent-bridge).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TOOLS="${AGENT_BRIDGE_VSCODE_TOOLS:-$ROOT/.tools/vscode-host}"
VERSION="$(node -p 'require(process.argv[1]).version' "$HERE/package.json")"
OUT="$HERE/dist/agent-bridge-vscode-$VERSION.vsix"
TESTS=1
HOOKS_OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --no-tests) TESTS=0; shift ;;
    --hooks-out) HOOKS_OUT="$2"; shift 2 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { printf '[build-vscode] %s\n' "$*" >&2; }
for tool in tsc vsce; do
  [[ -x "$TOOLS/node_modules/.bin/$tool" ]] || {
    log "$tool not found in $TOOLS: run scripts/install-vscode-host.sh first"; exit 1; }
done

cd "$HERE"
# The compiler finds @types/vscode, @types/node and vscode-jsonrpc here (git-ignored link).
ln -sfn "$TOOLS/node_modules" node_modules
mkdir -p src/schema
cp "$ROOT/schemas/agent-bridge.d.ts" src/schema/agent-bridge.d.ts
# the known event types and their guard: the contract's CommonJS runtime module (generated)
cp "$ROOT/schemas/agent-bridge.cjs" "$ROOT/schemas/agent-bridge.d.cts" src/schema/
rm -rf out
log "tsc --strict"
"$TOOLS/node_modules/.bin/tsc" -p tsconfig.json
mkdir -p out/schema
cp src/schema/agent-bridge.cjs out/schema/agent-bridge.cjs

if [[ $TESTS == 1 ]]; then
  log "unit tests (node --test)"
  AGENT_BRIDGE_BIN="${AGENT_BRIDGE_BIN:-$ROOT/.venv/bin/agent-bridge}" node --test out/test/
fi

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
cp package.json README.md "$STAGE/"
cp "$ROOT/LICENSE" "$STAGE/LICENSE"
cp -r media "$STAGE/media"
[[ -d docs ]] && cp -r docs "$STAGE/docs"
mkdir -p "$STAGE/out/schema" "$STAGE/node_modules"
cp out/schema/agent-bridge.cjs "$STAGE/out/schema/"
# Only what runs: the test scenario and the demo are not shipped (see --hooks-out).
for js in out/*.js; do
  case "$(basename "$js")" in testMode.js|demoMode.js) ;; *) cp "$js" "$STAGE/out/" ;; esac
done
cp -r "$TOOLS/node_modules/vscode-jsonrpc" "$STAGE/node_modules/vscode-jsonrpc"
package() { # the staged tree -> $1
  mkdir -p "$(dirname "$1")"
  log "vsce package -> $1"
  (cd "$STAGE" && "$TOOLS/node_modules/.bin/vsce" package --allow-missing-repository --no-rewrite-relative-links \
    --skip-license --out "$1" >&2)
  log "built $1"
}
package "$OUT"
if [[ -n $HOOKS_OUT ]]; then
  cp out/testMode.js out/demoMode.js "$STAGE/out/"
  package "$HOOKS_OUT"
fi
