#!/usr/bin/env bash
# Install the Python ACP agents the end-to-end tests drive (fast-agent, Mistral Vibe),
# pinned, each into its own venv under the project's folder $ROOT/.tools/py/<name>
# (git-ignored), never globally. Called by scripts/install-provider-clis.sh.
#
# Usage: scripts/install-python-agents.sh            # the pinned versions (what CI runs)
#        scripts/install-python-agents.sh --latest   # newest releases, into .tools/py-latest
# Executables afterwards: $ROOT/.tools/py/<name>/bin/<bin>.
#
# Every release of these agents needs Python >= 3.12. The interpreter is looked for in
# $AGENT_BRIDGE_AGENT_PYTHON, then pyenv's versions ($PYENV_ROOT, ~/.pyenv, /root/.pyenv),
# then PATH (python3.13, python3.12). None found: with AGENT_BRIDGE_REQUIRE_CLIS=1 (CI)
# this fails; elsewhere it says so loudly and installs nothing (their tests then skip
# loudly).
#
# To add an agent, add one line to AGENTS (name, PyPI package, pinned version, the
# executable in the venv's bin, the argument that makes it print something and exit).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LATEST=0
[[ "${1:-}" == "--latest" ]] && LATEST=1
if [[ $LATEST == 1 ]]; then PREFIX="$ROOT/.tools/py-latest"; else PREFIX="$ROOT/.tools/py"; fi

# name          PyPI package     version  bin         check
AGENTS=(
  "fast-agent     fast-agent-acp   0.10.48  fast-agent  --version"
  "mistral-vibe   mistral-vibe     3.0.2    vibe-acp    --version"
)

log() { printf '[install-python-agents] %s\n' "$*" >&2; }

is_312() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; }

find_python() {
  local cand
  if [[ -n "${AGENT_BRIDGE_AGENT_PYTHON:-}" ]]; then
    is_312 "$AGENT_BRIDGE_AGENT_PYTHON" && { echo "$AGENT_BRIDGE_AGENT_PYTHON"; return 0; }
    log "AGENT_BRIDGE_AGENT_PYTHON=$AGENT_BRIDGE_AGENT_PYTHON is not Python >= 3.12"
  fi
  for root in "${PYENV_ROOT:-}" "$HOME/.pyenv" /root/.pyenv; do
    [[ -n "$root" && -d "$root/versions" ]] || continue
    # Newest first: 3.13 before 3.12 (sort -V on the version folder names).
    while read -r cand; do
      [[ -x "$cand" ]] && is_312 "$cand" && { echo "$cand"; return 0; }
    done < <(ls -d "$root"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV)
  done
  for cand in python3.13 python3.12 python3; do
    cand="$(command -v "$cand" 2>/dev/null)" || continue
    is_312 "$cand" && { echo "$cand"; return 0; }
  done
  return 1
}

# Version checks run with a throwaway HOME: the agents write state on every start.
PROBE_HOME="$(mktemp -d)"
trap 'rm -rf "$PROBE_HOME"' EXIT

installed_version() {  # venv package -> version or nothing
  [[ -x "$1/bin/python" ]] || return 0
  "$1/bin/python" -c 'import sys
from importlib.metadata import version, PackageNotFoundError
try: print(version(sys.argv[1]))
except PackageNotFoundError: pass' "$2" 2>/dev/null || true
}

is_ok() {  # venv pkg version bin check
  local have
  have="$(installed_version "$1" "$2")"
  [[ -n "$have" ]] || return 1
  [[ $LATEST == 1 || "$have" == "$3" ]] || return 1
  [[ -x "$1/bin/$4" ]] || return 1
  HOME="$PROBE_HOME" timeout 60 "$1/bin/$4" "$5" </dev/null >/dev/null 2>&1
}

mkdir -p "$PREFIX"
exec 8>"$PREFIX/.lock"
flock 8

need=()
for line in "${AGENTS[@]}"; do
  read -r name pkg version bin check <<<"$line"
  if [[ $LATEST == 0 ]] && is_ok "$PREFIX/$name" "$pkg" "$version" "$bin" "$check"; then
    log "$name: $pkg==$version already installed"
  else
    need+=("$line")
  fi
done
[[ ${#need[@]} == 0 ]] && exit 0

if ! PY="$(find_python)"; then
  msg="no Python >= 3.12 found (pyenv versions, PATH; or set AGENT_BRIDGE_AGENT_PYTHON): cannot install ${need[*]%% *}"
  if [[ "${AGENT_BRIDGE_REQUIRE_CLIS:-}" == "1" || "${CI:-}" == "true" ]]; then
    log "ERROR: $msg"
    exit 1
  fi
  log "LOUD SKIP: $msg; their end-to-end tests will skip"
  exit 0
fi
log "using $PY ($("$PY" --version 2>&1))"

install_one() {  # line -> installs into $PREFIX/<name>, logs into $PREFIX/<name>.log
  local name pkg version bin check venv spec
  read -r name pkg version bin check <<<"$1"
  venv="$PREFIX/$name"
  if [[ $LATEST == 1 ]]; then spec="$pkg"; else spec="$pkg==$version"; fi
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  # --upgrade for --latest: the newest release even when pip's cache has an older one.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --upgrade "$spec" >"$PREFIX/$name.log" 2>&1
}

pids=()
for line in "${need[@]}"; do
  read -r name _ <<<"$line"
  log "$name: installing into $PREFIX/$name"
  install_one "$line" & pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done

for line in "${need[@]}"; do
  read -r name pkg version bin check <<<"$line"
  if ! is_ok "$PREFIX/$name" "$pkg" "$version" "$bin" "$check"; then
    log "$name: $pkg==$version did not install or does not run (pip's log: $PREFIX/$name.log)"
    grep -v '^WARNING: Location' "$PREFIX/$name.log" | tail -20 >&2 || true
    exit 1
  fi
  log "$name: $pkg==$(installed_version "$PREFIX/$name" "$pkg")"
done
exit $status
