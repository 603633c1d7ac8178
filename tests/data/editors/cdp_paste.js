// Pastes an image into the VS Code chat webview of a running headless Chromium through the
// DevTools protocol (tests/test_editor_vscode.py): in the frame that holds the chat's input
// box, a `paste` ClipboardEvent whose clipboard holds the image file is dispatched on the
// input box, as a user's Ctrl+V of a screenshot does; the chat's own paste handler reads it.
//   node [--experimental-websocket] cdp_paste.js DEVTOOLS_PORT PAGE_URL_PART CHAT_TITLE MIME_TYPE BASE64
// Prints the number of frames that took it (1 when it reached the chat).
async function connect(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error(`cannot connect to ${url}`));
  });
  let next = 0;
  const waiting = new Map();
  const listeners = [];
  ws.onmessage = (ev) => {
    const m = JSON.parse(String(ev.data));
    if (m.method) for (const l of listeners) l(m);
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.error) w.reject(new Error(JSON.stringify(m.error)));
    else w.resolve(m.result);
  };
  const call = (method, params = {}, sessionId) =>
    new Promise((resolve, reject) => {
      const id = ++next;
      waiting.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  return { ws, call, listeners };
}

const PASTE = (title, mime, b64) => `(() => {
  const input = document.getElementById("input");
  const header = document.getElementById("header");
  if (!input || !header || !header.innerText.includes(${JSON.stringify(title)})) return false;
  const bytes = Uint8Array.from(atob(${JSON.stringify(b64)}), (c) => c.charCodeAt(0));
  const dt = new DataTransfer();
  dt.items.add(new File([bytes], "pasted.png", { type: ${JSON.stringify(mime)} }));
  input.focus();
  input.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
  return true;
})()`;

async function main() {
  const [port, urlPart, title, mime, b64] = process.argv.slice(2);
  const version = await (await fetch(`http://127.0.0.1:${port}/json/version`)).json();
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const page = targets.find((t) => t.type === "page" && t.url.includes(urlPart));
  if (!page) throw new Error(`no page with ${urlPart}`);
  const { ws, call, listeners } = await connect(version.webSocketDebuggerUrl);
  // Every frame's execution contexts: the page's own and those of out-of-process frames.
  const contexts = [];
  listeners.push((m) => {
    if (m.method === "Runtime.executionContextCreated") contexts.push({ sessionId: m.sessionId, id: m.params.context.id });
  });
  const { sessionId } = await call("Target.attachToTarget", { targetId: page.id, flatten: true });
  const sessions = [sessionId];
  listeners.push((m) => {
    if (m.method === "Target.attachedToTarget") sessions.push(m.params.sessionId);
  });
  await call("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: true }, sessionId);
  await new Promise((r) => setTimeout(r, 300));
  for (const s of [...sessions]) {
    await call("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: true }, s).catch(() => undefined);
  }
  await new Promise((r) => setTimeout(r, 300));
  for (const s of [...sessions]) await call("Runtime.enable", {}, s).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 500));
  let took = 0;
  for (const c of contexts) {
    const r = await call("Runtime.evaluate", { expression: PASTE(title, mime, b64), contextId: c.id, returnByValue: true }, c.sessionId).catch(() => undefined);
    if (r && r.result && r.result.value === true) took++;
  }
  console.log(took);
  ws.close();
}
main().catch((err) => {
  console.error(String(err));
  process.exit(1);
});
