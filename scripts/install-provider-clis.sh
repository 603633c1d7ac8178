#!/usr/bin/env bash
# Install the real provider CLIs that the end-to-end tests drive (and the TypeScript
# compiler that checks schemas/agent-bridge.d.ts), pinned, into
# the project's own folder $ROOT/.tools/npm (git-ignored), never globally.
# Idempotent: when every pinned CLI is already there at its version, nothing
# is fetched.
#
# Usage: scripts/install-provider-clis.sh            # the pinned versions (what CI runs)
#        scripts/install-provider-clis.sh --latest   # the newest published versions,
#                                                    # into $ROOT/.tools/npm-latest
# Binaries afterwards: $ROOT/.tools/npm/node_modules/.bin/<bin> (or npm-latest/...),
# and the Python agents' $ROOT/.tools/py/<name>/bin/<bin> (scripts/install-python-agents.sh).
# scripts/test-latest-clis.sh installs the latest set and runs every real-CLI
# end-to-end test against it.
#
# To add a CLI, add one line to PROVIDERS (name, npm package, pinned version,
# executable name in node_modules/.bin or "-" for a package without one, and the
# argument that makes it print something and exit: --version, --help).
#
# Why one npm call for everything: `npm install --no-save` into a prefix that
# has no package.json prunes every package it was not asked for, so installing
# one CLI on its own would delete another installed earlier. The script
# therefore always asks for the whole pinned set, plus any other top-level
# package already in the prefix (kept at its installed version), under a lock.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LATEST=0
[[ "${1:-}" == "--latest" ]] && LATEST=1
if [[ $LATEST == 1 ]]; then PREFIX="$ROOT/.tools/npm-latest"; else PREFIX="$ROOT/.tools/npm"; fi

# name        npm package                       version  bin               check
PROVIDERS=(
  "claude       @anthropic-ai/claude-code         2.1.197  claude            --version"
  "codex        @openai/codex                     0.171.0  codex             --version"
  "gemini       @google/gemini-cli                0.61.0   gemini            --version"
  "claude-acp   @zed-industries/claude-agent-acp  0.23.1   claude-agent-acp  -"
  "codex-acp    @zed-industries/codex-acp         0.16.0   codex-acp         --help"
  "opencode     opencode-ai                       1.18.33  opencode          --version"
  "qwen         @qwen-code/qwen-code              0.24.4   qwen              --version"
  "acp-schema   @agentclientprotocol/sdk          2.4.0    -                 -"
  "typescript   typescript                        5.9.3    tsc               --version"
)

log() { printf '[install-provider-clis] %s\n' "$*" >&2; }

# Version checks run with a throwaway HOME/CODEX_HOME: some CLIs write state on every
# invocation, even --version, and must not touch the user's real home.
PROBE_HOME="$(mktemp -d)"
trap 'rm -rf "$PROBE_HOME"' EXIT
run_tool() { HOME="$PROBE_HOME" CODEX_HOME="$PROBE_HOME" CLAUDE_CONFIG_DIR="$PROBE_HOME" "$@"; }

# The Python agents (fast-agent) live in their own venvs under .tools/py (or
# .tools/py-latest): scripts/install-python-agents.sh finds a Python >= 3.12 for them.
if [[ $LATEST == 1 ]]; then
  bash "$ROOT/scripts/install-python-agents.sh" --latest
else
  bash "$ROOT/scripts/install-python-agents.sh"
fi

command -v npm >/dev/null || { log "npm not found (need Node >= 18 and npm)"; exit 1; }
command -v node >/dev/null || { log "node not found"; exit 1; }

installed_version() {
  local pkg_json="$PREFIX/node_modules/$1/package.json"
  [[ -f "$pkg_json" ]] || return 0
  node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' "$pkg_json"
}

is_ok() {  # name pkg version bin check: pinned version installed and runnable?
  local have
  have="$(installed_version "$2")"
  [[ -n "$have" ]] || return 1
  [[ $LATEST == 1 || "$have" == "$3" ]] || return 1
  [[ "$4" == "-" ]] && return 0
  [[ -x "$PREFIX/node_modules/.bin/$4" ]] || return 1
  # claude-agent-acp has no --version: it is an ACP server; check that it starts and
  # ends at stdin EOF.
  if [[ "$5" == "-" ]]; then
    run_tool timeout 20 "$PREFIX/node_modules/.bin/$4" </dev/null >/dev/null 2>&1
  else
    run_tool timeout 20 "$PREFIX/node_modules/.bin/$4" "$5" </dev/null >/dev/null 2>&1
  fi
}

all_ok() {
  [[ $LATEST == 1 ]] && return 1  # always ask the registry for the newest
  local line name pkg version bin check
  for line in "${PROVIDERS[@]}"; do
    read -r name pkg version bin check <<<"$line"
    is_ok "$name" "$pkg" "$version" "$bin" "$check" || return 1
  done
}

# Top-level packages already in the prefix that nothing else there depends on
# (e.g. a CLI someone installed by hand), as name@version, one a line.
other_roots() {
  node - "$PREFIX/node_modules" <<'JS'
const fs = require("fs"), path = require("path");
const nm = process.argv[2];
if (!fs.existsSync(nm)) process.exit(0);
const pkgs = {};
for (const e of fs.readdirSync(nm)) {
  if (e.startsWith(".")) continue;
  const dirs = e.startsWith("@") ? fs.readdirSync(path.join(nm, e)).map(s => e + "/" + s) : [e];
  for (const d of dirs) {
    try { pkgs[d] = JSON.parse(fs.readFileSync(path.join(nm, d, "package.json"), "utf8")); } catch {}
  }
}
const depended = new Set();
for (const p of Object.values(pkgs))
  for (const k of ["dependencies", "optionalDependencies", "peerDependencies"])
    for (const n of Object.keys(p[k] || {})) depended.add(n);
for (const [d, p] of Object.entries(pkgs))
  if (!depended.has(d) && p.version) console.log(d + "@" + p.version);
JS
}

mkdir -p "$PREFIX"
# Same lock file as any other installer that writes into $PREFIX.
exec 9>"$ROOT/.tools/npm.lock"
flock 9

if all_ok; then
  for line in "${PROVIDERS[@]}"; do
    read -r name pkg version bin check <<<"$line"
    log "$name: $pkg@$version already installed"
  done
  exit 0
fi

declare -A pinned=()
specs=()
for line in "${PROVIDERS[@]}"; do
  read -r name pkg version bin check <<<"$line"
  pinned[$pkg]=1
  if [[ $LATEST == 1 ]]; then specs+=("$pkg@latest"); else specs+=("$pkg@$version"); fi
done
while read -r spec; do
  [[ -n "$spec" ]] || continue
  name="${spec%@*}"
  [[ -n "${pinned[$name]:-}" ]] && continue
  log "keeping $spec (already in $PREFIX)"
  specs+=("$spec")
done < <(other_roots)

log "installing into $PREFIX: ${specs[*]}"
# --no-package-lock/--no-save: nothing is written that names a registry host.
# The native binaries arrive through optional dependencies.
npm install --prefix "$PREFIX" --no-package-lock --no-save --no-audit --no-fund \
  --include=optional --loglevel=error "${specs[@]}" >&2

for line in "${PROVIDERS[@]}"; do
  read -r name pkg version bin check <<<"$line"
  if ! is_ok "$name" "$pkg" "$version" "$bin" "$check"; then
    log "$name: $pkg@$version did not install or does not run"
    exit 1
  fi
  log "$name: $pkg@$(installed_version "$pkg")"
done
