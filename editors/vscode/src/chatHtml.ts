/**
 * Renders a chat view model as HTML for the webview: streaming text, collapsible
 * thinking and tool calls (with their edits, each opening VS Code's diff view), the
 * plan, approval and question cards with their answer buttons, and the turn's status.
 * Pure: every string from the bridge is escaped here.
 */
import { approvalDetail, approvalOptions, compactJson, questionOptions } from "./approvals";
import type { ChatItem, ChatModel, InteractionItem, ToolItem } from "./chatModel";
import { describeAnswer, meterText, requestTitle } from "./chatModel";
import type { SessionSettings } from "./protocol";

/** Returns `s` with HTML's special characters escaped. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);
}

/**
 * Returns the header's model and mode: each a button that changes it (when the provider
 * offers others) showing the current one's name; and the labels chosen at creation that
 * they do not cover.
 */
export function renderSettings(settings: SessionSettings | undefined, chosen: string[]): string {
  const out: string[] = [];
  for (const which of ["model", "mode"] as const) {
    const s = settings?.[which];
    if (!s) continue;
    const current = s.available?.find((v) => v.id === s.current);
    const name = current?.name || s.current || "default";
    const text = `${which} ${name}`;
    out.push(
      (s.available?.length ?? 0) > 1 || ((s.available?.length ?? 0) === 1 && !current)
        ? `<button class="badge setting" data-action="setting" data-which="${which}" title="Change the ${which}">${escapeHtml(text)} ▾</button>`
        : `<span class="badge setting">${escapeHtml(text)}</span>`,
    );
  }
  const kept = chosen.filter((c) => (c.startsWith("model ") ? !settings?.model : !settings?.mode));
  return kept.map((c) => `<span class="badge chosen">${escapeHtml(c)}</span>`).join("") + out.join("");
}

/** Returns the header line: provider, the model and mode (current, or chosen), state, pending approvals, usage. */
export function renderHeader(model: ChatModel, title: string, providerId: string, chosen: string[] = [], settings?: SessionSettings): string {
  const state = model.closed ? "closed" : model.runState === "running" ? "running" : "idle";
  const pending = model.pendingApprovals;
  const u = model.usage;
  const usage: string[] = [];
  if (u?.context) usage.push(`context ${u.context.usedTokens}${u.context.maxTokens ? `/${u.context.maxTokens}` : ""}`);
  if (u?.cumulative) {
    usage.push(`in ${u.cumulative.inputTokens ?? 0} · out ${u.cumulative.outputTokens ?? 0}`);
    if (u.cumulative.costUsd != null) usage.push(`$${u.cumulative.costUsd.toFixed(4)}`);
  }
  return (
    `<div class="title">${escapeHtml(title)}</div>` +
    `<div class="meta"><span class="badge">${escapeHtml(providerId)}</span>` +
    renderSettings(settings, chosen) +
    `<span class="badge state-${state}">${state}</span>` +
    (pending ? `<span class="badge pending">${pending} pending approval${pending === 1 ? "" : "s"}</span>` : "") +
    (usage.length ? `<span class="usage">${escapeHtml(usage.join(" · "))}</span>` : "") +
    limitBadge(model) +
    `</div>`
  );
}

/** Returns the header's limits badge: the meter closest to its limit, with its reset. */
function limitBadge(model: ChatModel): string {
  const m = model.fullestMeter;
  if (!m) return "";
  return `<span class="badge limit limit-${escapeHtml(m.status ?? "ok")}">limit ${escapeHtml(meterText(m))}</span>`;
}

/** Returns the bar above the input box: what goes with the next prompt, each with its × (index). */
export function renderAttachments(labels: string[]): string {
  return labels
    .map((l, i) => `<span class="chip">${escapeHtml(l)}<button class="link detach" data-action="detach" data-index="${i}" title="Remove">×</button></span>`)
    .join("");
}

/**
 * Where a turn's outcome line offers "Fork from here", from the provider's
 * `capabilities.fork`: `atEvent` at every turn's end, `message` there and at every
 * finished agent message too (`granularity: message`), `atEnd` at the last turn's end
 * only (a fork of the whole history), `none` nowhere (the provider cannot fork).
 */
export type ForkOffer = "message" | "atEvent" | "atEnd" | "none";

/** Returns where a provider's forks may be offered, from its descriptor's `capabilities.fork`. */
export function forkOffer(fork: { atEnd?: boolean; atEvent?: boolean; granularity?: "message" | "run" } | undefined): ForkOffer {
  return fork?.atEvent ? (fork.granularity === "message" ? "message" : "atEvent") : fork?.atEnd ? "atEnd" : "none";
}

/**
 * Returns what to tell the user after a fork at `atEvent` whose provider history was cut
 * at `providerSequence` (the reply's effective point), or undefined when it is exact.
 */
export function forkCutNotice(atEvent: number | undefined, providerSequence: number): string | undefined {
  if (atEvent === undefined || providerSequence >= atEvent) return undefined;
  return providerSequence > 0
    ? `The fork shows the history up to event ${atEvent}, but the agent remembers it only up to event ${providerSequence} (its last complete message there); what came after is not in its memory.`
    : `The fork shows the history up to event ${atEvent}, but the agent remembers none of it (no complete message of its own there).`;
}

/** Returns the HTML of every item of the model (`fork`: where forks are offered). */
export function renderItems(model: ChatModel, fork: ForkOffer = "atEvent"): string {
  let last = -1;
  if (fork === "atEnd" && model.runState === "idle") {
    for (let k = model.items.length - 1; k >= 0; k--) {
      const it = model.items[k];
      if (it.kind === "status" && it.endSequence !== undefined) {
        last = k;
        break;
      }
    }
  }
  const at = (i: ChatItem, k: number): "here" | "whole" | "none" | "message" =>
    fork === "message" && i.kind === "assistant" ? "message" : fork === "atEvent" || fork === "message" ? "here" : k === last ? "whole" : "none";
  return model.items.map((i, k) => renderItem(i, at(i, k))).join("\n");
}

/**
 * Returns the HTML of one chat item. `fork`: a turn's end offers a fork at its last
 * event (`here`), of the whole history (`whole`, the last turn of a provider that forks
 * only that), or none; a finished agent message offers one at its last delta (`message`).
 */
export function renderItem(i: ChatItem, fork: "here" | "whole" | "none" | "message" = "here"): string {
  switch (i.kind) {
    case "user":
      return (
        `<div class="msg user" data-key="${i.key}"><div class="who">You</div><div class="body">${escapeHtml(i.text)}` +
        i.attachments.map((a) => `<div class="attached">${escapeHtml(a)}</div>`).join("") +
        `</div></div>`
      );
    case "assistant":
      return (
        `<div class="msg assistant${i.streaming ? " streaming" : ""}" data-key="${i.key}"><div class="who">Agent</div>` +
        `<div class="body">${escapeHtml(i.text)}${i.streaming ? '<span class="cursor">▍</span>' : ""}</div>` +
        (fork === "message" && !i.streaming
          ? `<button class="link fork" data-action="fork" data-seq="${i.lastSequence}" title="A new session with the history up to this message">Fork from this message</button>`
          : "") +
        `</div>`
      );
    case "thinking":
      return (
        `<details class="thinking" data-key="${i.key}"${i.streaming ? " open" : ""}><summary>Thinking${i.streaming ? "…" : ""}</summary>` +
        `<div class="body">${escapeHtml(i.text)}</div></details>`
      );
    case "tool":
      return renderTool(i);
    case "plan":
      return (
        `<div class="plan" data-key="${i.key}"><div class="who">Plan</div><ul>` +
        i.steps.map((s) => `<li class="step-${s.status}">${s.status === "completed" ? "✓" : s.status === "inProgress" ? "▸" : "○"} ${escapeHtml(s.text)}</li>`).join("") +
        `</ul></div>`
      );
    case "interaction":
      return renderInteraction(i);
    case "status":
      return (
        `<div class="status level-${i.level}" data-key="${i.key}">${escapeHtml(i.text)}` +
        (i.endSequence !== undefined && fork !== "none"
          ? ` <button class="link fork" data-action="fork"${fork === "here" ? ` data-seq="${i.endSequence}"` : ""} title="A new session with the history up to here">Fork from here</button>`
          : "") +
        `</div>`
      );
  }
}

/** Returns what a call without a title acts on, from its input: a Bash call's command,
 * an edit's file; undefined when the input names neither. */
function toolTarget(input: unknown): string | undefined {
  if (typeof input !== "object" || input === null) return undefined;
  const o = input as Record<string, unknown>;
  for (const k of ["command", "file_path", "path"]) {
    if (typeof o[k] === "string" && o[k] !== "") return o[k] as string;
  }
  return undefined;
}

/** Returns the summary of a call that runs a subagent: its type, task, status, usage. */
function subagentHead(t: ToolItem, icon: string): string {
  const a = t.subagent!;
  const u = a.usage;
  const facts: string[] = [a.status ?? t.status];
  if (u?.toolUses != null) facts.push(`${u.toolUses} tool ${u.toolUses === 1 ? "use" : "uses"}`);
  if (u?.totalTokens != null) facts.push(`${u.totalTokens} tokens`);
  const what = a.description ?? t.title;
  return `${icon} Subagent ${a.agentType ?? t.name}${what ? ` — ${what}` : ""} (${facts.join(", ")})`;
}

function renderTool(t: ToolItem): string {
  const icon = t.status === "completed" ? "✓" : t.status === "failed" ? "✗" : "…";
  const what = t.title ?? toolTarget(t.input);
  const head = t.subagent ? subagentHead(t, icon) : `${icon} ${t.name}${what ? ` — ${what}` : ""}${t.exitCode !== undefined ? ` (exit ${t.exitCode})` : ""}`;
  const parts: string[] = [];
  if (t.children.length) parts.push(`<div class="subagent-calls">${t.children.map(renderTool).join("")}</div>`);
  if (t.input !== undefined) parts.push(`<div class="label">Input</div><pre>${escapeHtml(compactJson(t.input, 2000))}</pre>`);
  for (const text of t.texts) parts.push(`<pre>${escapeHtml(text)}</pre>`);
  t.edits.forEach((e, index) => {
    parts.push(
      `<div class="edit"><span class="path">${escapeHtml(e.path)}</span> ` +
        `<span class="edit-kind">${e.oldText == null ? "new file" : e.newText === "" ? "deletion" : "edit"}</span> ` +
        `<button class="link" data-action="openEdit" data-tool="${escapeHtml(t.toolCallId)}" data-run="${escapeHtml(t.runId)}" data-index="${index}">Open diff</button></div>`,
    );
  });
  if (t.output) parts.push(`<div class="label">Output</div><pre>${escapeHtml(t.output)}</pre>`);
  return (
    `<details class="tool${t.subagent ? " subagent" : ""} status-${t.status}" data-key="${t.key}"><summary>${escapeHtml(head)}` +
    (t.edits.length ? ` <span class="badge">${t.edits.length} edit${t.edits.length === 1 ? "" : "s"}</span>` : "") +
    `</summary>${parts.join("")}</details>`
  );
}

function renderInteraction(i: InteractionItem): string {
  const r = i.request;
  let detail = "";
  let buttons = "";
  if (r.kind === "approval") {
    detail = approvalDetail(r);
    if (i.status === "pending") {
      buttons = approvalOptions(r)
        .map((o, n) => `<button data-action="answer" data-interaction="${escapeHtml(i.interactionId)}" data-option="${n}">${escapeHtml(o.label)}</button>`)
        .join("");
    }
  } else if (r.kind === "question") {
    if (i.status === "pending") {
      const q = questionOptions(r);
      buttons = q.options
        .map((o, n) => `<button data-action="answer" data-interaction="${escapeHtml(i.interactionId)}" data-option="${n}">${escapeHtml(o.label)}</button>`)
        .join("");
      if (q.freeText) buttons += `<button data-action="prompt" data-interaction="${escapeHtml(i.interactionId)}">Answer…</button>`;
    }
  } else if (i.status === "pending") {
    detail = r.items.map((x) => x.prompt).join(" · ");
    buttons = `<button data-action="prompt" data-interaction="${escapeHtml(i.interactionId)}">Answer…</button>`;
  }
  const outcome =
    i.status === "pending" ? "waiting for your answer" : i.status === "responded" ? describeAnswer(r, i.answer) + (i.auto ? " (automatically)" : "") : i.status;
  return (
    `<div class="interaction ${r.kind} status-${i.status}" data-key="${i.key}">` +
    `<div class="who">${escapeHtml(requestTitle(r))}</div>` +
    (i.subagent ? `<div class="asked-by">asked by subagent ${escapeHtml(i.subagent)}</div>` : "") +
    (detail ? `<pre class="detail">${escapeHtml(detail)}</pre>` : "") +
    `<div class="outcome">${escapeHtml(outcome)}</div>` +
    (buttons ? `<div class="buttons">${buttons}</div>` : "") +
    `</div>`
  );
}
