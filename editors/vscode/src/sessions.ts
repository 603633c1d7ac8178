/**
 * The sessions the extension knows: their info from `session/list`, the chat model of
 * each open one, and the interactions waiting for an answer. Every operation the
 * commands offer (create, prompt, cancel, close, reattach, answer) is here.
 */
import { randomUUID } from "crypto";
import * as vscode from "vscode";
import { ResponseError } from "vscode-jsonrpc/node";

/** JSON-RPC -32800: the request was cancelled (`$/cancelRequest`). */
const REQUEST_CANCELLED = -32800;
import type { BridgeHost } from "./bridge";
import { BridgeClient, BridgeRequestError } from "./client";
import { ChatModel } from "./chatModel";
import { adaptBlocks, runInput } from "./context";
import { continuableProviders } from "./continuePick";
import { requestErrorMessage } from "./messages";
import type {
  Answer,
  CommandInfo,
  CommandsUpdated,
  EventEnvelope,
  InputBlock,
  InteractionRequestParams,
  NativeSessionInfo,
  SessionSettings,
  SettingsUpdated,
  ProviderDescriptor,
  SessionInfo,
} from "./protocol";
import { askAnswer, Ui } from "./ui";

export interface SessionEntry {
  info: SessionInfo;
  /** The chat model, while the session's chat is open. */
  model: ChatModel | undefined;
  /** The model and mode this window chose when it created the session ("model sonnet"). */
  chosen?: string[];
  /** What goes with the next prompt: the selection, a file, a pasted image. */
  attachments?: InputBlock[];
  /** The commands (slash commands, skills) the session's provider offers. */
  commands?: CommandInfo[];
  /** The session's model and mode: what its provider offers and which is current. */
  settings?: SessionSettings;
}

interface Waiter {
  resolve(a: Answer): void;
  reject(e: unknown): void;
}

interface PendingPrompt {
  params: InteractionRequestParams;
  /** The bridge's open `interaction/request`s for this interaction (several after a reattach). */
  waiters: Waiter[];
  /** Set while a prompt for it is on screen. */
  showing: vscode.CancellationTokenSource | undefined;
}

/** What a reattach did: attached live or resumed, and how many events were replayed. */
export interface ReattachResult {
  via: "attach" | "resume";
  replayed: number;
  session: SessionInfo;
}

export class SessionStore implements vscode.Disposable {
  readonly sessions = new Map<string, SessionEntry>();
  private readonly prompts = new Map<string, PendingPrompt>();
  private providers: ProviderDescriptor[] | undefined;
  private readonly changed = new vscode.EventEmitter<string | undefined>();
  private readonly disposables: vscode.Disposable[] = [];
  /** Fires with a session id when that session changed, undefined when the list did. */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly bridge: BridgeHost,
    private readonly ui: Ui,
  ) {
    this.disposables.push(
      bridge.onDidStart((client) => this.attachClient(client)),
      bridge.onDidStop(() => this.bridgeStopped()),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.changed.dispose();
  }

  // ---- providers

  /** Returns the providers' descriptors (`providers/list` with discovery), cached unless `refresh`. */
  async listProviders(refresh = false): Promise<ProviderDescriptor[]> {
    if (!this.providers || refresh) {
      const client = await this.bridge.ensure();
      this.providers = (await client.request("providers/list", { probe: true })).providers;
    }
    return this.providers;
  }

  /** Returns one provider's descriptor, when the cache has it. */
  provider(id: string): ProviderDescriptor | undefined {
    return this.providers?.find((p) => p.id === id);
  }

  /** Returns one provider's descriptor, reading `providers/list` (no probe) when the cache has none. */
  async descriptor(id: string): Promise<ProviderDescriptor | undefined> {
    if (!this.providers) {
      const client = await this.bridge.ensure();
      this.providers ??= (await client.request("providers/list", { probe: false })).providers;
    }
    return this.provider(id);
  }

  // ---- sessions

  /** Reads `session/list` (every session the journal holds) into the store. */
  async refresh(): Promise<void> {
    const client = await this.bridge.ensure();
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await client.request("session/list", cursor ? { limit: 100, cursor } : { limit: 100 });
      for (const info of page.sessions) {
        seen.add(info.sessionId);
        const e = this.sessions.get(info.sessionId);
        if (e) e.info = info;
        else this.sessions.set(info.sessionId, { info, model: undefined });
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    for (const id of [...this.sessions.keys()]) if (!seen.has(id)) this.sessions.delete(id);
    this.changed.fire(undefined);
  }

  /** Creates a session and returns its entry (with an empty chat model). */
  async create(provider: string, options: Record<string, unknown>, title: string | undefined): Promise<SessionEntry> {
    const client = await this.bridge.ensure();
    const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const res = await client.request("session/create", {
      provider,
      options,
      ...(workspace ? { workspace } : {}),
      ...(title ? { title } : {}),
    });
    const entry: SessionEntry = { info: res.session, model: new ChatModel(res.session.sessionId, res.session.workspace ?? undefined) };
    this.sessions.set(res.session.sessionId, entry);
    this.changed.fire(undefined);
    void this.loadMenus(res.session.sessionId).catch(() => undefined);
    return entry;
  }

  /**
   * Starts a turn with `text` and what is attached (or steers the running one where
   * the provider allows it); `/name args` is the session's command `name` when it
   * offers one. The attachments are cleared once the bridge took them. A file or
   * resource the provider does not take goes as text quoting it (`readLines` reads a
   * file's lines); an attachment it cannot take at all is refused before anything is
   * sent (an Error naming it).
   */
  async prompt(sessionId: string, text: string, readLines?: (path: string, range?: { startLine: number; endLine: number }) => string | undefined): Promise<void> {
    const client = await this.bridge.ensure();
    const entry = this.sessions.get(sessionId);
    const provider = await this.descriptor(entry?.info.providerId ?? "");
    const kinds = provider?.capabilities.input?.kinds ?? ["text"];
    const attached = entry?.attachments ?? [];
    const adapted = provider ? adaptBlocks(attached, kinds, readLines ?? (() => undefined)) : { blocks: attached, refused: [] };
    if (adapted.refused.length) {
      throw new Error(`${provider?.displayName ?? "This provider"} does not take ${adapted.refused.join(", ")}. Next step: remove it from the prompt (its × in the chat).`);
    }
    const input = runInput(text, adapted.blocks, entry?.commands ?? []);
    const running = entry?.model?.activeRunId ?? entry?.info.activeRunId ?? undefined;
    if (running && provider?.capabilities.run.steer) {
      await client.request("run/steer", { runId: running, input });
    } else {
      await client.request("run/start", { sessionId, input, commandId: randomUUID() });
    }
    if (entry && attached.length) {
      entry.attachments = (entry.attachments ?? []).filter((b) => !attached.includes(b));
      this.changed.fire(sessionId);
    }
  }

  /** Adds `block` to what goes with the session's next prompt. */
  attach(sessionId: string, block: InputBlock): void {
    const entry = this.sessions.get(sessionId);
    if (!entry) return;
    entry.attachments = [...(entry.attachments ?? []), block];
    this.changed.fire(sessionId);
  }

  /** Removes the attachment at `index` (its × in the chat). */
  detach(sessionId: string, index: number): void {
    const entry = this.sessions.get(sessionId);
    if (!entry?.attachments) return;
    entry.attachments = entry.attachments.filter((_, i) => i !== index);
    this.changed.fire(sessionId);
  }

  /** Interrupts the session's running turn; returns false when none runs. */
  async cancel(sessionId: string): Promise<boolean> {
    const client = await this.bridge.ensure();
    const entry = this.sessions.get(sessionId);
    const runId = entry?.model?.activeRunId ?? entry?.info.activeRunId ?? undefined;
    if (!runId) return false;
    await client.request("run/interrupt", { runId });
    return true;
  }

  /**
   * Forks the session (`session/fork`) at `atEvent` (a run's last event; its whole
   * history when undefined); returns the fork's id and `providerSequence` (where the
   * provider's own history was cut). The fork is listed with an empty chat model:
   * reattaching it reads its history.
   */
  async fork(sessionId: string, atEvent?: number): Promise<{ sessionId: string; providerSequence: number }> {
    const client = await this.bridge.ensure();
    const res = await client.request("session/fork", atEvent === undefined ? { sessionId } : { sessionId, atEvent });
    this.sessions.set(res.session.sessionId, { info: res.session, model: new ChatModel(res.session.sessionId, res.session.workspace ?? undefined) });
    this.changed.fire(undefined);
    return { sessionId: res.session.sessionId, providerSequence: res.providerSequence };
  }

  /**
   * Returns the bridge's sessions of `workspace` (`session/list`) and, for each provider
   * whose own sessions can be listed and continued, those of `workspace`
   * (`provider/sessions/list`, first page of `limit`); a provider whose listing failed
   * is in `problems` with the message to show.
   */
  async continuable(
    workspace: string | undefined,
    limit = 50,
  ): Promise<{ bridge: SessionInfo[]; native: Map<string, NativeSessionInfo[]>; problems: Map<string, string> }> {
    const client = await this.bridge.ensure();
    const page = await client.request("session/list", workspace ? { limit: 100, workspace } : { limit: 100 });
    const native = new Map<string, NativeSessionInfo[]>();
    const problems = new Map<string, string>();
    for (const p of continuableProviders(await this.listProviders())) {
      try {
        const res = await client.request("provider/sessions/list", workspace ? { provider: p.id, workspace, limit } : { provider: p.id, limit });
        native.set(p.id, res.sessions);
      } catch (err) {
        // a provider that is not installed has nothing to continue here
        if (!isBridgeError(err, "provider_unavailable")) problems.set(p.id, this.explain(err, p.id));
      }
    }
    return { bridge: page.sessions, native, problems };
  }

  /**
   * Continues a provider's own session in the bridge (`provider/sessions/continue`):
   * returns the one bridge session bound to it (created with its earlier turns imported,
   * or the existing one), listed in the store.
   */
  async continueNative(provider: string, sessionRef: string, options: Record<string, unknown>, title?: string): Promise<{ sessionId: string; bound: string; imported: number }> {
    const client = await this.bridge.ensure();
    const res = await client.request("provider/sessions/continue", { provider, sessionRef, options, ...(title ? { title } : {}) });
    const e = this.sessions.get(res.session.sessionId);
    if (e) e.info = res.session;
    else this.sessions.set(res.session.sessionId, { info: res.session, model: undefined });
    this.changed.fire(undefined);
    return { sessionId: res.session.sessionId, bound: res.bound, imported: res.imported ?? 0 };
  }

  /**
   * Reads the session's commands (`session/commands`) and model and mode
   * (`session/settings`) into its entry; events keep them current after that. A
   * provider that cannot say leaves them empty.
   */
  async loadMenus(sessionId: string): Promise<void> {
    const client = await this.bridge.ensure();
    const entry = this.sessions.get(sessionId);
    if (!entry) return;
    const [commands, settings] = await Promise.all([
      client.request("session/commands", { sessionId }).catch(() => undefined),
      client.request("session/settings", { sessionId }).catch(() => undefined),
    ]);
    if (commands) entry.commands = commands.commands;
    if (settings) entry.settings = settings;
    this.changed.fire(sessionId);
  }

  /** Switches the session's model or mode before its next run (`session/configure`). */
  async configure(sessionId: string, which: "model" | "mode", value: string): Promise<void> {
    const client = await this.bridge.ensure();
    const res = await client.request("session/configure", { sessionId, [which]: value });
    const entry = this.sessions.get(sessionId);
    if (entry) entry.settings = res;
    this.changed.fire(sessionId);
  }

  /** Closes the session for good (it stays listed and can be resumed). */
  async close(sessionId: string): Promise<void> {
    const client = await this.bridge.ensure();
    const res = await client.request("session/close", { sessionId });
    const e = this.sessions.get(sessionId);
    if (e) e.info = res.session;
    this.changed.fire(undefined);
  }

  /**
   * Opens the session's chat again: `session/attach` when it is open (here or in the
   * daemon), `session/resume` when it is closed (e.g. after the bridge restarted).
   * The events after what the chat model holds are replayed (all of them for a new
   * model), then live ones follow; pending approvals are asked again.
   */
  async reattach(sessionId: string): Promise<ReattachResult> {
    const client = await this.bridge.ensure();
    let entry = this.sessions.get(sessionId);
    if (!entry) {
      await this.refresh();
      entry = this.sessions.get(sessionId);
      if (!entry) throw new Error(`no session ${sessionId}`);
    }
    if (!entry.model) entry.model = new ChatModel(sessionId, entry.info.workspace ?? undefined);
    const model = entry.model;
    const before = model.lastSequence;
    if (entry.info.state !== "closed") {
      const res = await client.request("session/attach", { sessionId, after: before });
      entry.info = res.session;
      if (res.session.state !== "closed") {
        void this.loadMenus(sessionId).catch(() => undefined);
        this.changed.fire(sessionId);
        this.changed.fire(undefined);
        return { via: "attach", replayed: res.replayed, session: res.session };
      }
    }
    const res = await client.request("session/resume", { sessionId, after: model.lastSequence });
    entry.info = res.session;
    void this.loadMenus(sessionId).catch(() => undefined);
    this.changed.fire(sessionId);
    this.changed.fire(undefined);
    return { via: "resume", replayed: model.lastSequence - before, session: res.session };
  }

  /** Forgets a session's chat model (its chat view was closed); the session goes on. */
  dropModel(sessionId: string): void {
    const e = this.sessions.get(sessionId);
    if (e) {
      if (e.model) {
        e.info = { ...e.info, lastSequence: e.model.lastSequence, pendingInteractions: e.model.pendingInteractions.length };
      }
      e.model = undefined;
      this.changed.fire(undefined);
    }
  }

  // ---- interactions

  /** How many approvals and questions of the session wait for an answer. */
  pendingCount(sessionId: string): number {
    const e = this.sessions.get(sessionId);
    const live = [...this.prompts.values()].filter((p) => p.params.sessionId === sessionId).length;
    if (e?.model) return Math.max(e.model.pendingInteractions.length, live);
    return Math.max(e?.info.pendingInteractions ?? 0, live);
  }

  /** The interactions of the session the bridge is waiting on. */
  pendingPrompts(sessionId: string): InteractionRequestParams[] {
    return [...this.prompts.values()].filter((p) => p.params.sessionId === sessionId).map((p) => p.params);
  }

  /**
   * Shows the prompt of a pending interaction (again); the answer goes to the bridge.
   * A dismissed prompt leaves the interaction pending.
   */
  async showPrompt(interactionId: string): Promise<void> {
    const p = this.prompts.get(interactionId);
    if (!p || p.showing) return;
    const cts = new vscode.CancellationTokenSource();
    p.showing = cts;
    let answer: Answer | undefined;
    try {
      answer = await askAnswer(this.ui, p.params.request, cts.token);
    } finally {
      if (p.showing === cts) p.showing = undefined;
      cts.dispose();
    }
    if (answer && !cts.token.isCancellationRequested) await this.answer(interactionId, answer);
  }

  /**
   * Answers an interaction: replies to the bridge's open request(s) for it, or sends
   * `interaction/respond` when none is open (a prompt answered from history).
   */
  async answer(interactionId: string, answer: Answer): Promise<void> {
    const p = this.prompts.get(interactionId);
    if (p && p.waiters.length) {
      this.prompts.delete(interactionId);
      p.showing?.cancel();
      for (const w of p.waiters) w.resolve(answer);
      this.changed.fire(p.params.sessionId);
      this.changed.fire(undefined);
      return;
    }
    const client = await this.bridge.ensure();
    await client.request("interaction/respond", { interactionId, answer });
  }

  /** Returns the message to show for an error of an operation on a provider's session. */
  explain(err: unknown, providerId?: string): string {
    return requestErrorMessage(err, providerId ? this.provider(providerId) : undefined);
  }

  // ---- bridge wiring

  private attachClient(client: BridgeClient): void {
    this.providers = undefined;
    client.onEvent((e) => this.onEvent(e));
    client.setInteractionHandler((params, token) => this.onInteraction(params, token));
  }

  private bridgeStopped(): void {
    for (const [id, p] of this.prompts) {
      p.showing?.cancel();
      for (const w of p.waiters) w.reject(new ResponseError(REQUEST_CANCELLED, "the bridge stopped"));
      this.prompts.delete(id);
    }
    for (const e of this.sessions.values()) {
      // Not open in any bridge we talk to any more: a reattach resumes it.
      if (e.info.state !== "closed") e.info = { ...e.info, state: "closed", activeRunId: null };
      if (e.model) e.model.activeRunId = undefined;
    }
    this.changed.fire(undefined);
  }

  private onEvent(e: EventEnvelope): void {
    const entry = this.sessions.get(e.sessionId);
    if (!entry?.model) return;
    const t0 = e.payload.type;
    if (t0 === "commands.updated") {
      const p = e.payload as CommandsUpdated;
      entry.commands = p.commands;
    } else if (t0 === "settings.updated") {
      const p = e.payload as SettingsUpdated;
      const s = entry.settings ?? {};
      entry.settings = {
        ...s,
        ...(p.model !== undefined ? { model: { ...(s.model ?? {}), current: p.model } } : {}),
        ...(p.mode !== undefined ? { mode: { ...(s.mode ?? {}), current: p.mode } } : {}),
      };
    }
    if (entry.model.apply(e)) {
      const t = e.payload.type;
      // What the Sessions view shows (state, running, pending) changes with these.
      if (t.startsWith("run.") || t.startsWith("session.") || t.startsWith("interaction.")) {
        entry.info = {
          ...entry.info,
          activeRunId: entry.model.activeRunId ?? null,
          state: entry.model.closed ? "closed" : "active",
          lastSequence: entry.model.lastSequence,
        };
        this.changed.fire(undefined);
      }
      this.changed.fire(e.sessionId);
    }
  }

  private onInteraction(params: InteractionRequestParams, token: vscode.CancellationToken): Promise<Answer> {
    let p = this.prompts.get(params.interactionId);
    if (!p) {
      p = { params, waiters: [], showing: undefined };
      this.prompts.set(params.interactionId, p);
    }
    const prompt = p;
    return new Promise<Answer>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      prompt.waiters.push(waiter);
      token.onCancellationRequested(() => {
        // The bridge withdrew this request (answered elsewhere, interrupted, settled).
        prompt.waiters = prompt.waiters.filter((w) => w !== waiter);
        reject(new ResponseError(REQUEST_CANCELLED, "withdrawn by the bridge"));
        if (prompt.waiters.length === 0 && this.prompts.get(params.interactionId) === prompt) {
          prompt.showing?.cancel();
          this.prompts.delete(params.interactionId);
        }
        this.changed.fire(params.sessionId);
        this.changed.fire(undefined);
      });
      this.changed.fire(params.sessionId);
      this.changed.fire(undefined);
      void this.showPrompt(params.interactionId).catch((err: unknown) => {
        void this.ui.error(this.explain(err));
      });
    });
  }
}

/** True when `err` is the bridge's error `code`. */
export function isBridgeError(err: unknown, code: string): boolean {
  return err instanceof BridgeRequestError && err.info?.code === code;
}
