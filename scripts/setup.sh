#!/usr/bin/env bash
# Create .venv (if missing) and install agent-bridge into it, editable.
#   bash scripts/setup.sh         # runtime dependencies only
#   bash scripts/setup.sh --dev   # plus test and lint tools
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "agent-bridge needs Python >= 3.11")'
if [[ ! -x .venv/bin/python ]]; then
  "$PYTHON" -m venv .venv
fi
extra=""
[[ "${1:-}" == "--dev" ]] && extra="[dev]"
# "strict" editable mode builds build/__editable__.*/agent_bridge, a tree of links to the
# files of bridge/, rpc/ and adapters/ (the one import root, see pyproject.toml), and puts
# it on sys.path with a .pth line: no import hook (start-up stays fast) and a real
# package tree that mypy can read.  A new module needs this script run again.
rm -rf build/__editable__.*
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  --config-settings editable_mode=strict -e ".${extra}"
