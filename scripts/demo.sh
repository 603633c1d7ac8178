#!/usr/bin/env bash
# The main job: set up agent-bridge and run the demo (a real `agent-bridge serve` child
# driven through a scripted session: streamed text, an approval, an interrupt).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
exec .venv/bin/agent-bridge demo "$@"
