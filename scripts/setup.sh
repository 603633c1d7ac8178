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
# "compat" editable mode puts the checkout on sys.path with a .pth line instead of an
# import hook, which keeps interpreter start-up (and so the bridge's) fast.
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  --config-settings editable_mode=compat -e ".${extra}"
