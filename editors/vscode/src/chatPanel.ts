/**
 * One chat webview per session: renders the session's chat model (re-rendered as
 * events stream), forwards the webview's buttons (answer, open diff, send, cancel) to
 * the extension, and records what the webview reports it rendered.
 */
import { randomBytes } from "crypto";
import * as vscode from "vscode";
import { escapeHtml, forkOffer, renderAttachments, renderHeader, renderItems, type ForkOffer } from "./chatHtml";
import { describeBlock } from "./context";
import type { SessionStore } from "./sessions";

export interface PanelActions {
  answer(sessionId: string, interactionId: string, option: number): Promise<void>;
  promptFor(sessionId: string, interactionId: string): Promise<void>;
  openEdit(sessionId: string, runId: string, toolCallId: string, index: number): Promise<void>;
  send(sessionId: string, text: string): Promise<void>;
  cancel(sessionId: string): Promise<void>;
  /** Forks the session at `atEvent` (its whole history when null). */
  fork(sessionId: string, atEvent: number | null): Promise<void>;
  /** The slash-command menu (the chat's "/" button). */
  commands(sessionId: string): Promise<void>;
  /** Change the model or the mode (its header button). */
  setting(sessionId: string, which: "model" | "mode"): Promise<void>;
  /** An image pasted in the chat (a data URL): attached to the next prompt, or refused with a message. */
  attachImage(sessionId: string, dataUrl: string): Promise<void>;
  /** The chat's attach button: an image file picked and attached (agentBridge.attachImageFile). */
  attachFile(sessionId: string): Promise<void>;
}

type FromWebview =
  | { type: "ready" }
  | { type: "rendered"; version: number; text: string; open?: string[]; attachments?: string }
  | { type: "focused" }
  | { type: "entered" }
  | { type: "answer"; interactionId: string; option: number }
  | { type: "prompt"; interactionId: string }
  | { type: "openEdit"; runId: string; toolCallId: string; index: number }
  | { type: "send"; text: string }
  | { type: "cancel" }
  | { type: "fork"; atEvent: number | null }
  | { type: "detach"; index: number }
  | { type: "commands" }
  | { type: "command"; command: string }
  | { type: "setting"; which: "model" | "mode" }
  | { type: "pasteImage"; dataUrl: string }
  | { type: "attachFile" };

/** One of the extension's keybindings (package.json `contributes.keybindings`). */
export interface KeyBinding {
  command: string;
  key: string;
  mac?: string;
}

export class ChatPanel implements vscode.Disposable {
  static readonly panels = new Map<string, ChatPanel>();
  /**
   * The extension's keybindings, which the chat maps itself: a key pressed in a webview
   * does not reach the workbench's keybindings in code-server (measured with 4.100.3: the
   * workbench window saw no keydown for Ctrl+Alt+X typed in the chat's input box).
   */
  static keybindings: KeyBinding[] = [];
  /** The chat the user was in last (the one Focus the Chat returns to). */
  static lastActive: ChatPanel | undefined;
  /** How many times the webview reported its input box focused. */
  inputFocused = 0;
  readonly panel: vscode.WebviewPanel;
  /** The text the webview last reported showing, and for which model version. */
  /** What the webview last reported it shows: its text, and the kinds of the cards open. */
  rendered: { version: number; text: string; open: string[]; attachments: string } = { version: -1, text: "", open: [], attachments: "" };
  private timer: NodeJS.Timeout | undefined;
  private ready = false;
  private readonly subs: vscode.Disposable[] = [];
  private readonly renderedWaiters: Array<() => void> = [];

  /** Shows the session's panel, creating it when needed. */
  static show(store: SessionStore, sessionId: string, extensionUri: vscode.Uri, actions: PanelActions): ChatPanel {
    const existing = ChatPanel.panels.get(sessionId);
    if (existing) {
      existing.panel.reveal(undefined, true);
      existing.schedule();
      return existing;
    }
    const p = new ChatPanel(store, sessionId, extensionUri, actions);
    ChatPanel.panels.set(sessionId, p);
    return p;
  }

  /** Shows the panel and puts the keyboard focus in its input box. */
  focusInput(): void {
    this.panel.reveal(undefined, false);
    void this.panel.webview.postMessage({ type: "focus" });
  }

  /** The panel of the active editor tab, if it is a chat. */
  static active(): ChatPanel | undefined {
    for (const p of ChatPanel.panels.values()) if (p.panel.active) return p;
    return undefined;
  }

  private constructor(
    private readonly store: SessionStore,
    readonly sessionId: string,
    extensionUri: vscode.Uri,
    private readonly actions: PanelActions,
  ) {
    const media = vscode.Uri.joinPath(extensionUri, "media");
    this.panel = vscode.window.createWebviewPanel("agentBridge.chat", this.title(), { viewColumn: vscode.ViewColumn.Active, preserveFocus: true }, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [media],
    });
    const w = this.panel.webview;
    const nonce = randomBytes(16).toString("hex");
    const css = w.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    const js = w.asWebviewUri(vscode.Uri.joinPath(media, "chat.js"));
    w.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${w.cspSource}; script-src 'nonce-${nonce}';">
<link rel="stylesheet" href="${css}"></head>
<body data-keys="${escapeHtml(JSON.stringify(ChatPanel.keybindings))}"><header id="header"></header><main id="chat"></main>
<footer><div id="attachments" hidden></div><textarea id="input" rows="2" placeholder="Ask the agent… (Enter sends, Shift+Enter: new line; paste an image or + to attach one)"></textarea>
<button id="attach" class="secondary" title="Attach an image file…">+</button><button id="commands" class="secondary" title="Slash commands and skills" hidden>/</button><button id="send">Send</button><button id="stop" class="secondary">Stop</button></footer>
<script nonce="${nonce}" src="${js}"></script></body></html>`;
    this.subs.push(
      w.onDidReceiveMessage((m: FromWebview) => this.onMessage(m)),
      store.onDidChange((id) => {
        if (id === sessionId || id === undefined) this.schedule();
      }),
      this.panel.onDidDispose(() => this.dispose()),
      this.panel.onDidChangeViewState((e) => {
        if (e.webviewPanel.active) ChatPanel.lastActive = this;
      }),
    );
    // A chat opened beside the user's (preserveFocus) is not the one they are in: it
    // becomes it when its view state says it is active (above).
    if (this.panel.active || !ChatPanel.lastActive) ChatPanel.lastActive = this;
  }

  dispose(): void {
    if (ChatPanel.panels.get(this.sessionId) === this) ChatPanel.panels.delete(this.sessionId);
    if (ChatPanel.lastActive === this) ChatPanel.lastActive = undefined;
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.subs) s.dispose();
    this.subs.length = 0;
    this.store.dropModel(this.sessionId);
  }

  /** Resolves once the webview reported rendering the model's current version. */
  async whenRendered(timeoutMs = 10000): Promise<boolean> {
    const want = this.store.sessions.get(this.sessionId)?.model?.version ?? 0;
    if (this.rendered.version >= want) return true;
    this.schedule();
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      const check = (): void => {
        if (this.rendered.version >= want) {
          clearTimeout(t);
          resolve(true);
        } else this.renderedWaiters.push(check);
      };
      this.renderedWaiters.push(check);
    });
  }

  private title(): string {
    const info = this.store.sessions.get(this.sessionId)?.info;
    return `Agent: ${info?.title || this.sessionId}`;
  }

  /** Re-renders soon (coalescing the deltas of a stream into one render). */
  schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.render();
    }, 30);
  }

  private describing = false;

  /** Where forks are offered in this chat: from the provider's descriptor (read once when not cached). */
  private forkOffer(providerId: string): ForkOffer {
    const desc = this.store.provider(providerId);
    if (desc) return forkOffer(desc.capabilities.fork);
    if (!this.describing) {
      this.describing = true;
      void this.store.descriptor(providerId).then(
        () => this.schedule(),
        () => undefined,
      );
    }
    return "none";
  }

  private render(): void {
    if (!this.ready) return;
    const entry = this.store.sessions.get(this.sessionId);
    if (!entry?.model) return;
    this.panel.title = this.title();
    void this.panel.webview.postMessage({
      type: "render",
      version: entry.model.version,
      header: renderHeader(entry.model, entry.info.title || this.sessionId, entry.info.providerId, entry.chosen, entry.settings),
      commands: entry.commands?.length ?? 0,
      html: renderItems(entry.model, this.forkOffer(entry.info.providerId)),
      attachments: renderAttachments((entry.attachments ?? []).map((b) => describeBlock(b, entry.info.workspace ?? undefined) ?? b.type)),
      running: entry.model.runState === "running",
    });
  }

  /** Handles a message as if the webview sent it (the test mode's way to paste). */
  receive(m: FromWebview): void {
    this.onMessage(m);
  }

  private onMessage(m: FromWebview): void {
    const fail = (err: unknown): void => {
      void vscode.window.showErrorMessage(this.store.explain(err));
    };
    switch (m.type) {
      case "ready":
        this.ready = true;
        this.render();
        break;
      case "rendered": {
        this.rendered = { version: m.version, text: m.text, open: m.open ?? [], attachments: m.attachments ?? "" };
        const waiters = this.renderedWaiters.splice(0);
        for (const w of waiters) w();
        break;
      }
      case "focused":
        this.inputFocused += 1;
        ChatPanel.lastActive = this;
        break;
      case "entered":
        // the user clicked or typed in this chat: it is the one they are in (a panel that
        // stays active in the host's view state across tab switches fires no view-state event)
        ChatPanel.lastActive = this;
        break;
      case "answer":
        this.actions.answer(this.sessionId, m.interactionId, m.option).catch(fail);
        break;
      case "prompt":
        this.actions.promptFor(this.sessionId, m.interactionId).catch(fail);
        break;
      case "openEdit":
        this.actions.openEdit(this.sessionId, m.runId, m.toolCallId, m.index).catch(fail);
        break;
      case "send":
        this.actions.send(this.sessionId, m.text).catch(fail);
        break;
      case "cancel":
        this.actions.cancel(this.sessionId).catch(fail);
        break;
      case "fork":
        this.actions.fork(this.sessionId, m.atEvent).catch(fail);
        break;
      case "commands":
        this.actions.commands(this.sessionId).catch(fail);
        break;
      case "command":
        // one of the extension's keybindings, pressed in the chat: for this session
        if (ChatPanel.keybindings.some((k) => k.command === m.command)) {
          const args = m.command === "agentBridge.newSession" ? [] : [this.sessionId];
          Promise.resolve(vscode.commands.executeCommand(m.command, ...args)).catch(fail);
        }
        break;
      case "setting":
        this.actions.setting(this.sessionId, m.which).catch(fail);
        break;
      case "detach":
        this.store.detach(this.sessionId, m.index);
        break;
      case "pasteImage":
        this.actions.attachImage(this.sessionId, m.dataUrl).catch(fail);
        break;
      case "attachFile":
        this.actions.attachFile(this.sessionId).catch(fail);
        break;
    }
  }
}
