/**
 * Opens a structured edit from a `tool.activity` event (`ToolEdit`: path, oldText,
 * newText) in VS Code's own diff view (`vscode.diff`), through a read-only virtual
 * document provider that serves both sides.
 */
import * as path from "path";
import * as vscode from "vscode";
import type { ToolEdit } from "./protocol";

export const EDIT_SCHEME = "agent-bridge-edit";

/** Serves the two sides of every edit opened so far, by URI. */
export class EditContentProvider implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private counter = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? "";
  }

  /** Returns the URIs of the original and edited sides of `edit`, registered for serving. */
  register(edit: ToolEdit, label: string): { left: vscode.Uri; right: vscode.Uri } {
    const n = ++this.counter;
    const base = edit.path.replace(/^\/+/, "");
    const left = vscode.Uri.from({ scheme: EDIT_SCHEME, path: `/${base}`, query: `side=original&n=${n}&of=${encodeURIComponent(label)}` });
    const right = vscode.Uri.from({ scheme: EDIT_SCHEME, path: `/${base}`, query: `side=edited&n=${n}&of=${encodeURIComponent(label)}` });
    this.contents.set(left.toString(), edit.oldText ?? "");
    this.contents.set(right.toString(), edit.newText);
    return { left, right };
  }
}

/** Returns the diff view's title for an edit. */
export function diffTitle(edit: ToolEdit): string {
  const kind = edit.oldText == null ? "new file" : edit.newText === "" ? "deleted text" : "agent edit";
  return `${path.basename(edit.path)} (${kind})`;
}

/** Opens `edit` in the diff view; returns the title it was opened under. */
export async function openEditDiff(
  provider: EditContentProvider,
  edit: ToolEdit,
  label: string,
  viewColumn: vscode.ViewColumn = vscode.ViewColumn.Active,
): Promise<string> {
  const { left, right } = provider.register(edit, label);
  const title = diffTitle(edit);
  await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true, viewColumn });
  return title;
}
