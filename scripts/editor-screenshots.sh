#!/usr/bin/env bash
# Make the READMEs' screenshots from REAL runs (not run in CI):
# Neovim and Emacs run in tmux against the real bridge and the scripted provider, are
# driven with send-keys, their screens read with `tmux capture-pane -p -e`, turned into
# HTML by ansi2html and into PNGs by headless Chromium; VS Code through its own
# script (editors/vscode/scripts/screenshot.sh: code-server in headless Chromium).
#
#   bash scripts/editor-screenshots.sh     # writes editors/neovim/screenshot.png,
#                                          # editors/emacs/screenshot.png,
#                                          # editors/vscode/docs/{screenshot,diff}.png
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/apt.sh
source "$ROOT/scripts/lib/apt.sh"
cd "$ROOT"
bash scripts/setup.sh >/dev/null
bash scripts/install-editors.sh >/dev/null
if ! command -v chromium >/dev/null 2>&1; then
  apt_get update -qq >/dev/null
  apt_get install -y -qq \
    --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
TOOLS="$ROOT/.tools/editors/bin"
WORK="$(mktemp -d)"
SOCK="$WORK/tmux.sock"
trap 'tmux -S "$SOCK" kill-server 2>/dev/null || true; rm -rf "$WORK"' EXIT
BRIDGE="$ROOT/.venv/bin/agent-bridge"
SCRIPT="$ROOT/tests/data/editors/session_script.json"
export HOME="$WORK/home" TERM=xterm-256color COLORTERM=truecolor
mkdir -p "$HOME"

keys() { tmux -S "$SOCK" send-keys -t shot "$@"; }
# Wait until the screen shows $1 (at most 20 s).
wait_for() {
  for _ in $(seq 200); do
    if tmux -S "$SOCK" capture-pane -p -t shot | grep -qF -- "$1"; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for: $1" >&2
  tmux -S "$SOCK" capture-pane -p -t shot >&2
  return 1
}
# Capture the screen into PNG $1.
shoot() {
  local name="$WORK/$(basename "$1" .png)"
  tmux -S "$SOCK" capture-pane -p -e -t shot >"$name.ansi"
  "$TOOLS/ansi2html" --title "agent-bridge" <"$name.ansi" >"$name.html"
  sed -i 's|</style>|pre.ansi2html-content { font-family: "DejaVu Sans Mono", monospace; font-size: 14px; line-height: 1.2; margin: 8px; } body.body_background { background-color: #000; }</style>|' "$name.html"
  chromium --headless=new --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$WORK/chromium" --window-size=1060,690 \
    --screenshot="$1" "file://$name.html" >/dev/null 2>&1
  echo "wrote $1"
}
start() { tmux -S "$SOCK" new-session -d -s shot -x 120 -y 36 "$@"; }
stop() { tmux -S "$SOCK" kill-server 2>/dev/null || true; sleep 0.5; }

# --- Neovim -------------------------------------------------------------------------
cat >"$WORK/init.lua" <<LUA
vim.opt.rtp:prepend('$ROOT/editors/neovim')
vim.o.termguicolors = true
vim.o.laststatus = 2
require('agent_bridge').setup({ cmd = { '$BRIDGE' }, state_dir = '$WORK/state-nvim' })
LUA
start "$TOOLS/nvim" -u "$WORK/init.lua" -i NONE -n
sleep 1
keys ":AgentBridge new scripted scriptFile=$SCRIPT title=Fix-the-build" Enter
wait_for "# agent-bridge"
# the prompt typed into the chat's prompt area (the cursor is there) and sent with C-s;
# then the next prompt is being written there: the approval waits (counted in the bar,
# not asked over the prompt area while the user types), so the prompt area stays in view
keys "i" "Fix the build" C-s
wait_for "1 pending approval"
keys "i" "and then run the tests"
wait_for "and then run the tests"
shoot "$ROOT/editors/neovim/screenshot.png"
stop

# --- Emacs --------------------------------------------------------------------------
cat >"$WORK/init.el" <<ELISP
(add-to-list 'load-path "$ROOT/editors/emacs")
(require 'agent-bridge)
(setq agent-bridge-command '("$BRIDGE") agent-bridge-state-directory "$WORK/state-emacs"
      inhibit-startup-screen t)
(load-theme 'wombat t)
(agent-bridge-new-session "scripted" '(:scriptFile "$SCRIPT") "Fix-the-build")
ELISP
start emacs -nw -Q -l "$WORK/init.el"
wait_for "# agent-bridge"
keys C-x 1 M-x "agent-bridge-prompt" Enter "Fix the build" Enter
wait_for "[Allow once]"
# the prompt area below the chat, a next prompt being written in it
keys i
wait_for "RET sends"
keys "and then run the tests"
wait_for "and then run the tests"
shoot "$ROOT/editors/emacs/screenshot.png"
stop

# --- VS Code ------------------------------------------------------------------------
# code-server in headless Chromium, driven by the extension's demo mode: its own script.
bash "$ROOT/editors/vscode/scripts/screenshot.sh"
bash "$ROOT/editors/vscode/scripts/screenshot.sh" --diff
