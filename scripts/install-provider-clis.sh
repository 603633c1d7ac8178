#!/usr/bin/env bash
# Install the real provider CLIs that the end-to-end tests drive (and the TypeScript
# compiler that checks schemas/agent-bridge.d.ts), pinned, into
# the project's own folder $ROOT/.tools/npm (git-ignored), never globally.
# Idempotent: when every pinned CLI is already there at its version, nothing
# is fetched.
#
# Usage: scripts/install-provider-clis.sh
# Binaries afterwards: $ROOT/.tools/npm/node_modules/.bin/<bin>
#
# To add a CLI, add one line to PROVIDERS (name, npm package, pinned version,
# executable name in node_modules/.bin).
#
# Why one npm call for everything: `npm install --no-save` into a prefix that
# has no package.json prunes every package it was not asked for, so installing
# one CLI on its own would delete another installed earlier. The script
# therefore always asks for the whole pinned set, plus any other top-level
# package already in the prefix (kept at its installed version), under a lock.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.tools/npm"

# name            npm package                   version    bin
PROVIDERS=(
  "claude         @anthropic-ai/claude-code     2.1.197    claude"
  "codex          @openai/codex                 0.171.0    codex"
  "typescript     typescript                    5.9.3      tsc"
)

log() { printf '[install-provider-clis] %s\n' "$*" >&2; }

# Version checks run with a throwaway HOME/CODEX_HOME: some CLIs write state on every
# invocation, even --version, and must not touch the user's real home.
PROBE_HOME="$(mktemp -d)"
trap 'rm -rf "$PROBE_HOME"' EXIT
run_tool() { HOME="$PROBE_HOME" CODEX_HOME="$PROBE_HOME" CLAUDE_CONFIG_DIR="$PROBE_HOME" "$@"; }

command -v npm >/dev/null || { log "npm not found (need Node >= 18 and npm)"; exit 1; }
command -v node >/dev/null || { log "node not found"; exit 1; }

installed_version() {
  local pkg_json="$PREFIX/node_modules/$1/package.json"
  [[ -f "$pkg_json" ]] || return 0
  node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' "$pkg_json"
}

is_ok() {  # name pkg version bin: pinned version installed and runnable?
  [[ "$(installed_version "$2")" == "$3" ]] || return 1
  [[ -x "$PREFIX/node_modules/.bin/$4" ]] || return 1
  run_tool "$PREFIX/node_modules/.bin/$4" --version >/dev/null 2>&1
}

all_ok() {
  local line name pkg version bin
  for line in "${PROVIDERS[@]}"; do
    read -r name pkg version bin <<<"$line"
    is_ok "$name" "$pkg" "$version" "$bin" || return 1
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
    read -r name pkg version bin <<<"$line"
    log "$name: $pkg@$version already installed"
  done
  exit 0
fi

declare -A pinned=()
specs=()
for line in "${PROVIDERS[@]}"; do
  read -r name pkg version bin <<<"$line"
  pinned[$pkg]=1
  specs+=("$pkg@$version")
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
  read -r name pkg version bin <<<"$line"
  if ! is_ok "$name" "$pkg" "$version" "$bin"; then
    log "$name: $pkg@$version did not install or does not run"
    exit 1
  fi
  log "$name: $(run_tool "$PREFIX/node_modules/.bin/$bin" --version 2>/dev/null | head -n1)"
done
