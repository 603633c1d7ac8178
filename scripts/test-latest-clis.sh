#!/usr/bin/env bash
# Version drift: install the newest published provider CLIs (Claude Code, Codex, Gemini
# CLI, claude-agent-acp, codex-acp, OpenCode, Qwen Code, ACP's schema package) into .tools/npm-latest
# (and fast-agent, Mistral Vibe into .tools/py-latest) and run
# every real-CLI end-to-end test (pytest -m e2e) against them. CI keeps the pinned
# versions (scripts/test.sh); this is the one command to see whether the newest releases
# still work. Assertions on pinned versions and pinned upstream defects are relaxed
# (tests/provider_clis.py: pinned()); a missing CLI fails.
#
#   bash scripts/test-latest-clis.sh            # all real-CLI e2e tests
#   bash scripts/test-latest-clis.sh -k gemini  # extra arguments go to pytest
#
# When they pass, record the versions printed by the installer in
# docs/providers/versions.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh --dev
bash scripts/install-provider-clis.sh --latest
export AGENT_BRIDGE_TOOLS_DIR="$ROOT/.tools/npm-latest"
export AGENT_BRIDGE_LATEST_CLIS=1
export AGENT_BRIDGE_REQUIRE_CLIS=1
# The env overrides of tests/provider_clis.py would point elsewhere: drop them.
unset AGENT_BRIDGE_CLAUDE_PATH AGENT_BRIDGE_CODEX_PATH AGENT_BRIDGE_GEMINI_PATH \
  AGENT_BRIDGE_ACP_CLAUDE_ACP_PATH AGENT_BRIDGE_ACP_CODEX_ACP_PATH AGENT_BRIDGE_ACP_SCHEMA \
  AGENT_BRIDGE_OPENCODE_PATH AGENT_BRIDGE_QWEN_PATH AGENT_BRIDGE_FAST_AGENT_PATH \
  AGENT_BRIDGE_MISTRAL_VIBE_PATH
exec .venv/bin/python -m pytest -m e2e "$@"
