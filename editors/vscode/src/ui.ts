/**
 * The seam between the extension and the user's answers: quick picks, input boxes and
 * messages. `VsCodeUi` shows VS Code's own; the test mode puts a scripted one in its
 * place (src/testMode.ts) that picks options by label and records what was offered.
 */
import * as vscode from "vscode";
import { approvalDetail, approvalOptions, FREE_TEXT, questionOptions, questionSetItemOptions } from "./approvals";
import { requestTitle } from "./chatModel";
import type { Answer, InteractionRequest } from "./protocol";

export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

export interface Ui {
  /** Returns the picked item's value, or undefined when dismissed or `token` is cancelled. */
  pick<T>(title: string, items: PickItem<T>[], token?: vscode.CancellationToken): Promise<T | undefined>;
  /** Returns the text typed, or undefined when dismissed or cancelled. */
  input(title: string, placeholder?: string, token?: vscode.CancellationToken): Promise<string | undefined>;
  /** Returns the path of the file picked (filters: label → extensions), or undefined when dismissed. */
  chooseFile(title: string, filters: Record<string, string[]>): Promise<string | undefined>;
  /** Shows an error with action buttons; returns the action chosen. */
  error(message: string, ...actions: string[]): Promise<string | undefined>;
  /** Shows information with action buttons; returns the action chosen. */
  info(message: string, ...actions: string[]): Promise<string | undefined>;
}

/** The real UI: VS Code's quick pick, input box and notifications. */
export class VsCodeUi implements Ui {
  async pick<T>(title: string, items: PickItem<T>[], token?: vscode.CancellationToken): Promise<T | undefined> {
    const picked = await vscode.window.showQuickPick(
      items.map((i) => ({ label: i.label, description: i.description, detail: i.detail, item: i })),
      { title, placeHolder: title, ignoreFocusOut: true, matchOnDescription: true },
      token,
    );
    return picked?.item.value;
  }
  async input(title: string, placeholder?: string, token?: vscode.CancellationToken): Promise<string | undefined> {
    return vscode.window.showInputBox({ title, prompt: title, placeHolder: placeholder, ignoreFocusOut: true }, token);
  }
  async chooseFile(title: string, filters: Record<string, string[]>): Promise<string | undefined> {
    const picked = await vscode.window.showOpenDialog({ title, openLabel: "Attach", canSelectMany: false, canSelectFolders: false, filters });
    return picked?.[0]?.fsPath;
  }
  async error(message: string, ...actions: string[]): Promise<string | undefined> {
    return vscode.window.showErrorMessage(message, ...actions);
  }
  async info(message: string, ...actions: string[]): Promise<string | undefined> {
    return vscode.window.showInformationMessage(message, ...actions);
  }
}

/**
 * Asks the user for an interaction's answer through `ui`: an approval's modes, a
 * question's choices (or free text), each item of a question set. Returns undefined
 * when the user dismissed a prompt (the interaction stays pending).
 */
export async function askAnswer(ui: Ui, request: InteractionRequest, token?: vscode.CancellationToken): Promise<Answer | undefined> {
  switch (request.kind) {
    case "approval": {
      // The command (or input) goes in the title once, unless the title already says it.
      const detail = approvalDetail(request);
      const title = requestTitle(request);
      const shown = detail && !title.includes(detail.replace(/^\$ /, "").split("  ")[0]) ? `${title} — ${detail}` : title;
      const items = approvalOptions(request).map((o) => ({ label: o.label, description: o.description, value: o.answer }));
      return ui.pick(shown, items, token);
    }
    case "question": {
      const q = questionOptions(request);
      if (q.options.length === 0) {
        const text = await ui.input(request.prompt, undefined, token);
        return text === undefined ? undefined : { kind: "question", text };
      }
      const items: PickItem<Answer | "text">[] = q.options.map((o) => ({ label: o.label, description: o.description, value: o.answer }));
      if (q.freeText) items.push({ label: FREE_TEXT, value: "text" });
      const picked = await ui.pick(requestTitle(request), items, token);
      if (picked !== "text") return picked;
      const text = await ui.input(request.prompt, undefined, token);
      return text === undefined ? undefined : { kind: "question", text };
    }
    case "questionSet": {
      const answers: Record<string, string> = {};
      for (const item of request.items) {
        const choices = questionSetItemOptions(item);
        const value = choices.length
          ? await ui.pick(`${request.title}: ${item.prompt}`, choices.map((c) => ({ label: c.label, value: c.value })), token)
          : await ui.input(`${request.title}: ${item.prompt}`, undefined, token);
        if (value === undefined) return undefined;
        answers[item.key] = value;
      }
      return { kind: "questionSet", answers };
    }
  }
}
