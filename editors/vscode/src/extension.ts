/**
 * The extension's entry point: the Sessions view, the chat panels, the commands in the
 * palette, the diff view for edits and the traffic log. In test mode (the
 * AGENT_BRIDGE_VSCODE_TEST_RESULT environment variable, see src/testMode.ts) it also
 * runs its scenario through these same commands; in demo mode (AGENT_BRIDGE_VSCODE_DEMO,
 * src/demoMode.ts) a session for the README's screenshot.
 */
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { continueItems } from "./continuePick";
import { contextBlock, imageBlock, imageFileRefusal, imageFileType, LineRange, selectionLines } from "./context";
import { approvalOptions, questionOptions } from "./approvals";
import { BridgeHost } from "./bridge";
import { forkCutNotice, forkOffer } from "./chatHtml";
import { ChatPanel, KeyBinding, PanelActions } from "./chatPanel";
import { EditContentProvider, EDIT_SCHEME, openEditDiff } from "./diff";
import { chosenLabels, modeOption, modelOption, optionTitle, providerChoices, valueChoices } from "./pickers";
import { providerUnavailableMessage } from "./messages";
import type { OptionDescriptor } from "./protocol";
import { ReattachResult, SessionStore } from "./sessions";
import { SessionNode, SessionsTree } from "./tree";
import { Ui, VsCodeUi } from "./ui";

/** What `agentBridge.newSession` may be given instead of asking. */
export interface NewSessionArgs {
  provider?: string;
  options?: Record<string, unknown>;
  title?: string;
  /** Ask for the first prompt right after (default true). */
  prompt?: boolean;
}

/** The extension's live parts, returned by activate() (the test mode drives them). */
export interface ExtensionApi {
  bridge: BridgeHost;
  store: SessionStore;
  tree: SessionsTree;
  edits: EditContentProvider;
  setUi(ui: Ui): void;
}

type SessionArg = string | SessionNode | { sessionId: string } | undefined;

export function activate(context: vscode.ExtensionContext): ExtensionApi {
  const version = String((context.extension.packageJSON as { version?: string }).version ?? "0");
  const output = vscode.window.createOutputChannel("Agent Bridge Traffic");
  ChatPanel.keybindings = (context.extension.packageJSON as { contributes?: { keybindings?: KeyBinding[] } }).contributes?.keybindings ?? [];
  let ui: Ui = new VsCodeUi();
  const uiProxy: Ui = {
    pick: (t, i, tok) => ui.pick(t, i, tok),
    input: (t, p, tok) => ui.input(t, p, tok),
    chooseFile: (t, f) => ui.chooseFile(t, f),
    error: (m, ...a) => ui.error(m, ...a),
    info: (m, ...a) => ui.info(m, ...a),
  };
  const bridge = new BridgeHost(output, uiProxy, version);
  const store = new SessionStore(bridge, uiProxy);
  const tree = new SessionsTree(store, bridge);
  const edits = new EditContentProvider();
  const view = vscode.window.createTreeView("agentBridge.sessions", { treeDataProvider: tree, showCollapseAll: false });
  const contextKeys = new Map<string, boolean>();
  const setContext = (key: string, value: boolean): void => {
    if (contextKeys.get(key) === value) return;
    contextKeys.set(key, value);
    void vscode.commands.executeCommand("setContext", key, value);
  };
  const updateBadge = (): void => {
    let pending = 0;
    for (const id of store.sessions.keys()) pending += store.pendingCount(id);
    view.badge = pending ? { value: pending, tooltip: `${pending} approval(s) or question(s) waiting` } : undefined;
    // The context keys of the keybindings: interrupt while a turn runs, answer while one waits.
    const running = [...store.sessions.values()].some((e) => e.model?.runState === "running");
    setContext("agentBridge.pending", pending > 0);
    setContext("agentBridge.running", running);
  };
  context.subscriptions.push(output, bridge, store, tree, view, store.onDidChange(() => updateBadge()));
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(EDIT_SCHEME, edits));

  const actions: PanelActions = {
    answer: async (sessionId, interactionId, option) => {
      const model = store.sessions.get(sessionId)?.model;
      const item = model?.pendingInteractions.find((i) => i.interactionId === interactionId);
      if (!item) return;
      const r = item.request;
      const opts = r.kind === "approval" ? approvalOptions(r) : r.kind === "question" ? questionOptions(r).options : [];
      const chosen = opts[option];
      if (chosen) await store.answer(interactionId, chosen.answer);
    },
    promptFor: (_sessionId, interactionId) => store.showPrompt(interactionId),
    openEdit: (sessionId, runId, toolCallId, index) => openEdit(sessionId, runId, toolCallId, index).then(() => undefined),
    send: (sessionId, text) => store.prompt(sessionId, text, readLines),
    cancel: (sessionId) => store.cancel(sessionId).then(() => undefined),
    commands: (sessionId) => Promise.resolve(vscode.commands.executeCommand("agentBridge.runCommand", sessionId)).then(() => undefined),
    setting: (sessionId, which) =>
      Promise.resolve(vscode.commands.executeCommand(which === "model" ? "agentBridge.changeModel" : "agentBridge.changeMode", sessionId)).then(() => undefined),
    attachImage: async (sessionId, dataUrl) => {
      const input = await imageInput(sessionId);
      if (input === false) return;
      const block = imageBlock(dataUrl, input?.image);
      if (typeof block === "string") void uiProxy.error(block);
      else store.attach(sessionId, block);
    },
    attachFile: (sessionId) => Promise.resolve(vscode.commands.executeCommand("agentBridge.attachImageFile", sessionId)).then(() => undefined),
    fork: (sessionId, atEvent) => Promise.resolve(vscode.commands.executeCommand("agentBridge.fork", sessionId, atEvent ?? undefined)).then(() => undefined),
  };

  /**
   * Returns the session's provider's input capabilities (undefined when it names none),
   * or false after saying that the provider takes no images.
   */
  async function imageInput(sessionId: string) {
    const desc = await store.descriptor(store.sessions.get(sessionId)?.info.providerId ?? "");
    const input = desc?.capabilities.input;
    if (desc && !(input?.kinds ?? ["text"]).includes("image")) {
      void uiProxy.error(`${desc.displayName} does not take images. Next step: describe the image in words, or start a session on a provider that takes them.`);
      return false;
    }
    return input;
  }

  /** Returns lines of a file on disk (a provider that takes only text gets them quoted). */
  function readLines(path: string, range?: LineRange): string | undefined {
    try {
      const lines = fs.readFileSync(path, "utf8").split("\n");
      return (range ? lines.slice(range.startLine - 1, range.endLine) : lines).join("\n");
    } catch {
      return undefined;
    }
  }

  const showPanel = (sessionId: string): ChatPanel => ChatPanel.show(store, sessionId, context.extensionUri, actions);

  async function pickSession(arg: SessionArg, title: string, openOnly: boolean): Promise<string | undefined> {
    if (typeof arg === "string") return arg;
    if (arg instanceof SessionNode) return arg.sessionId;
    if (arg && typeof arg === "object" && typeof arg.sessionId === "string") return arg.sessionId;
    const active = ChatPanel.active();
    if (active) return active.sessionId;
    const candidates = [...store.sessions.values()].filter((e) => !openOnly || e.info.state !== "closed");
    if (candidates.length === 1) return candidates[0].info.sessionId;
    if (candidates.length === 0) {
      void uiProxy.info("No agent session is open. Start one with Agent Bridge: New Session.");
      return undefined;
    }
    return uiProxy.pick(
      title,
      candidates.map((e) => ({
        label: e.info.title || e.info.sessionId,
        description: `${e.info.providerId} · ${e.info.state}`,
        value: e.info.sessionId,
      })),
    );
  }

  async function pickOption(o: OptionDescriptor, providerName: string): Promise<{ value: string | undefined } | undefined> {
    const choices = valueChoices(o);
    if (choices) {
      const v = await uiProxy.pick(`${providerName}: ${optionTitle(o)}`, choices.map((c) => ({ label: c.label, description: c.description, value: c })));
      return v ? { value: v.value } : undefined;
    }
    const text = await uiProxy.input(`${providerName}: ${optionTitle(o)} (empty: the provider's default)`, o.description);
    if (text === undefined) return undefined;
    return { value: text.trim() || undefined };
  }

  async function newSession(args: NewSessionArgs = {}): Promise<string | undefined> {
    if (!(await bridge.ensureOrExplain())) return undefined;
    let providers;
    try {
      providers = await store.listProviders(true);
    } catch (err) {
      void uiProxy.error(store.explain(err));
      return undefined;
    }
    const cfg = vscode.workspace.getConfiguration("agentBridge");
    let providerId = args.provider;
    if (!providerId) {
      const choices = providerChoices(providers, cfg.get<string>("defaultProvider", "") || undefined);
      const picked = await uiProxy.pick(
        "Agent Bridge: choose a provider",
        choices.map((c) => ({ label: c.label, description: c.description, detail: c.detail, value: c })),
      );
      if (!picked) return undefined;
      providerId = picked.providerId;
    }
    const desc = providers.find((p) => p.id === providerId);
    if (!desc) {
      void uiProxy.error(`No provider "${providerId}" in this bridge. Next step: pick one of ${providers.map((p) => p.id).join(", ")}.`);
      return undefined;
    }
    const configured = cfg.get<Record<string, Record<string, unknown>>>("sessionOptions", {})[desc.id] ?? {};
    const options: Record<string, unknown> = { ...configured, ...(args.options ?? {}) };
    // (an executable or command given in the options was not part of the availability probe)
    if (desc.availability?.status === "unavailable" && options.executable === undefined && options.command === undefined) {
      void uiProxy.error(providerUnavailableMessage(desc), "Show Traffic Log").then((a) => {
        if (a) output.show(true);
      });
      return undefined;
    }
    for (const o of [modelOption(desc), modeOption(desc)]) {
      if (!o || o.name in options) continue;
      const chosen = await pickOption(o, desc.displayName);
      if (!chosen) return undefined;
      if (chosen.value !== undefined) options[o.name] = chosen.value;
    }
    const title = args.title ?? `${desc.displayName} · ${new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}`;
    let sessionId: string;
    try {
      const entry = await store.create(desc.id, options, title);
      entry.chosen = chosenLabels(desc, options);
      sessionId = entry.info.sessionId;
    } catch (err) {
      void uiProxy.error(store.explain(err, desc.id));
      return undefined;
    }
    showPanel(sessionId);
    if (args.prompt !== false) await prompt(sessionId);
    return sessionId;
  }

  async function prompt(arg: SessionArg | { sessionId: string; text: string }): Promise<boolean> {
    const sessionId = await pickSession(arg as SessionArg, "Prompt which session?", true);
    if (!sessionId) return false;
    const given = arg && typeof arg === "object" && "text" in arg ? arg.text : undefined;
    const text = given ?? (await uiProxy.input("Ask the agent", "What should the agent do?"));
    if (!text) return false;
    try {
      await store.prompt(sessionId, text);
      return true;
    } catch (err) {
      void uiProxy.error(store.explain(err, store.sessions.get(sessionId)?.info.providerId));
      return false;
    }
  }

  async function openEdit(sessionId: string, runId: string, toolCallId: string, index: number): Promise<string | undefined> {
    const model = store.sessions.get(sessionId)?.model;
    const tool = model?.items.find((i) => i.kind === "tool" && i.toolCallId === toolCallId && (!runId || i.runId === runId));
    if (!tool || tool.kind !== "tool") return undefined;
    const edit = tool.edits[index];
    if (!edit) return undefined;
    return openEditDiff(edits, edit, `${sessionId}/${toolCallId}`);
  }

  const reg = (id: string, fn: (...a: never[]) => unknown): void => {
    context.subscriptions.push(vscode.commands.registerCommand(id, fn as (...a: unknown[]) => unknown));
  };
  // The selection (or the current file) as context: attached to the chat's next prompt
  // (the chat gets the focus), or sent at once with `text`. Returns the block.
  reg("agentBridge.sendContext", async (arg?: { sessionId?: string; text?: string }) => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void uiProxy.info("Open a file (or select some of it) to send it to the agent.");
      return undefined;
    }
    let id = arg?.sessionId ?? ChatPanel.lastActive?.sessionId;
    if (!id) {
      const open = [...store.sessions.values()].filter((e) => e.info.state !== "closed" && e.model);
      id = open.length === 1 ? open[0].info.sessionId : await pickSession(undefined, "Send it to which session?", true);
    }
    if (!id) return undefined;
    const doc = editor.document;
    const sel = editor.selection;
    const range = sel.isEmpty ? undefined : selectionLines(sel.start, sel.end);
    const block = contextBlock(
      {
        uri: doc.uri.toString(),
        fsPath: doc.uri.scheme === "file" ? doc.uri.fsPath : undefined,
        dirty: doc.isDirty || doc.isUntitled,
        text: sel.isEmpty ? doc.getText() : doc.getText(sel),
      },
      range,
    );
    store.attach(id, block);
    if (arg?.text) {
      try {
        await store.prompt(id, arg.text, readLines);
      } catch (err) {
        void uiProxy.error(store.explain(err, store.sessions.get(id)?.info.providerId));
        return undefined;
      }
    }
    const panel = showPanel(id);
    if (!arg?.text) panel.focusInput();
    return block;
  });
  // Attach an image file (not only a pasted one): picked in a file dialog (or given as
  // {sessionId, path}), its type and size checked against the provider's
  // capabilities.input.image before it is read, then on the chat's bar until sent.
  // Returns the image block attached, or undefined.
  reg("agentBridge.attachImageFile", async (arg?: SessionArg | { sessionId?: string; path?: string }) => {
    const given = arg && typeof arg === "object" && "path" in arg ? arg.path : undefined;
    const named = typeof arg === "string" ? arg : arg instanceof SessionNode ? arg.sessionId : arg?.sessionId;
    // no session named: the chat the user was in last
    const id = named ?? ChatPanel.lastActive?.sessionId ?? (await pickSession(undefined, "Attach it to which session?", true));
    if (!id) return undefined;
    const input = await imageInput(id);
    if (input === false) return undefined;
    const types = input?.image?.mimeTypes ?? ["image/png", "image/jpeg", "image/gif", "image/webp"];
    const exts = ["png", "jpg", "jpeg", "gif", "webp", "bmp", "svg", "tif", "tiff", "avif", "heic"].filter((e) => types.includes(imageFileType(`x.${e}`) ?? ""));
    const file = given ?? (await uiProxy.chooseFile("Attach which image?", { Images: exts }));
    if (!file) return undefined;
    let bytes: number;
    try {
      bytes = fs.statSync(file).size;
    } catch (err) {
      void uiProxy.error(`${path.basename(file)} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"}).`);
      return undefined;
    }
    const refused = imageFileRefusal(path.basename(file), bytes, input?.image);
    if (refused) {
      void uiProxy.error(refused);
      return undefined;
    }
    const block = imageBlock(`data:${imageFileType(file)};base64,${fs.readFileSync(file).toString("base64")}`, input?.image);
    if (typeof block === "string") {
      void uiProxy.error(block);
      return undefined;
    }
    store.attach(id, block);
    showPanel(id).focusInput();
    return { mimeType: imageFileType(file), bytes };
  });
  // Continue a conversation: the bridge's sessions of this workspace and the ones each
  // provider keeps itself (its CLI's), in one quick pick; a provider's own session is
  // continued in the bridge (provider/sessions/continue: its earlier turns imported).
  // Returns the bridge session opened.
  reg("agentBridge.continueSession", async (): Promise<string | undefined> => {
    if (!(await bridge.ensureOrExplain())) return undefined;
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    let workspace = folder;
    try {
      if (folder) workspace = fs.realpathSync(folder);
    } catch {
      // the folder as VS Code names it
    }
    let found;
    try {
      found = await store.continuable(workspace);
    } catch (err) {
      void uiProxy.error(store.explain(err));
      return undefined;
    }
    const items = continueItems(found.bridge, found.native, found.problems);
    if (!items.length) {
      void uiProxy.info("No session of this workspace yet, in the bridge or in a provider's own history. Start one with Agent Bridge: New Session.");
      return undefined;
    }
    const target = await uiProxy.pick(
      "Continue which session? (agent-bridge's and the providers' own, this workspace)",
      items.map((i) => ({ label: i.label, description: i.description, detail: i.detail, value: i.target })),
    );
    if (!target) return undefined;
    if (target.kind === "problem") {
      void uiProxy.error(target.message);
      return undefined;
    }
    let sessionId = target.kind === "bridge" ? target.sessionId : undefined;
    if (target.kind === "native") {
      const configured = vscode.workspace.getConfiguration("agentBridge").get<Record<string, Record<string, unknown>>>("sessionOptions", {})[target.provider] ?? {};
      try {
        sessionId = (await store.continueNative(target.provider, target.sessionRef, configured, target.title)).sessionId;
      } catch (err) {
        void uiProxy.error(store.explain(err, target.provider));
        return undefined;
      }
    }
    if (!sessionId) return undefined;
    try {
      await store.reattach(sessionId);
    } catch (err) {
      void uiProxy.error(store.explain(err, store.sessions.get(sessionId)?.info.providerId));
      return undefined;
    }
    showPanel(sessionId).focusInput();
    return sessionId;
  });
  // The session's slash commands and skills (session/commands, kept current by
  // commands.updated) as a quick pick; the one picked runs as a command block, with its
  // arguments asked when it takes some. Returns the command line run.
  reg("agentBridge.runCommand", async (arg?: SessionArg): Promise<string | undefined> => {
    const id = await pickSession(arg, "Run a command in which session?", true);
    if (!id) return undefined;
    const entry = store.sessions.get(id);
    if (!entry?.commands?.length) await store.loadMenus(id).catch(() => undefined);
    const commands = store.sessions.get(id)?.commands ?? [];
    const providerId = entry?.info.providerId ?? "";
    if (!commands.length) {
      void uiProxy.info(`${store.provider(providerId)?.displayName ?? providerId} has not named any commands for this session (yet).`);
      return undefined;
    }
    const picked = await uiProxy.pick(
      "Run which command?",
      commands.map((c) => ({ label: `/${c.name}`, description: c.description ?? "", detail: c.hint ?? undefined, value: c })),
    );
    if (!picked) return undefined;
    let args = "";
    if (picked.hint) {
      const typed = await uiProxy.input(`/${picked.name} ${picked.hint}`, picked.hint);
      if (typed === undefined) return undefined;
      args = typed.trim();
    }
    const line = args ? `/${picked.name} ${args}` : `/${picked.name}`;
    try {
      await store.prompt(id, line, readLines);
    } catch (err) {
      void uiProxy.error(store.explain(err, providerId));
      return undefined;
    }
    return line;
  });
  // The model or mode of the session, changed between runs (session/configure); every
  // attached host sees settings.updated. Returns the id chosen.
  const changeSetting = async (which: "model" | "mode", arg?: SessionArg): Promise<string | undefined> => {
    const id = await pickSession(arg, `Change the ${which} of which session?`, true);
    if (!id) return undefined;
    if (!store.sessions.get(id)?.settings) await store.loadMenus(id).catch(() => undefined);
    const entry = store.sessions.get(id);
    const s = entry?.settings?.[which];
    const name = store.provider(entry?.info.providerId ?? "")?.displayName ?? entry?.info.providerId ?? "";
    if (!s?.available?.length) {
      void uiProxy.info(`${name} offers no ${which} to choose for this session.`);
      return undefined;
    }
    const picked = await uiProxy.pick(
      `Agent Bridge: the ${which} for the next turn`,
      s.available.map((v) => ({ label: v.name || v.id, description: `${v.id}${v.id === s.current ? " (current)" : ""}`, value: v.id })),
    );
    if (!picked || picked === s.current) return picked;
    try {
      await store.configure(id, which, picked);
    } catch (err) {
      void uiProxy.error(store.explain(err, entry?.info.providerId));
      return undefined;
    }
    return picked;
  };
  reg("agentBridge.changeModel", (arg?: SessionArg) => changeSetting("model", arg));
  reg("agentBridge.changeMode", (arg?: SessionArg) => changeSetting("mode", arg));
  reg("agentBridge.newSession", (args?: NewSessionArgs) => newSession(args ?? {}));
  reg("agentBridge.prompt", (arg?: SessionArg) => prompt(arg));
  reg("agentBridge.cancel", async (arg?: SessionArg) => {
    const id = await pickSession(arg, "Cancel the turn of which session?", true);
    if (!id) return false;
    try {
      const did = await store.cancel(id);
      if (!did) void uiProxy.info("No turn is running in this session.");
      return did;
    } catch (err) {
      void uiProxy.error(store.explain(err));
      return false;
    }
  });
  reg("agentBridge.closeSession", async (arg?: SessionArg) => {
    const id = await pickSession(arg, "Close which session?", true);
    if (!id) return false;
    try {
      await store.close(id);
      return true;
    } catch (err) {
      void uiProxy.error(store.explain(err));
      return false;
    }
  });
  reg("agentBridge.reattach", async (arg?: SessionArg): Promise<ReattachResult | undefined> => {
    if (!(await bridge.ensureOrExplain())) return undefined;
    if (!store.sessions.size) await store.refresh().catch(() => undefined);
    const id = await pickSession(arg, "Open which session?", false);
    if (!id) return undefined;
    try {
      const res = await store.reattach(id);
      showPanel(id);
      return res;
    } catch (err) {
      void uiProxy.error(store.explain(err, store.sessions.get(id)?.info.providerId));
      return undefined;
    }
  });
  // Fork from a run's end (its "Fork from here" button) or, where the provider forks at
  // messages, from an agent message ("Fork from this message"): a new session with the
  // history up to that event, opened in its own chat. Returns the fork's id.
  reg("agentBridge.fork", async (sessionId?: string, atEvent?: number): Promise<string | undefined> => {
    if (!(await bridge.ensureOrExplain())) return undefined;
    const id = sessionId ?? ChatPanel.active()?.sessionId ?? ChatPanel.lastActive?.sessionId;
    if (!id) return undefined;
    // Only where the provider forks natively (capabilities.fork): the bridge never fakes one.
    const providerId = store.sessions.get(id)?.info.providerId ?? "";
    const desc = await store.descriptor(providerId).catch(() => undefined);
    const offer = forkOffer(desc?.capabilities.fork);
    const name = desc?.displayName ?? providerId;
    if (offer === "none") {
      void uiProxy.info(`${name} cannot fork a session (its descriptor's capabilities.fork says so; the bridge does not fake a fork by replaying text). Next step: start a new session, or use a provider that forks (Claude Code, Codex).`);
      return undefined;
    }
    if (offer === "atEnd" && atEvent !== undefined && atEvent !== store.sessions.get(id)?.model?.lastSequence) {
      void uiProxy.info(`${name} forks only a session's whole history, not at an earlier turn. Next step: Fork the Session at the Last Turn.`);
      return undefined;
    }
    try {
      const at = offer === "atEnd" ? undefined : atEvent;
      const { sessionId: forkId, providerSequence } = await store.fork(id, at);
      await store.reattach(forkId);
      showPanel(forkId);
      // a fork inside a message: the agent's own history stops at its last complete one
      const notice = forkCutNotice(at, providerSequence);
      if (notice) void uiProxy.info(notice);
      return forkId;
    } catch (err) {
      void uiProxy.error(store.explain(err, store.sessions.get(id)?.info.providerId));
      return undefined;
    }
  });
  // A click in the Sessions view: show the chat when it is open and live, else reattach.
  reg("agentBridge.open", async (sessionId: string) => {
    const e = store.sessions.get(sessionId);
    if (e?.model && e.info.state !== "closed" && bridge.current && ChatPanel.panels.has(sessionId)) {
      showPanel(sessionId);
      return undefined;
    }
    return vscode.commands.executeCommand("agentBridge.reattach", sessionId);
  });
  reg("agentBridge.answerPending", async (arg?: SessionArg) => {
    const id = await pickSession(arg, "Answer the pending approvals of which session?", true);
    if (!id) return 0;
    const pending = store.pendingPrompts(id);
    if (!pending.length) void uiProxy.info("Nothing is waiting for an answer in this session.");
    for (const p of pending) await store.showPrompt(p.interactionId);
    return pending.length;
  });
  // The keyboard's way into the chat: the active or last used chat, else the only open
  // session's, else a new session.
  reg("agentBridge.focusChat", async (arg?: SessionArg): Promise<string | undefined> => {
    let id: string | undefined;
    if (arg !== undefined) id = await pickSession(arg, "Focus the chat of which session?", false);
    else id = ChatPanel.active()?.sessionId ?? ChatPanel.lastActive?.sessionId;
    if (!id) {
      const open = [...store.sessions.values()].filter((e) => e.info.state !== "closed" && e.model);
      if (open.length === 1) id = open[0].info.sessionId;
    }
    if (!id) return newSession({});
    showPanel(id).focusInput();
    return id;
  });
  reg("agentBridge.refreshSessions", async () => {
    if (!(await bridge.ensureOrExplain())) return;
    await tree.reload().catch((err: unknown) => void uiProxy.error(store.explain(err)));
  });
  reg("agentBridge.restartBridge", async () => {
    const c = await bridge.restart();
    if (c) await tree.reload().catch(() => undefined);
    return !!c;
  });
  reg("agentBridge.showTrafficLog", () => output.show(true));
  reg("agentBridge.openEdit", (sessionId: string, runId: string, toolCallId: string, index: number) => openEdit(sessionId, runId, toolCallId, index));

  const api: ExtensionApi = {
    bridge,
    store,
    tree,
    edits,
    setUi: (u) => {
      ui = u;
    },
  };
  const resultFile = process.env.AGENT_BRIDGE_VSCODE_TEST_RESULT;
  if (resultFile) {
    // Only in the build with test hooks (build.sh --hooks-out); the shipped one has none.
    import("./testMode")
      .then((m) => (process.env.AGENT_BRIDGE_VSCODE_SCENARIO === "other-host" ? m.runOtherHostScenario(api, resultFile) : m.runScenario(api, resultFile)))
      .catch((e: unknown) => console.error("agent-bridge: no test hooks in this build", e));
  }
  const demoFile = process.env.AGENT_BRIDGE_VSCODE_DEMO;
  if (demoFile) {
    import("./demoMode").then((m) => m.runDemo(api, demoFile)).catch((e: unknown) => console.error("agent-bridge: no demo in this build", e));
  }
  return api;
}

export function deactivate(): void {
  // The BridgeHost in context.subscriptions stops the bridge.
}
