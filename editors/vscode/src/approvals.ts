/**
 * What a prompt offers for an interaction: the answer options built from the request
 * (an approval's modes, a question's choices). Pure; the quick pick and the webview's
 * buttons both use it, so they always offer the same answers.
 */
import type { Answer, ApprovalMode, ApprovalRequest, QuestionItem, QuestionRequest } from "./protocol";

export interface AnswerOption {
  /** The label shown (and what the test seam picks by). */
  label: string;
  description?: string;
  answer: Answer;
}

export const ALLOW_ONCE = "Allow once";
export const ALLOW_SESSION = "Allow for this session";
export const DENY = "Deny";
export const FREE_TEXT = "Type an answer…";

/**
 * Returns the options of an approval: allow once and/or allow for the session (only the
 * modes the request offers; `["once"]` when it names none), and deny.
 */
export function approvalOptions(req: ApprovalRequest): AnswerOption[] {
  const modes: ApprovalMode[] = req.modes && req.modes.length ? req.modes : ["once"];
  const out: AnswerOption[] = [];
  if (modes.includes("once")) {
    out.push({ label: ALLOW_ONCE, description: "this call only", answer: { kind: "approval", decision: "allow", mode: "once" } });
  }
  if (modes.includes("session")) {
    out.push({
      label: ALLOW_SESSION,
      description: req.toolName ? `every ${req.toolName} call in this session` : "the rest of this session",
      answer: { kind: "approval", decision: "allow", mode: "session" },
    });
  }
  out.push({ label: DENY, answer: { kind: "approval", decision: "deny" } });
  return out;
}

/** Returns a question's choices as options, and whether free text is accepted too. */
export function questionOptions(req: QuestionRequest): { options: AnswerOption[]; freeText: boolean } {
  const choices = req.choices ?? [];
  const options: AnswerOption[] = choices.map((c) => ({
    label: c.label,
    description: c.label === c.id ? undefined : c.id,
    answer: { kind: "question", choice: c.id },
  }));
  return { options, freeText: choices.length === 0 || (req.allowFreeText ?? false) };
}

/** Returns the choice labels of one item of a question set (empty: free text). */
export function questionSetItemOptions(item: QuestionItem): Array<{ label: string; value: string }> {
  return (item.choices ?? []).map((c) => ({ label: c.label, value: c.id }));
}

/** Returns the detail line of an approval: the command or tool input it would run. */
export function approvalDetail(req: ApprovalRequest): string {
  const parts: string[] = [];
  if (req.command) parts.push(`$ ${req.command}`);
  else if (req.input !== undefined && req.input !== null) parts.push(compactJson(req.input));
  if (req.cwd) parts.push(`in ${req.cwd}`);
  return parts.join("  ");
}

/** Returns JSON on one line, cut at `max` characters. */
export function compactJson(v: unknown, max = 200): string {
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}
