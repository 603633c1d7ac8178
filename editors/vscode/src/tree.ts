/**
 * The Sessions view: every session the journal holds, newest first, with its provider,
 * state, running turn and pending-approval count; clicking one opens (reattaches) it.
 */
import * as vscode from "vscode";
import type { BridgeHost } from "./bridge";
import type { SessionStore } from "./sessions";
import type { SessionInfo } from "./protocol";

export class SessionNode extends vscode.TreeItem {
  constructor(
    readonly sessionId: string,
    info: SessionInfo,
    pending: number,
    open: boolean,
  ) {
    super(info.title || sessionId, vscode.TreeItemCollapsibleState.None);
    const running = !!info.activeRunId;
    const state = info.state === "closed" ? "closed" : running ? "running" : "active";
    this.description = [info.providerId, state, pending ? `${pending} pending` : undefined].filter(Boolean).join(" · ");
    this.tooltip = new vscode.MarkdownString(
      `**${info.title || sessionId}**\n\n${sessionId}\n\nprovider ${info.providerId} · ${info.state}` +
        (info.workspace ? `\n\n${info.workspace}` : "") +
        `\n\ncreated ${info.createdAt}${info.updatedAt ? `, updated ${info.updatedAt}` : ""}` +
        (pending ? `\n\n${pending} interaction(s) waiting for an answer` : ""),
    );
    this.iconPath = new vscode.ThemeIcon(pending ? "bell-dot" : running ? "sync~spin" : info.state === "closed" ? "history" : "comment-discussion");
    this.contextValue = [
      "session",
      info.state === "closed" ? "closed" : "open",
      running ? "running" : undefined,
      pending ? "pending" : undefined,
      open ? "viewing" : undefined,
    ]
      .filter(Boolean)
      .join(".");
    this.command = { command: "agentBridge.open", title: "Open", arguments: [sessionId] };
  }
}

class MessageNode extends vscode.TreeItem {
  constructor(message: string, command?: vscode.Command) {
    super(message, vscode.TreeItemCollapsibleState.None);
    this.iconPath = new vscode.ThemeIcon("warning");
    this.tooltip = message;
    this.command = command;
  }
}

export class SessionsTree implements vscode.TreeDataProvider<vscode.TreeItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly sub: vscode.Disposable;
  private listed = false;

  constructor(
    private readonly store: SessionStore,
    private readonly bridge: BridgeHost,
  ) {
    this.sub = store.onDidChange((id) => {
      if (id === undefined) this.changed.fire();
    });
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }

  getTreeItem(e: vscode.TreeItem): vscode.TreeItem {
    return e;
  }

  /** Returns the session nodes (what the view shows), listing sessions on first use. */
  async getChildren(): Promise<vscode.TreeItem[]> {
    if (!this.listed) {
      this.listed = true;
      const client = await this.bridge.ensure().catch(() => undefined);
      if (!client) {
        return [new MessageNode(this.bridge.lastProblem ?? "agent-bridge could not be started", { command: "agentBridge.showTrafficLog", title: "Show log" })];
      }
      try {
        await this.store.refresh();
      } catch (err) {
        return [new MessageNode(this.store.explain(err))];
      }
    }
    return this.nodes();
  }

  /** The nodes for the sessions in the store, newest first. */
  nodes(): SessionNode[] {
    return [...this.store.sessions.values()]
      .sort((a, b) => (a.info.createdAt < b.info.createdAt ? 1 : -1))
      .map((e) => new SessionNode(e.info.sessionId, e.info, this.store.pendingCount(e.info.sessionId), !!e.model));
  }

  /** Reads the session list again and redraws. */
  async reload(): Promise<void> {
    this.listed = true;
    await this.store.refresh();
    this.changed.fire();
  }
}
