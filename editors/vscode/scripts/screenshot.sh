#!/usr/bin/env bash
# Makes the README's screenshot from a real run: builds the .vsix, installs it into
# code-server, opens the workbench in headless Chromium, lets the extension's demo mode
# (src/demoMode.ts) run a scripted session against the real bridge, and captures the page
# through the DevTools protocol. Not run in CI.
#
#   editors/vscode/scripts/screenshot.sh [OUT.png]          # default: editors/vscode/docs/screenshot.png
#   editors/vscode/scripts/screenshot.sh --diff [OUT.png]   # the edit in the diff view (docs/diff.png)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TOOLS="${AGENT_BRIDGE_VSCODE_TOOLS:-$ROOT/.tools/vscode-host}"
DIFF=""
if [[ "${1:-}" == "--diff" ]]; then DIFF=1; shift; fi
OUT="$(realpath -m "${1:-$HERE/docs/$([[ -n $DIFF ]] && echo diff || echo screenshot).png}")"
CS="$TOOLS/node_modules/code-server/out/node/entry.js"
T="$(mktemp -d)"
CS_PID=""; BR_PID=""
cleanup() {
  # Each was started in its own process group (setsid): end exactly those groups.
  [[ -n "$BR_PID" ]] && kill -TERM -- "-$BR_PID" 2>/dev/null || true
  [[ -n "$CS_PID" ]] && kill -TERM -- "-$CS_PID" 2>/dev/null || true
  sleep 1
  rm -rf "$T"
}
trap cleanup EXIT

bash "$HERE/build.sh" --no-tests --out "$T/shipped.vsix" --hooks-out "$T/ext.vsix"
mkdir -p "$T/ud/User" "$T/exts" "$T/home" "$T/ws"
printf "print('hello, world')\n" >"$T/ws/hello.py"
cat >"$T/ud/User/settings.json" <<JSON
{"agentBridge.bridgePath": "$ROOT/.venv/bin/agent-bridge", "agentBridge.stateDir": "$T/state",
 "agentBridge.sessionOptions": {"scripted": {"scriptFile": "$HERE/scripts/demo-script.json"}},
 "workbench.startupEditor": "none", "security.workspace.trust.enabled": false,
 "telemetry.telemetryLevel": "off", "update.mode": "none", "workbench.tips.enabled": false,
 "extensions.autoCheckUpdates": false, "workbench.colorTheme": "Default Dark Modern"}
JSON
export HOME="$T/home"
node "$CS" --user-data-dir "$T/ud" --extensions-dir "$T/exts" --install-extension "$T/ext.vsix" >/dev/null
PORT=$((20000 + RANDOM % 20000)); DT=$((PORT + 1))
AGENT_BRIDGE_VSCODE_DEMO="$T/ready.json" AGENT_BRIDGE_VSCODE_DEMO_DIFF="$DIFF" setsid node "$CS" --bind-addr "127.0.0.1:$PORT" --auth none \
  --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
  --user-data-dir "$T/ud" --extensions-dir "$T/exts" "$T/ws" >"$T/cs.log" 2>&1 &
CS_PID=$!
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done
setsid chromium --headless=new --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --no-default-browser-check \
  --window-size=1400,860 --force-device-scale-factor=1 --remote-debugging-port="$DT" \
  --user-data-dir="$T/chromium" "http://127.0.0.1:$PORT/?folder=$T/ws" >/dev/null 2>&1 &
BR_PID=$!
for _ in $(seq 1 240); do [[ -f "$T/ready.json" ]] && break; sleep 0.25; done
[[ -f "$T/ready.json" ]] || { echo "the demo did not finish; code-server log:" >&2; tail -20 "$T/cs.log" >&2; exit 1; }
grep -q '"ok":true' "$T/ready.json" || { cat "$T/ready.json" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
TOOLS_NODE_MODULES="$TOOLS/node_modules" node "$HERE/scripts/cdp-screenshot.js" "$DT" "127.0.0.1:$PORT" "$OUT"
echo "wrote $OUT"
