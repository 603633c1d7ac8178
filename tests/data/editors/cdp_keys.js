// Presses keys in a page of a running headless Chromium through the DevTools protocol, as
// a user's keyboard would (tests/test_editor_vscode.py: the extension's keybindings in
// code-server's workbench).
//   node [--experimental-websocket] cdp_keys.js DEVTOOLS_PORT PAGE_URL_PART KEY...
// (Node 20 needs the flag for its WebSocket; 22 and later have it on.)
// A KEY is like "ctrl+alt+a": modifiers (ctrl, alt, shift, meta) and one letter; or "escape".
const MODIFIERS = { alt: 1, ctrl: 2, meta: 4, shift: 8 };

function keyEvents(spec) {
  const parts = spec.toLowerCase().split("+");
  const letter = parts.pop();
  if (letter === "escape" && !parts.length) {
    const esc = { modifiers: 0, key: "Escape", code: "Escape", windowsVirtualKeyCode: 27, nativeVirtualKeyCode: 27 };
    return [{ type: "rawKeyDown", ...esc }, { type: "keyUp", ...esc }];
  }
  if (!/^[a-z]$/.test(letter)) throw new Error(`not a letter key: ${spec}`);
  let modifiers = 0;
  for (const m of parts) {
    if (!(m in MODIFIERS)) throw new Error(`unknown modifier ${m} in ${spec}`);
    modifiers |= MODIFIERS[m];
  }
  const code = `Key${letter.toUpperCase()}`;
  const vk = letter.toUpperCase().charCodeAt(0);
  const base = { modifiers, key: letter, code, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk };
  return [{ type: "rawKeyDown", ...base }, { type: "keyUp", ...base }];
}

async function main() {
  const [port, urlPart, ...keys] = process.argv.slice(2);
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const page = targets.find((t) => t.type === "page" && t.url.includes(urlPart));
  if (!page) throw new Error(`no page with ${urlPart}: ${JSON.stringify(targets.map((t) => t.url))}`);
  const ws = new WebSocket(page.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error("cannot connect to the page"));
  });
  let next = 0;
  const waiting = new Map();
  ws.onmessage = (ev) => {
    const m = JSON.parse(String(ev.data));
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.error) w.reject(new Error(JSON.stringify(m.error)));
    else w.resolve(m.result);
  };
  const call = (method, params) =>
    new Promise((resolve, reject) => {
      const id = ++next;
      waiting.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  for (const k of keys) for (const e of keyEvents(k)) await call("Input.dispatchKeyEvent", e);
  ws.close();
}
main().catch((err) => {
  console.error(String(err));
  process.exit(1);
});
