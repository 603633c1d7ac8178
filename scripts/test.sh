#!/usr/bin/env bash
# The test command: sets everything up on a fresh machine, then runs the whole check
# (scripts/check: ruff, strict type checks of the package and the tests, the layering
# contracts; then the test suite with warnings as errors and a per-test timeout).
# Needs Python >= 3.11; Node.js and npm for the real provider CLIs.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -k claude  # extra arguments go to pytest
#   bash scripts/test.sh --fast     # only .venv: the static checks and the tests that need no
#                                   # provider CLI, editor, ACP client or package index
#
# Everything installs a lot: the pinned provider CLIs, ACP clients, code-server with a
# headless Chromium and Neovim under .tools/ (about 2 GB), and, as root with apt-get,
# Debian packages system-wide (chromium, g++, make, libkrb5-dev, ripgrep, emacs-nox, vim,
# tmux, elpa-package-lint, openssh-server, e2fsprogs, postgresql). --fast installs none of it.
#
# In CI (CI=true) a provider CLI that cannot be installed is a failure; elsewhere the
# end-to-end tests that need it are skipped with a loud reason.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/apt.sh
source "$ROOT/scripts/lib/apt.sh"
cd "$ROOT"

bash scripts/setup.sh --dev

if [[ "${1:-}" == "--fast" ]]; then
  shift
  PY="$ROOT/.venv/bin/python"
  bash scripts/check
  echo "== pytest (fast: no e2e, editors, ACP clients or hardening)"
  # Not a CI run, whatever the environment says: a missing tool is a skip here.
  exec env -u CI -u AGENT_BRIDGE_REQUIRE_CLIS -u AGENT_BRIDGE_REQUIRE_EDITORS \
    "$PY" -m pytest -m "not e2e" \
    --ignore=tests/hardening --ignore=tests/test_editor_emacs.py \
    --ignore=tests/test_editor_neovim.py --ignore=tests/test_editor_vscode.py \
    --ignore=tests/test_editor_frictions.py --ignore=tests/test_acp_agent_acpx.py \
    --ignore=tests/test_readme_quickstarts.py "$@"
fi

if [[ "${CI:-}" == "true" ]]; then
  export AGENT_BRIDGE_REQUIRE_CLIS=1
fi
if command -v npm >/dev/null 2>&1; then
  bash scripts/install-provider-clis.sh
elif [[ "${AGENT_BRIDGE_REQUIRE_CLIS:-}" == "1" ]]; then
  echo "npm is required to install the provider CLIs" >&2
  exit 1
else
  echo "WARNING: npm not found: the real-CLI end-to-end tests will be skipped" >&2
fi

# The real ACP clients that drive `agent-bridge acp` (acpx on its own Node >= 22).
if command -v npm >/dev/null 2>&1; then
  bash scripts/install-acp-clients.sh
elif [[ "${AGENT_BRIDGE_REQUIRE_CLIS:-}" == "1" ]]; then
  echo "npm is required to install the ACP clients" >&2
  exit 1
fi

# code-server, headless Chromium and the extension's build tools (tests/test_editor_vscode.py).
bash scripts/install-vscode-host.sh || [[ "${AGENT_BRIDGE_REQUIRE_CLIS:-}" != "1" ]]

# A real OpenSSH server for the remote-use tests (`connect` through ssh on 127.0.0.1).
if [[ ! -x /usr/sbin/sshd ]]; then
  if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing openssh-server (for the ssh transport tests)"
    apt_get update -qq >/dev/null
    apt_get install -y -qq --no-install-recommends \
      openssh-server openssh-client >/dev/null
  else
    echo "WARNING: no sshd and no root apt-get: the ssh transport tests will be skipped" >&2
  fi
fi

# The real editors the editor-client tests drive (Neovim, Emacs, Vim, tmux).
if [[ "${CI:-}" == "true" ]]; then
  export AGENT_BRIDGE_REQUIRE_EDITORS=1
fi
bash scripts/install-editors.sh

# e2fsprogs for the read-only remount test (a loop-mounted ext4 image made with
# mkfs.ext4; tests/hardening/test_hard_storage.py).
if ! command -v mkfs.ext4 >/dev/null 2>&1; then
  if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing e2fsprogs (for the read-only remount test)"
    apt_get update -qq >/dev/null
    apt_get install -y -qq --no-install-recommends \
      e2fsprogs >/dev/null
  else
    echo "WARNING: no mkfs.ext4 and no root apt-get: the read-only remount test will be skipped" >&2
  fi
fi

# PostgreSQL for the PostgreSQL journal's tests (a throwaway cluster per test session,
# tests/pgcluster.py: initdb and pg_ctl from /usr/lib/postgresql/*/bin, run as `postgres`).
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && ! command -v initdb >/dev/null 2>&1; then
  if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing postgresql (for the PostgreSQL journal tests)"
    apt_get update -qq >/dev/null
    apt_get install -y -qq --no-install-recommends postgresql >/dev/null
  else
    echo "WARNING: no PostgreSQL and no root apt-get: the PostgreSQL journal tests will be skipped" >&2
  fi
fi

PY="$ROOT/.venv/bin/python"
# The fast first gate: ruff, mypy on the package and the tests, the layering contracts.
bash scripts/check
echo "== pytest"
"$PY" -m pytest "$@"
