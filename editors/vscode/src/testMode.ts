/**
 * Test mode: when VS Code starts the extension with AGENT_BRIDGE_VSCODE_TEST_RESULT set,
 * it runs one scripted session through the extension's own commands in the real
 * extension host, answering prompts at the UI seam (a scripted Ui that picks options by
 * label and records what each prompt offered), and writes what it saw to that file as
 * JSON. tests/test_editor_vscode.py sets it up (settings, the script) and asserts it.
 *
 * The scenario expects the scripted provider's script of that test (its titles and
 * texts). Nothing here runs unless the variable is set.
 */
import * as fs from "fs";
import * as vscode from "vscode";
import { ChatPanel } from "./chatPanel";
import type { ExtensionApi } from "./extension";
import type { ReattachResult } from "./sessions";
import type { PickItem, Ui } from "./ui";

interface PromptRecord {
  kind: "pick" | "input" | "file";
  title: string;
  offered: string[];
  answered: string | null;
}

interface Rule {
  /** A substring of the prompt's title. */
  title: string;
  /** The label to pick, the text to type, or null to dismiss. */
  answer: string | null;
  /** Used once, then dropped (else it stays for every matching prompt). */
  once: boolean;
}

/** A Ui that answers from rules and records every prompt and message. */
class ScriptedUi implements Ui {
  readonly prompts: PromptRecord[] = [];
  readonly errors: string[] = [];
  readonly infos: string[] = [];
  private rules: Rule[] = [];

  answer(title: string, answer: string | null, once = true): void {
    this.rules.push({ title, answer, once });
  }

  private take(title: string): string | null {
    const i = this.rules.findIndex((r) => title.includes(r.title));
    if (i < 0) return null;
    const r = this.rules[i];
    if (r.once) this.rules.splice(i, 1);
    return r.answer;
  }

  async pick<T>(title: string, items: PickItem<T>[], token?: vscode.CancellationToken): Promise<T | undefined> {
    const rec: PromptRecord = { kind: "pick", title, offered: items.map((i) => i.label), answered: null };
    this.prompts.push(rec);
    await delay(50);
    if (token?.isCancellationRequested) return undefined;
    const want = this.take(title);
    const item = want === null ? undefined : items.find((i) => i.label === want);
    rec.answered = item ? item.label : null;
    return item?.value;
  }

  async input(title: string, _placeholder?: string, token?: vscode.CancellationToken): Promise<string | undefined> {
    const rec: PromptRecord = { kind: "input", title, offered: [], answered: null };
    this.prompts.push(rec);
    await delay(20);
    if (token?.isCancellationRequested) return undefined;
    const want = this.take(title);
    rec.answered = want;
    return want ?? undefined;
  }

  async chooseFile(title: string, filters: Record<string, string[]>): Promise<string | undefined> {
    const rec: PromptRecord = { kind: "file", title, offered: Object.entries(filters).map(([k, v]) => `${k}: ${v.join(" ")}`), answered: null };
    this.prompts.push(rec);
    await delay(20);
    rec.answered = this.take(title);
    return rec.answered ?? undefined;
  }

  async error(message: string): Promise<string | undefined> {
    this.errors.push(message);
    return undefined;
  }

  async info(message: string): Promise<string | undefined> {
    this.infos.push(message);
    return undefined;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function until(what: string, cond: () => boolean, ms = 20000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for: ${what}`);
    await delay(25);
  }
}

/**
 * Asks the test to press `key` in the workbench (it watches for RESULT.keys, presses the
 * keys through Chromium's DevTools protocol, and removes the file); resolves once pressed.
 */
async function press(resultFile: string, key: string): Promise<void> {
  const request = `${resultFile}.keys`;
  fs.writeFileSync(`${request}.tmp`, JSON.stringify([key]));
  fs.renameSync(`${request}.tmp`, request);
  await until(`the test to press ${key}`, () => !fs.existsSync(request), 20000);
}

/**
 * Asks the test to paste an image into the chat titled `title` (it watches for
 * RESULT.paste and dispatches the paste in that webview through Chromium's DevTools
 * protocol); resolves with how many chats took it.
 */
async function paste(resultFile: string, title: string, mimeType: string, data: string): Promise<number> {
  const request = `${resultFile}.paste`;
  const done = `${resultFile}.pasted`;
  fs.writeFileSync(`${request}.tmp`, JSON.stringify({ title, mimeType, data }));
  fs.renameSync(`${request}.tmp`, request);
  await until("the test to paste", () => fs.existsSync(done), 30000);
  const n = Number(fs.readFileSync(done, "utf8"));
  fs.unlinkSync(done);
  return n;
}

/** A 1×1 PNG. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** The commands the extension contributes (and binds to keys) that have no handler. */
async function unboundCommands(): Promise<string[]> {
  const ext = vscode.extensions.all.find((e) => (e.packageJSON as { name?: string }).name === "agent-bridge-vscode");
  const c = (ext?.packageJSON as { contributes?: { commands?: { command: string }[]; keybindings?: { command: string }[] } })?.contributes;
  if (!c) return ["(the extension's package.json was not found)"];
  const registered = new Set(await vscode.commands.getCommands(true));
  return [...(c.commands ?? []), ...(c.keybindings ?? [])].map((x) => x.command).filter((id) => !registered.has(id));
}

/** Runs the scenario and writes the result file (also on failure, with `error`). */
export async function runScenario(api: ExtensionApi, resultFile: string): Promise<void> {
  const ui = new ScriptedUi();
  api.setUi(ui);
  const result: Record<string, unknown> = { steps: [] as string[] };
  const step = (s: string): void => {
    (result.steps as string[]).push(s);
  };
  const { store, bridge } = api;
  const exec = <T>(cmd: string, ...args: unknown[]): Promise<T> => Promise.resolve(vscode.commands.executeCommand<T>(cmd, ...args));
  const model = (id: string) => store.sessions.get(id)?.model;
  const snapshot = (id: string) => {
    const m = model(id);
    return m
      ? {
          transcript: m.transcript(),
          items: JSON.parse(JSON.stringify(m.items)) as unknown,
          lastSequence: m.lastSequence,
          gaps: JSON.parse(JSON.stringify(m.gaps)) as unknown,
          duplicates: m.duplicates,
          pendingApprovals: m.pendingApprovals,
        }
      : null;
  };
  const treeNodes = () => api.tree.nodes().map((n) => ({ id: n.sessionId, label: String(n.label), description: String(n.description ?? ""), contextValue: n.contextValue }));
  const transcriptHas = (id: string, text: string) => (model(id)?.transcript() ?? "").includes(text);
  try {
    // Show the Sessions view, so the tree is really drawn by the workbench.
    await exec("workbench.view.extension.agentBridge").catch(() => undefined);
    await exec("agentBridge.refreshSessions");
    result.treeAtStart = treeNodes();
    step("bridge started");

    // 1. New session through the provider picker, first prompt through the input box:
    //    thinking, streamed text, a tool call with an edit, an approval, a question.
    ui.answer("choose a provider", "Scripted (built-in)");
    ui.answer("Ask the agent", "Clean the build");
    ui.answer("Approval: Run `rm -rf build`", "Allow for this session");
    ui.answer("Question: Which test runner?", "pytest");
    const sessionId = await exec<string | undefined>("agentBridge.newSession");
    if (!sessionId) throw new Error(`newSession returned nothing; errors: ${ui.errors.join(" | ")}`);
    result.sessionId = sessionId;
    await until("turn 1 ends", () => transcriptHas(sessionId, "Using pytest.") && model(sessionId)?.runState === "idle");
    result.turn1 = snapshot(sessionId);
    step("turn 1 done");

    // 2. The edit in VS Code's diff view.
    const m1 = model(sessionId)!;
    const tool = m1.items.find((i) => i.kind === "tool" && i.edits.length > 0);
    if (!tool || tool.kind !== "tool") throw new Error("no tool call with an edit");
    const title = await exec<string | undefined>("agentBridge.openEdit", sessionId, tool.runId, tool.toolCallId, 0);
    await until("the diff tab", () => vscode.window.tabGroups.activeTabGroup.activeTab?.input instanceof vscode.TabInputTextDiff);
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab!;
    const input = tab.input as vscode.TabInputTextDiff;
    result.diff = {
      title,
      tabLabel: tab.label,
      original: (await vscode.workspace.openTextDocument(input.original)).getText(),
      modified: (await vscode.workspace.openTextDocument(input.modified)).getText(),
      scheme: input.modified.scheme,
    };
    step("diff opened");

    // 3. What the chat webview itself shows (its script reports its text).
    const panel = ChatPanel.panels.get(sessionId);
    if (!panel) throw new Error("no chat panel");
    panel.panel.reveal(undefined, false);
    result.webviewRendered = await panel.whenRendered(15000);
    result.webviewText = panel.rendered.text;
    result.webviewOpenCards = panel.rendered.open;
    step("webview rendered");

    // 3b. The keyboard: from a text editor, the focus-chat key puts the focus in the chat's
    //     input box (pressed by the test in the workbench, as a user would).
    const keys: Record<string, string> = {};
    result.keys = keys;
    result.unboundCommands = await unboundCommands();
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0].uri, "hello.py"));
    await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: false });
    await delay(300);
    const focusedBefore = panel.inputFocused;
    await press(resultFile, "ctrl+alt+a");
    await until("ctrl+alt+a focuses the chat input", () => panel.inputFocused > focusedBefore, 10000);
    keys["ctrl+alt+a"] = "chat input focused";
    step("focus key");

    // 4. A turn that thinks, then waits, interrupted with Escape in the chat. Its thinking
    //    is drawn open while it streams, and folded once the turn is over.
    await exec("agentBridge.prompt", { sessionId, text: "Keep working" });
    await until("turn 2 streams", () => transcriptHas(sessionId, "Working on it") && model(sessionId)?.runState === "running");
    await until("the webview draws turn 2", () => panel.rendered.text.includes("Working on it"), 15000);
    result.webviewOpenWhileStreaming = panel.rendered.open;
    await press(resultFile, "escape");
    await until("escape in the chat interrupts turn 2", () => transcriptHas(sessionId, "Turn interrupted"), 10000);
    keys["escape"] = "turn interrupted";
    await until("the webview draws the interrupted turn", () => panel.rendered.text.includes("Turn interrupted"), 15000);
    result.webviewOpenAfterTurn2 = panel.rendered.open;
    step("turn 2 interrupted");

    // 5. An approval left unanswered (prompt dismissed): it is pending, counted in the
    //    tree; the chat is closed; reattaching brings the history back with no gap and
    //    asks the approval again, which is then allowed.
    ui.answer("Approval: Deploy to production", null);
    await exec("agentBridge.prompt", { sessionId, text: "Deploy" });
    await until("the deploy approval is pending", () => store.pendingCount(sessionId) === 1 && ui.prompts.some((p) => p.title.includes("Deploy") && p.answered === null));
    await delay(200);
    result.pendingBeforeReattach = {
      count: store.pendingCount(sessionId),
      modelPendingApprovals: model(sessionId)?.pendingApprovals,
      tree: treeNodes().find((n) => n.id === sessionId),
    };
    const seqBeforeClose = model(sessionId)!.lastSequence;
    panel.panel.dispose();
    await until("the chat model is dropped", () => !model(sessionId));
    result.pendingWhileClosed = { count: store.pendingCount(sessionId), tree: treeNodes().find((n) => n.id === sessionId) };
    ui.answer("Approval: Deploy to production", "Allow once");
    const reattach = await exec<ReattachResult | undefined>("agentBridge.reattach", sessionId);
    result.reattach = reattach ? { via: reattach.via, replayed: reattach.replayed, seqBeforeClose } : null;
    await until("turn 3 ends after the approval came back", () => transcriptHas(sessionId, "Deployed.") && model(sessionId)?.runState === "idle");
    result.afterReattach = snapshot(sessionId);
    step("reattached");

    // 6. The bridge restarts (same state dir): the session is listed (closed) in the
    //    tree; reattaching resumes it and its sequence continues; a new turn runs.
    const seqBeforeRestart = model(sessionId)!.lastSequence;
    result.restarted = await exec<boolean>("agentBridge.restartBridge");
    result.treeAfterRestart = treeNodes();
    // What a click on the session in the Sessions view runs.
    const node = api.tree.nodes().find((n) => n.sessionId === sessionId);
    if (!node?.command) throw new Error("the session is not in the Sessions view after the restart");
    result.treeClick = node.command.command;
    const resumed = await exec<ReattachResult | undefined>(node.command.command, ...(node.command.arguments ?? []));
    result.resume = resumed ? { via: resumed.via, replayed: resumed.replayed, seqBeforeRestart, state: resumed.session.state } : null;
    await exec("agentBridge.prompt", { sessionId, text: "After restart" });
    await until("turn 4 ends", () => transcriptHas(sessionId, "You said: After restart") && model(sessionId)?.runState === "idle");
    result.afterRestart = snapshot(sessionId);
    const p2 = ChatPanel.panels.get(sessionId);
    if (p2) {
      result.webviewRenderedAfterRestart = await p2.whenRendered(15000);
      result.webviewTextAfterRestart = p2.rendered.text;
    }
    step("resumed after restart");

    // 6b. A turn that waits, interrupted from a text editor with the interrupt key (bound
    //     while a turn runs).
    await exec("agentBridge.prompt", { sessionId, text: "Wait" });
    await until("turn 5 runs", () => transcriptHas(sessionId, "Waiting for you") && model(sessionId)?.runState === "running");
    await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: false });
    await delay(500); // the running context key reaches the workbench
    await press(resultFile, "ctrl+alt+x");
    await until("ctrl+alt+x interrupts turn 5", () => (model(sessionId)?.transcript() ?? "").endsWith("-- Turn interrupted (user)"), 10000);
    keys["ctrl+alt+x"] = "turn interrupted";
    step("interrupt key");

    // 6c. The same key with the keyboard in the chat's input box (the webview).
    {
      await exec("agentBridge.prompt", { sessionId, text: "Wait" });
      await until("turn 6 runs", () => model(sessionId)?.runState === "running");
      const p6 = ChatPanel.panels.get(sessionId);
      if (!p6) throw new Error("no chat for turn 6");
      const focused = p6.inputFocused;
      p6.focusInput();
      await until("the chat input has the focus", () => p6.inputFocused > focused, 10000);
      await delay(500);
      await press(resultFile, "ctrl+alt+x");
      const t0 = Date.now();
      while (Date.now() - t0 < 5000 && model(sessionId)?.runState === "running") await delay(50);
      keys["ctrl+alt+x in the chat"] = model(sessionId)?.runState === "running" ? "nothing" : "turn interrupted";
      if (model(sessionId)?.runState === "running") await store.cancel(sessionId);
      await until("turn 6 ends", () => model(sessionId)?.runState === "idle");
    }

    // 7. A provider that is not installed: a clear message with the next step.
    const before = ui.errors.length;
    const none = await exec<string | undefined>("agentBridge.newSession", { provider: "gemini" });
    result.unavailableProvider = { sessionId: none ?? null, errors: ui.errors.slice(before) };

    // 7b. The model and mode chosen are in the chat's header: a Claude Code session whose
    //     CLI is the project's stand-in (given as the executable option).
    const fakeClaude = process.env.AGENT_BRIDGE_VSCODE_FAKE_CLAUDE;
    if (fakeClaude) {
      const cid = await exec<string | undefined>("agentBridge.newSession", {
        provider: "claude-code",
        options: { executable: fakeClaude, model: "sonnet", permissionMode: "plan" },
        title: "Chosen",
        prompt: false,
      });
      const p3 = cid ? ChatPanel.panels.get(cid) : undefined;
      if (!p3) throw new Error(`no chat for the claude-code session; errors: ${ui.errors.join(" | ")}`);
      await p3.whenRendered(15000);
      await until("the header of the claude-code chat", () => p3.rendered.text.includes("Chosen"), 15000);
      result.chosenHeaderText = p3.rendered.text.split("\n").slice(0, 6).join("\n");
      p3.panel.dispose();
    }

    // 7c. Subagents and limits: a scripted run (its script file from the test) whose
    //     subagent's calls go under the subagent's call, which reports a limit and fails
    //     on it; the webview shows the limit (header badge, a line) and when it resets.
    const limitsScript = process.env.AGENT_BRIDGE_VSCODE_LIMITS_SCRIPT;
    if (limitsScript) {
      const lid = await exec<string | undefined>("agentBridge.newSession", {
        provider: "scripted",
        options: { scriptFile: limitsScript },
        title: "Limits",
        prompt: false,
      });
      const p4 = lid ? ChatPanel.panels.get(lid) : undefined;
      if (!lid || !p4) throw new Error(`no chat for the limits session; errors: ${ui.errors.join(" | ")}`);
      await exec("agentBridge.prompt", { sessionId: lid, text: "Look into it" });
      await until("the limits run fails", () => transcriptHas(lid, "Turn failed") && model(lid)?.runState === "idle");
      await until("the webview draws the failure", () => p4.rendered.text.includes("Turn failed"), 15000);
      const task = model(lid)!.tool("task1");
      result.limits = {
        transcript: model(lid)!.transcript(),
        children: task ? task.children.map((c) => `${c.name} ${c.status}`) : null,
        webviewText: p4.rendered.text,
        webviewOpenCards: p4.rendered.open,
      };
      p4.panel.dispose();
      step("limits and subagents");
    }

    // 7d. Fork from a turn: a Claude Code session (the stand-in CLI) of two turns,
    //     forked at the first turn's end through the chat's "Fork from here" (the
    //     command it runs): the fork opens in its own chat with the first turn only.
    if (fakeClaude) {
      const oid = await exec<string | undefined>("agentBridge.newSession", {
        provider: "claude-code",
        // the model and mode given: nothing is asked
        options: { executable: fakeClaude, model: "sonnet", permissionMode: "plan" },
        title: "Forked",
        prompt: false,
      });
      if (!oid) throw new Error(`no claude-code session to fork; errors: ${ui.errors.join(" | ")}`);
      const turnsEnded = (id: string) => (model(id)?.transcript() ?? "").split("\n").filter((l) => l.startsWith("-- Turn completed")).length;
      await exec("agentBridge.prompt", { sessionId: oid, text: "ECHO:first" });
      await until("fork turn 1", () => turnsEnded(oid) === 1 && model(oid)?.runState === "idle");
      await exec("agentBridge.prompt", { sessionId: oid, text: "ECHO:second" });
      await until("fork turn 2", () => turnsEnded(oid) === 2 && model(oid)?.runState === "idle");
      const po = ChatPanel.panels.get(oid);
      if (po) await until("the fork buttons are drawn", () => po.rendered.text.includes("Fork from here"), 15000);
      const firstEnd = model(oid)!.items.find((i) => i.kind === "status" && i.endSequence !== undefined);
      const atEvent = firstEnd && firstEnd.kind === "status" ? firstEnd.endSequence : undefined;
      const fid = await exec<string | undefined>("agentBridge.fork", oid, atEvent);
      if (!fid) throw new Error(`the fork failed; errors: ${ui.errors.join(" | ")}`);
      await until("the fork's history", () => turnsEnded(fid) === 1);
      await exec("agentBridge.prompt", { sessionId: fid, text: "ECHO:third" });
      await until("the fork's own turn", () => turnsEnded(fid) === 2 && model(fid)?.runState === "idle");
      result.fork = {
        original: oid,
        fork: fid,
        atEvent: atEvent ?? null,
        originalTranscript: model(oid)!.transcript(),
        forkTranscript: model(fid)!.transcript(),
        forkPanel: ChatPanel.panels.has(fid),
        parent: store.sessions.get(fid)?.info.parent ?? null,
      };
      ChatPanel.panels.get(fid)?.panel.dispose();
      // 7d'. Fork from a message (Claude Code forks at messages: granularity message):
      //      a turn of a text, then a Read call, then the answer; "Fork from this
      //      message" at the text forks at its last delta, exactly; a fork in the middle
      //      of that text is cut earlier by the provider, and the user is told so.
      await exec("agentBridge.prompt", { sessionId: oid, text: "SAY:Let me look at it.;READ:hello.py" });
      await until("fork turn 3", () => turnsEnded(oid) === 3 && model(oid)?.runState === "idle");
      // The webview draws the model as it is now (turn 3 over): "Fork from this message"
      // already shows under turns 1 and 2, so its presence alone does not say turn 3 is drawn.
      if (po && !(await po.whenRendered(15000))) throw new Error("the chat did not draw turn 3");
      if (po) await until("the message fork buttons are drawn", () => po.rendered.text.includes("Tool finished."), 15000);
      const said = model(oid)!.items.find((i) => i.kind === "assistant" && i.text === "Let me look at it.");
      if (!said || said.kind !== "assistant") throw new Error(`no text message in turn 3: ${model(oid)!.transcript()}`);
      const infosBefore = ui.infos.length;
      const mid = await exec<string | undefined>("agentBridge.fork", oid, said.lastSequence);
      if (!mid) throw new Error(`the message fork failed; errors: ${ui.errors.join(" | ")}`);
      await until("the message fork's history", () => (model(mid)?.lastSequence ?? 0) >= said.lastSequence);
      const exactInfos = ui.infos.slice(infosBefore);
      const firstDelta = said.lastSequence - said.deltas + 1;
      const cut = await exec<string | undefined>("agentBridge.fork", oid, firstDelta);
      if (!cut) throw new Error(`the mid-text fork failed; errors: ${ui.errors.join(" | ")}`);
      result.messageFork = {
        atEvent: said.lastSequence,
        deltas: said.deltas,
        buttons: po ? po.rendered.text.split("Fork from this message").length - 1 : null,
        originalTranscript: model(oid)!.transcript(),
        forkTranscript: model(mid)!.transcript(),
        forkLast: model(mid)!.lastSequence,
        parent: store.sessions.get(mid)?.info.parent ?? null,
        exactInfos,
        cutAt: firstDelta,
        cutInfos: ui.infos.slice(infosBefore + exactInfos.length),
      };
      ChatPanel.panels.get(mid)?.panel.dispose();
      ChatPanel.panels.get(cut)?.panel.dispose();
      po?.panel.dispose();
      step("forked");
    }

    // 7e. Context: a scripted session whose runs reply with what they received (JSON).
    //     The selection of a saved file goes as a file block with its lines, an unsaved
    //     buffer as a resource block with its text, an image pasted in the chat as an
    //     image block; each is shown on the input box's bar until sent, then under the prompt.
    {
      const rid = await exec<string | undefined>("agentBridge.newSession", {
        provider: "scripted",
        options: { script: { steps: [{ type: "received" }] } },
        title: "Context",
        prompt: false,
      });
      const pr = rid ? ChatPanel.panels.get(rid) : undefined;
      if (!rid || !pr) throw new Error(`no chat for the context session; errors: ${ui.errors.join(" | ")}`);
      const replies = (): string[] => (model(rid)?.items ?? []).filter((i) => i.kind === "assistant").map((i) => (i.kind === "assistant" ? i.text : ""));
      const turns = (): number => (model(rid)?.transcript() ?? "").split("\n").filter((l) => l.startsWith("-- Turn")).length;
      const ctx: Record<string, unknown> = {};
      result.context = ctx;
      // (a) the selection of hello.py (line 1), attached, then a prompt sent from the chat
      const ed = await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: false });
      ed.selection = new vscode.Selection(0, 0, 0, 5);
      ctx.selectionBlock = await exec("agentBridge.sendContext", { sessionId: rid });
      await until("the bar shows the selection", () => pr.rendered.attachments.includes("hello.py:1-1"), 15000);
      ctx.barBeforeSend = pr.rendered.attachments;
      pr.receive({ type: "send", text: "Explain this" });
      await until("the selection run", () => turns() === 1 && model(rid)?.runState === "idle");
      await until("the bar is empty once sent", () => pr.rendered.attachments === "", 15000);
      // (b) an unsaved buffer, sent at once with a prompt
      const untitled = await vscode.workspace.openTextDocument({ content: "draft notes\nsecond line" });
      await vscode.window.showTextDocument(untitled, { preview: false, preserveFocus: false });
      ctx.unsavedBlock = await exec("agentBridge.sendContext", { sessionId: rid, text: "And these notes" });
      await until("the unsaved-buffer run", () => turns() === 2 && model(rid)?.runState === "idle");
      // (c) an image pasted in the chat (Ctrl+V of a screenshot), then a prompt
      const took = await paste(resultFile, "Context", "image/png", PNG);
      ctx.pastedInto = took;
      await until("the bar shows the image", () => pr.rendered.attachments.includes("image/png"), 15000);
      ctx.imageBar = pr.rendered.attachments;
      pr.receive({ type: "send", text: "What is in the picture?" });
      await until("the image run", () => turns() === 3 && model(rid)?.runState === "idle");
      // (d) an image the provider does not take: refused with a message, nothing attached
      const errs = ui.errors.length;
      pr.receive({ type: "pasteImage", dataUrl: "data:image/bmp;base64,Qk0=" });
      await until("the refusal", () => ui.errors.length > errs);
      ctx.refusedImage = ui.errors.slice(errs);
      ctx.attachmentsAfterRefusal = store.sessions.get(rid)?.attachments?.length ?? 0;
      // (e) an image FILE, picked with the chat's attach button in a file dialog; then a
      //     BMP file and one over the provider's 10 MiB (a sparse file: refused unread)
      const wsDir = vscode.workspace.workspaceFolders![0].uri.fsPath;
      const shot = `${wsDir}/shot.png`;
      fs.writeFileSync(shot, Buffer.from(PNG, "base64"));
      ui.answer("Attach which image?", shot);
      pr.receive({ type: "attachFile" });
      // (the bar may still show the pasted image a moment: wait for the store first)
      await until("the image file attached", () => (store.sessions.get(rid)?.attachments?.length ?? 0) === 1, 15000);
      await until("the bar shows the image file", () => pr.rendered.attachments.includes("image/png"), 15000);
      ctx.fileBar = pr.rendered.attachments;
      ctx.fileDialog = ui.prompts.filter((p) => p.kind === "file");
      pr.receive({ type: "send", text: "And this file?" });
      await until("the image file run", () => turns() === 4 && model(rid)?.runState === "idle");
      fs.writeFileSync(`${wsDir}/shot.bmp`, Buffer.from("Qk0=", "base64"));
      const big = `${wsDir}/huge.png`;
      fs.closeSync(fs.openSync(big, "w"));
      fs.truncateSync(big, 10 * 1024 * 1024 + 1);
      const ferrs = ui.errors.length;
      ctx.refusedFiles = [
        (await exec("agentBridge.attachImageFile", { sessionId: rid, path: `${wsDir}/shot.bmp` })) ?? null,
        (await exec("agentBridge.attachImageFile", { sessionId: rid, path: big })) ?? null,
      ];
      ctx.refusedFileErrors = ui.errors.slice(ferrs);
      ctx.attachmentsAfterFileRefusal = store.sessions.get(rid)?.attachments?.length ?? 0;
      // (f) "Send the Selection…" with no session named goes to the chat the user was in
      //     last: a newer chat ("Elsewhere") is opened, the user goes back into this one,
      //     then to hello.py, and sends its selection from there
      const oid = await exec<string | undefined>("agentBridge.newSession", {
        provider: "scripted",
        options: { script: { steps: [{ type: "received" }] } },
        title: "Elsewhere",
        prompt: false,
      });
      const po = oid ? ChatPanel.panels.get(oid) : undefined;
      if (!oid || !po) throw new Error("no chat for the second context session");
      // the user goes into the new chat, then back into this one (as a click on its tab)
      const into = async (p: ChatPanel, name: string): Promise<void> => {
        const focused = p.inputFocused;
        p.focusInput();
        await until(`the user is in the ${name} chat`, () => ChatPanel.lastActive === p && p.inputFocused > focused, 8000).catch((e: Error) => {
          throw new Error(`${e.message}: ${JSON.stringify({ active: p.panel.active, last: ChatPanel.lastActive?.sessionId ?? null })}`);
        });
      };
      await into(po, "Elsewhere");
      await into(pr, "Context");
      const ed2 = await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: false });
      ed2.selection = new vscode.Selection(0, 0, 0, 5);
      const sent = await exec<Record<string, unknown> | undefined>("agentBridge.sendContext");
      await until("the Context chat's bar shows the selection", () => pr.rendered.attachments.includes("hello.py:1-1"), 15000);
      ctx.defaultTarget = {
        block: sent ?? null,
        contextBar: pr.rendered.attachments,
        contextAttachments: store.sessions.get(rid)?.attachments?.length ?? 0,
        elsewhereAttachments: store.sessions.get(oid)?.attachments?.length ?? 0,
        picks: ui.prompts.filter((p) => p.title.includes("Send it to which session")).length,
      };
      po.panel.dispose();
      ctx.replies = replies();
      ctx.transcript = model(rid)!.transcript();
      await pr.whenRendered(15000);
      ctx.webviewText = pr.rendered.text;
      // (e) the scripted provider cannot fork (no capabilities.fork): no "Fork from here",
      //     and the fork command says why instead of asking the bridge
      const infos = ui.infos.length;
      const forkSent = bridge.trafficLines.filter((l) => l.includes('"method":"session/fork"')).length;
      ctx.forkRefused = {
        result: (await exec<string | undefined>("agentBridge.fork", rid)) ?? null,
        infos: ui.infos.slice(infos),
        requests: bridge.trafficLines.filter((l) => l.includes('"method":"session/fork"')).length - forkSent,
      };
      pr.panel.dispose();
      await vscode.commands.executeCommand("workbench.action.revertAndCloseActiveEditor").then(undefined, () => undefined);
      step("context");
    }

    // 7g. Slash commands and the model and mode, in the chat: a scripted session that
    //     names its commands and settings. The chat's "/" menu runs a command (its
    //     arguments asked), the header's model button changes the model, the mode is
    //     changed by command, and "/compact" typed in the chat is that command.
    {
      const sid2 = await exec<string | undefined>("agentBridge.newSession", {
        provider: "scripted",
        options: {
          script: {
            commands: [
              { name: "review", description: "Review the diff", hint: "<focus>" },
              { name: "compact", description: "Compact the context" },
            ],
            settings: {
              model: { current: "small", available: [{ id: "small", name: "Small" }, { id: "large", name: "Large" }] },
              mode: { current: "ask", available: [{ id: "ask" }, { id: "auto" }] },
            },
            runs: [
              { steps: [{ type: "received" }] },
              { steps: [{ type: "received" }] },
              {
                // the agent's commands change during a run (commands.updated)
                steps: [
                  {
                    type: "emit",
                    payloads: [
                      {
                        type: "commands.updated",
                        commands: [
                          { name: "review", description: "Review the diff", hint: "<focus>" },
                          { name: "deploy", description: "Deploy the branch" },
                        ],
                      },
                    ],
                  },
                  { type: "text", text: "Added deploy." },
                ],
              },
            ],
          },
        },
        title: "Menus",
        prompt: false,
      });
      const pm = sid2 ? ChatPanel.panels.get(sid2) : undefined;
      if (!sid2 || !pm) throw new Error(`no chat for the menus session; errors: ${ui.errors.join(" | ")}`);
      const turns = (): number => (model(sid2)?.transcript() ?? "").split("\n").filter((l) => l.startsWith("-- Turn")).length;
      const menus: Record<string, unknown> = {};
      result.menus = menus;
      await until("the header shows the model", () => pm.rendered.text.includes("model Small"), 15000);
      menus.headerBefore = pm.rendered.text.split("\n").slice(0, 6).join(" | ");
      ui.answer("Run which command?", "/review");
      ui.answer("/review <focus>", "the tests");
      pm.receive({ type: "commands" });
      await until("the command's run", () => turns() === 1 && model(sid2)?.runState === "idle");
      ui.answer("the model for the next turn", "Large");
      pm.receive({ type: "setting", which: "model" });
      await until("the header shows the new model", () => pm.rendered.text.includes("model Large"), 15000);
      ui.answer("the mode for the next turn", "auto");
      menus.modeChosen = (await exec<string | undefined>("agentBridge.changeMode", sid2)) ?? null;
      await until("the header shows the new mode", () => pm.rendered.text.includes("mode auto"), 15000);
      menus.headerAfter = pm.rendered.text.split("\n").slice(0, 6).join(" | ");
      pm.receive({ type: "send", text: "/compact" });
      await until("the typed command's run", () => turns() === 2 && model(sid2)?.runState === "idle");
      pm.receive({ type: "send", text: "Add a command" });
      await until("the run that changes the commands", () => turns() === 3 && model(sid2)?.runState === "idle");
      ui.answer("Run which command?", null);
      pm.receive({ type: "commands" });
      await until("the menu after the change", () => ui.prompts.filter((p) => p.title === "Run which command?").length === 2);
      menus.settings = store.sessions.get(sid2)?.settings ?? null;
      menus.transcript = model(sid2)!.transcript();
      menus.menu = ui.prompts.filter((p) => p.title === "Run which command?").map((p) => p.offered);
      menus.models = ui.prompts.filter((p) => p.title.includes("the model for the next turn")).map((p) => p.offered);
      pm.panel.dispose();
      step("menus");
    }

    // 7f. Continue a session: one quick pick of the bridge's sessions of the workspace and
    //     Claude Code's own (a session file its CLI wrote, in the test's CLAUDE_CONFIG_DIR).
    //     The CLI's session is continued in the bridge (its turn imported), a turn runs on
    //     it (the stand-in CLI resumed it), and picking it again opens the same session.
    if (fakeClaude) {
      const title = "Continue which session?";
      const offers = (): string[] => [...ui.prompts].reverse().find((p) => p.title.startsWith(title))?.offered ?? [];
      ui.answer(title, "say hello");
      const cid = await exec<string | undefined>("agentBridge.continueSession");
      if (!cid) throw new Error(`continuing failed; offered ${JSON.stringify(ui.prompts.filter((p) => p.title.startsWith(title)))}; errors: ${ui.errors.join(" | ")}`);
      const first = offers();
      await until("the imported history", () => transcriptHas(cid, "Imported"));
      const imported = model(cid)!.transcript();
      await exec("agentBridge.prompt", { sessionId: cid, text: "ECHO:again" });
      await until("the continued turn", () => transcriptHas(cid, "Turn ") && model(cid)?.runState === "idle");
      const pc = ChatPanel.panels.get(cid);
      if (pc) await pc.whenRendered(15000);
      const webviewText = pc?.rendered.text ?? "";
      ui.answer(title, "say hello");
      const again = await exec<string | undefined>("agentBridge.continueSession");
      result.continued = {
        sessionId: cid,
        provider: store.sessions.get(cid)?.info.providerId ?? null,
        offered: first,
        offeredAgain: offers(),
        imported,
        transcript: model(cid)!.transcript(),
        webviewText,
        again: again ?? null,
      };
      pc?.panel.dispose();
      step("continued");
    }

    // 8. Close the session; the traffic log holds the exchange.
    result.closed = await exec<boolean>("agentBridge.closeSession", sessionId);
    await until("closed", () => store.sessions.get(sessionId)?.info.state === "closed");
    result.treeAtEnd = treeNodes();
    const traffic = bridge.trafficLines;
    result.traffic = {
      lines: traffic.length,
      initialize: traffic.filter((l) => l.includes('"method":"initialize"')).length,
      interactionRequests: traffic.filter((l) => l.includes('"method":"interaction/request"')).length,
      cancelRequests: traffic.filter((l) => l.includes('"method":"$/cancelRequest"')).length,
      sample: traffic.filter((l) => l.includes("interaction/request")).slice(0, 2),
    };

    // 9. A bridge that is not where the setting says: a clear message with the next step.
    const cfg = vscode.workspace.getConfiguration("agentBridge");
    const goodPath = cfg.get<string>("bridgePath");
    await bridge.stop();
    await cfg.update("bridgePath", "/nonexistent/agent-bridge", vscode.ConfigurationTarget.Global);
    const errBefore = ui.errors.length;
    await exec("agentBridge.newSession", { provider: "scripted", prompt: false });
    result.missingBridge = { errors: ui.errors.slice(errBefore), problem: bridge.lastProblem ?? null };
    await cfg.update("bridgePath", goodPath, vscode.ConfigurationTarget.Global);
    step("done");
  } catch (err) {
    result.error = err instanceof Error ? `${err.message}\n${err.stack ?? ""}` : String(err);
  }
  result.prompts = ui.prompts;
  result.errors = ui.errors;
  result.infos = ui.infos;
  await bridge.stop().catch(() => undefined);
  fs.writeFileSync(`${resultFile}.tmp`, JSON.stringify(result, null, 2));
  fs.renameSync(`${resultFile}.tmp`, resultFile);
}

/**
 * Asks the test to change the session's model and mode from ANOTHER host (it watches for
 * RESULT.configure, attaches a second `agent-bridge connect` to the same daemon session
 * and sends session/configure there, then removes the request); resolves once sent.
 */
async function configureElsewhere(resultFile: string, sessionId: string): Promise<void> {
  const request = `${resultFile}.configure`;
  fs.writeFileSync(`${request}.tmp`, JSON.stringify({ sessionId }));
  fs.renameSync(`${request}.tmp`, request);
  await until("the other host's session/configure", () => !fs.existsSync(request), 60000);
}

/**
 * The other-host scenario (AGENT_BRIDGE_VSCODE_SCENARIO=other-host, the extension on
 * `agent-bridge connect`): a session naming its model and mode is opened in a chat, a
 * second host attached to the same daemon session changes both, and the chat's header
 * must show the new ones from `settings.updated` alone (this host sends no
 * session/configure or session/settings after the chat opened). Writes the result file.
 */
export async function runOtherHostScenario(api: ExtensionApi, resultFile: string): Promise<void> {
  const ui = new ScriptedUi();
  api.setUi(ui);
  const result: Record<string, unknown> = { steps: [] as string[] };
  const { store, bridge } = api;
  const exec = <T>(cmd: string, ...args: unknown[]): Promise<T> => Promise.resolve(vscode.commands.executeCommand<T>(cmd, ...args));
  try {
    const sid = await exec<string | undefined>("agentBridge.newSession", {
      provider: "scripted",
      options: {
        script: {
          settings: {
            model: { current: "small", available: [{ id: "small", name: "Small" }, { id: "large", name: "Large" }] },
            mode: { current: "ask", available: [{ id: "ask" }, { id: "auto" }] },
          },
          runs: [{ steps: [{ type: "echo" }] }],
        },
      },
      title: "Shared",
      prompt: false,
    });
    const panel = sid ? ChatPanel.panels.get(sid) : undefined;
    if (!sid || !panel) throw new Error(`no chat for the shared session; errors: ${ui.errors.join(" | ")}`);
    result.sessionId = sid;
    await until("the header shows the model", () => panel.rendered.text.includes("model Small"), 15000);
    result.headerBefore = panel.rendered.text.split("\n").slice(0, 6).join(" | ");
    const asked = (): number => bridge.trafficLines.filter((l) => /"method":"session\/(configure|settings)"/.test(l)).length;
    const askedBefore = asked();
    await configureElsewhere(resultFile, sid);
    await until("the header shows the other host's model and mode", () => panel.rendered.text.includes("model Large") && panel.rendered.text.includes("mode auto"), 20000);
    result.headerAfter = panel.rendered.text.split("\n").slice(0, 6).join(" | ");
    result.settings = store.sessions.get(sid)?.settings ?? null;
    result.requestsAfterOpen = asked() - askedBefore;
    result.settingsEvents = bridge.trafficLines.filter((l) => l.includes('"type":"settings.updated"')).length;
    await exec("agentBridge.closeSession", sid);
    (result.steps as string[]).push("done");
  } catch (err) {
    result.error = err instanceof Error ? `${err.message}\n${err.stack ?? ""}` : String(err);
  }
  result.errors = ui.errors;
  await bridge.stop().catch(() => undefined);
  fs.writeFileSync(`${resultFile}.tmp`, JSON.stringify(result, null, 2));
  fs.renameSync(`${resultFile}.tmp`, resultFile);
}
