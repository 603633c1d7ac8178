/**
 * Demo mode, for the README's screenshot (scripts/screenshot.sh): when VS Code starts
 * the extension with AGENT_BRIDGE_VSCODE_DEMO set to a file path, it opens the Sessions
 * view, runs two scripted turns through its commands with the real UI (the second with
 * the selection of hello.py attached), leaves the second turn's approval pending in the
 * chat (its quick pick dismissed, so the chat's header stays visible), and then writes that file. With
 * AGENT_BRIDGE_VSCODE_DEMO_DIFF set it stops after the first turn and opens its edit in
 * the diff view beside the chat instead. Nothing here runs
 * unless the variable is set.
 */
import * as fs from "fs";
import * as vscode from "vscode";
import { ChatPanel } from "./chatPanel";
import { openEditDiff } from "./diff";
import type { ExtensionApi } from "./extension";

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function until(cond: () => boolean, ms = 30000): Promise<void> {
  const t0 = Date.now();
  while (!cond() && Date.now() - t0 < ms) await delay(50);
}

/** Runs the demo session and writes `readyFile` (with `ok` or the error). */
export async function runDemo(api: ExtensionApi, readyFile: string): Promise<void> {
  const out: Record<string, unknown> = {};
  try {
    const exec = <T>(cmd: string, ...args: unknown[]): Promise<T> => Promise.resolve(vscode.commands.executeCommand<T>(cmd, ...args));
    await exec("workbench.view.extension.agentBridge");
    await exec("agentBridge.refreshSessions");
    const sessionId = await exec<string | undefined>("agentBridge.newSession", { provider: "scripted", prompt: false, title: "Fix the greeting" });
    if (!sessionId) throw new Error("no session");
    const model = () => api.store.sessions.get(sessionId)?.model;
    await exec("agentBridge.prompt", { sessionId, text: "Fix the greeting in hello.py" });
    await until(() => (model()?.transcript() ?? "").includes("Turn completed"));
    if (process.env.AGENT_BRIDGE_VSCODE_DEMO_DIFF) {
      // The second picture: the edit of the first turn in VS Code's diff view beside the chat.
      const tool = model()?.items.find((i) => i.kind === "tool" && i.edits.length > 0);
      if (tool && tool.kind === "tool") await openEditDiff(api.edits, tool.edits[0], sessionId, vscode.ViewColumn.Beside);
      await delay(1500);
      out.ok = true;
      fs.writeFileSync(readyFile, JSON.stringify(out));
      return;
    }
    // the selection of hello.py goes with the next prompt
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (folder) {
      const editor = await vscode.window.showTextDocument(vscode.Uri.joinPath(folder, "hello.py"), { preview: false });
      editor.selection = new vscode.Selection(0, 0, 0, 5);
      await exec("agentBridge.sendContext", { sessionId });
    }
    await exec("agentBridge.prompt", { sessionId, text: "Now run the tests" });
    await until(() => api.store.pendingCount(sessionId) === 1);
    // The approval's quick pick would cover the chat's header (its model and mode
    // buttons): it is dismissed as Escape would; the approval stays pending, answerable
    // from its card in the chat (and Answer Pending Approvals).
    await delay(500);
    await exec("workbench.action.closeQuickOpen");
    await ChatPanel.panels.get(sessionId)?.whenRendered();
    await delay(1500);
    out.ok = true;
    out.sessionId = sessionId;
  } catch (err) {
    out.error = String(err);
  }
  fs.writeFileSync(readyFile, JSON.stringify(out));
}
