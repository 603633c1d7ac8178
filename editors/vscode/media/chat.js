// The chat webview's script: draws what the extension renders, keeps the <details>
// the user opened open across re-renders, sends button clicks back, and reports the
// text it shows (the extension's tests read it).
(function () {
  const vscode = acquireVsCodeApi();
  const chat = document.getElementById("chat");
  const header = document.getElementById("header");
  const input = document.getElementById("input");
  const send = document.getElementById("send");
  const stop = document.getElementById("stop");
  const attachments = document.getElementById("attachments");
  const commands = document.getElementById("commands");
  commands.addEventListener("click", () => vscode.postMessage({ type: "commands" }));
  header.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-action=setting]");
    if (b) vscode.postMessage({ type: "setting", which: b.dataset.which });
  });
  const userToggled = new Map();
  // Follow the output unless the user scrolled up (a card opened below keeps following).
  let follow = true;
  const atBottom = () => window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  window.addEventListener("scroll", () => { follow = atBottom(); }, { passive: true });

  chat.addEventListener("click", (ev) => {
    // Only the user's own clicks on a card's summary count as toggles: the "toggle"
    // event also fires for a re-render's `open` (a thinking block open while it
    // streams), which kept that block open after the turn.
    const summary = ev.target.closest("summary");
    const d = summary && summary.parentElement;
    if (d && d.dataset && d.dataset.key) userToggled.set(d.dataset.key, !d.open);
  });

  chat.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-action]");
    if (!b) return;
    const a = b.dataset.action;
    if (a === "answer") vscode.postMessage({ type: "answer", interactionId: b.dataset.interaction, option: Number(b.dataset.option) });
    if (a === "prompt") vscode.postMessage({ type: "prompt", interactionId: b.dataset.interaction });
    if (a === "fork") vscode.postMessage({ type: "fork", atEvent: b.dataset.seq ? Number(b.dataset.seq) : null });
    if (a === "openEdit") vscode.postMessage({ type: "openEdit", runId: b.dataset.run, toolCallId: b.dataset.tool, index: Number(b.dataset.index) });
  });

  function submit() {
    const text = input.value.trim();
    if (!text) return;
    vscode.postMessage({ type: "send", text });
    input.value = "";
    follow = true; // the user's own prompt, and the reply to it, are always shown
    window.scrollTo(0, document.body.scrollHeight);
  }
  send.addEventListener("click", submit);
  input.addEventListener("keydown", (ev) => {
    // Enter sends, Shift+Enter is a new line (as in the agents' own chats).
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); submit(); }
  });
  stop.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));
  document.getElementById("attach").addEventListener("click", () => vscode.postMessage({ type: "attachFile" }));
  attachments.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-action=detach]");
    if (b) vscode.postMessage({ type: "detach", index: Number(b.dataset.index) });
  });
  // A pasted image goes with the next prompt (the extension checks its type and size).
  document.addEventListener("paste", (ev) => {
    const items = ev.clipboardData ? [...ev.clipboardData.items] : [];
    const images = items.filter((i) => i.kind === "file" && i.type.startsWith("image/"));
    if (!images.length) return;
    ev.preventDefault();
    for (const item of images) {
      const file = item.getAsFile();
      if (!file) continue;
      const reader = new FileReader();
      reader.onload = () => vscode.postMessage({ type: "pasteImage", dataUrl: String(reader.result), name: file.name || "" });
      reader.readAsDataURL(file);
    }
  });
  // The extension's keybindings (Ctrl+Alt+X interrupt, Ctrl+Alt+Y answer, …) work in the
  // chat too: code-server does not pass a key pressed in a webview on to the workbench,
  // so the chat maps them itself and stops the key there (where a workbench does pass it
  // on, it then runs once, not twice).
  const mac = /Mac/.test(navigator.platform);
  const bindings = JSON.parse(document.body.dataset.keys || "[]");
  const keySpec = (ev) => {
    const m = /^Key([A-Z])$/.exec(ev.code || "");
    if (!m) return "";
    const mods = [];
    if (ev.ctrlKey) mods.push("ctrl");
    if (ev.shiftKey) mods.push("shift");
    if (ev.altKey) mods.push("alt");
    if (ev.metaKey) mods.push("cmd");
    return [...mods, m[1].toLowerCase()].join("+");
  };
  const normal = (k) => k.split("+").sort().join("+");
  document.addEventListener("keydown", (ev) => {
    const spec = keySpec(ev);
    if (!spec || !(ev.ctrlKey || ev.altKey || ev.metaKey)) return;
    const b = bindings.find((x) => normal((mac && x.mac) || x.key) === normal(spec));
    if (!b) return;
    ev.preventDefault();
    ev.stopPropagation();
    vscode.postMessage({ type: "command", command: b.command });
  }, true);

  // Escape in the chat interrupts the running turn (as in the agents' own chats).
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !stop.disabled) {
      ev.preventDefault();
      vscode.postMessage({ type: "cancel" });
    }
  });

  // The user's focus in the input box is reported (Agent Bridge: Focus the Chat puts it there).
  input.addEventListener("focus", () => vscode.postMessage({ type: "focused" }));
  // the chat the user is in: "Send the Selection…" from an editor goes to it
  window.addEventListener("focus", () => vscode.postMessage({ type: "entered" }));

  window.addEventListener("message", (ev) => {
    const m = ev.data;
    if (m && m.type === "focus") {
      input.focus();
      return;
    }
    if (!m || m.type !== "render") return;
    header.innerHTML = m.header;
    chat.innerHTML = m.html;
    attachments.innerHTML = m.attachments || "";
    attachments.hidden = !m.attachments;
    for (const d of chat.querySelectorAll("details[data-key]")) {
      if (userToggled.has(d.dataset.key)) d.open = userToggled.get(d.dataset.key);
    }
    stop.disabled = !m.running;
    commands.hidden = !m.commands;
    if (follow) window.scrollTo(0, document.body.scrollHeight);
    const open = [...chat.querySelectorAll("details[open]")].map((d) => d.className.split(" ")[0]);
    vscode.postMessage({ type: "rendered", version: m.version, text: header.innerText + "\n" + chat.innerText, open, attachments: attachments.innerText });
  });

  vscode.postMessage({ type: "ready" });
})();
