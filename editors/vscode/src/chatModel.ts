/**
 * The chat view model of one session: events in, a list of chat items out. Pure (no
 * VS Code API): the webview renders it, the tests assert it.
 *
 * Events are applied in `sequence` order. An event at or below the last applied
 * sequence is a duplicate (a replay after attach) and is skipped; a jump past the next
 * sequence is recorded as a gap, so a reattach that lost events is visible.
 */
import type {
  Answer,
  EventEnvelope,
  InteractionRequest,
  InteractionStatus,
  LimitMeter,
  PlanStep,
  Subagent,
  ToolActivity,
  ToolEdit,
  ToolLocation,
  Usage,
} from "./protocol";
import { knownPayload } from "./protocol";
import { describeBlock } from "./context";

export interface UserItem {
  kind: "user";
  key: string;
  runId: string;
  text: string;
  /** What the prompt carried besides its text, one line each ("@ hello.py:1-2", "/review"). */
  attachments: string[];
}

export interface AssistantItem {
  kind: "assistant";
  key: string;
  runId: string;
  text: string;
  deltas: number;
  streaming: boolean;
  /** The sequence of its latest delta: where a fork at this message is made. */
  lastSequence: number;
}

export interface ThinkingItem {
  kind: "thinking";
  key: string;
  runId: string;
  text: string;
  streaming: boolean;
}

export interface ToolItem {
  kind: "tool";
  key: string;
  runId: string;
  toolCallId: string;
  name: string;
  title: string | undefined;
  toolKind: string | undefined;
  status: ToolActivity["status"];
  input: unknown;
  output: string;
  exitCode: number | undefined;
  edits: ToolEdit[];
  texts: string[];
  locations: ToolLocation[];
  /** The call that runs the subagent this call was made in (it is drawn under it). */
  parentToolCallId: string | undefined;
  /** For a call that runs a subagent: its type, task, status and usage. */
  subagent: Subagent | undefined;
  /** The calls made inside this call's subagent, in order. */
  children: ToolItem[];
}

export interface PlanItem {
  kind: "plan";
  key: string;
  runId: string;
  steps: PlanStep[];
}

export interface InteractionItem {
  kind: "interaction";
  key: string;
  runId: string;
  interactionId: string;
  request: InteractionRequest;
  status: InteractionStatus;
  answer: Answer | undefined;
  auto: boolean;
  /** For an approval a subagent asks for: which one ("Explore — Find the bug"). */
  subagent?: string;
}

export type StatusLevel = "info" | "warning" | "error";

export interface StatusItem {
  kind: "status";
  key: string;
  runId: string | undefined;
  text: string;
  level: StatusLevel;
  /** For a run's end: the sequence of that event (a fork may be made there). */
  endSequence?: number;
}

export type ChatItem = UserItem | AssistantItem | ThinkingItem | ToolItem | PlanItem | InteractionItem | StatusItem;

export type RunState = "idle" | "running";

/** Returns a readable one-line summary of an interaction's answer. */
export function describeAnswer(request: InteractionRequest, answer: Answer | undefined): string {
  if (!answer) return "";
  switch (answer.kind) {
    case "approval":
      return answer.decision === "deny" ? "denied" : answer.mode === "session" ? "allowed for this session" : "allowed once";
    case "question": {
      if (answer.choice != null) {
        const choices = request.kind === "question" ? (request.choices ?? []) : [];
        const c = choices.find((x) => x.id === answer.choice);
        return `answered: ${c ? c.label : answer.choice}`;
      }
      return `answered: ${answer.text ?? ""}`;
    }
    case "questionSet":
      return (
        "answered: " +
        Object.keys(answer.answers)
          .sort()
          .map((k) => `${k}=${answer.answers[k]}`)
          .join(", ")
      );
  }
}

/** The view model of one session's chat. */
export class ChatModel {
  readonly items: ChatItem[] = [];
  /** The highest sequence applied (0 before any event). */
  lastSequence = 0;
  /** Ranges `[from, to]` of sequences that never arrived. */
  readonly gaps: Array<[number, number]> = [];
  /** Events skipped because their sequence was already applied. */
  duplicates = 0;
  /** Events of types this version does not know (ignored, counted). */
  unknownEvents = 0;
  activeRunId: string | undefined;
  closed = false;
  usage: Usage | undefined;
  /** The latest figures of each limits meter, by `pool/meter`. */
  readonly limits = new Map<string, LimitMeter>();
  /** Bumped on every change; the webview re-renders when it moves. */
  version = 0;
  private readonly tools = new Map<string, ToolItem>();
  private readonly interactions = new Map<string, InteractionItem>();
  private counter = 0;

  /** `workspace`: the session's (its files are shown relative to it). */
  constructor(
    readonly sessionId: string,
    readonly workspace?: string,
  ) {}

  /** The run state: `running` while a run started and has not ended. */
  get runState(): RunState {
    return this.activeRunId ? "running" : "idle";
  }

  /** Interactions requested and not settled yet. */
  get pendingInteractions(): InteractionItem[] {
    return [...this.interactions.values()].filter((i) => i.status === "pending");
  }

  /** How many approvals wait for an answer. */
  get pendingApprovals(): number {
    return this.pendingInteractions.filter((i) => i.request.kind === "approval").length;
  }

  /** Every event sequence applied is contiguous from the first (no gap recorded). */
  get contiguous(): boolean {
    return this.gaps.length === 0;
  }

  /** Resets the model to empty (before a full replay). */
  reset(): void {
    this.items.length = 0;
    this.gaps.length = 0;
    this.tools.clear();
    this.interactions.clear();
    this.lastSequence = 0;
    this.duplicates = 0;
    this.activeRunId = undefined;
    this.closed = false;
    this.usage = undefined;
    this.limits.clear();
    this.version++;
  }

  /** Applies several events in order; returns how many changed the model. */
  applyAll(events: readonly EventEnvelope[]): number {
    let n = 0;
    for (const e of events) if (this.apply(e)) n++;
    return n;
  }

  /**
   * Applies one event of this session; returns false when it was skipped (another
   * session's, or a duplicate by sequence).
   */
  apply(e: EventEnvelope): boolean {
    if (e.sessionId !== this.sessionId) return false;
    if (e.sequence <= this.lastSequence) {
      this.duplicates++;
      return false;
    }
    if (e.sequence > this.lastSequence + 1) this.gaps.push([this.lastSequence + 1, e.sequence - 1]);
    this.lastSequence = e.sequence;
    this.version++;
    const runId = e.runId ?? "";
    const p = knownPayload(e);
    if (!p) {
      this.unknownEvents++;
      return true;
    }
    switch (p.type) {
      case "run.started":
        this.activeRunId = runId;
        this.closed = false;
        this.push({
          kind: "user",
          key: this.key(),
          runId,
          text: p.input,
          attachments: (p.content ?? []).map((b) => describeBlock(b, this.workspace)).filter((d): d is string => d !== undefined),
        });
        break;
      case "text.delta": {
        const last = this.items[this.items.length - 1];
        if (last && last.kind === "assistant" && last.runId === runId && last.streaming) {
          last.text += p.text;
          last.deltas++;
          last.lastSequence = e.sequence;
        } else {
          this.push({ kind: "assistant", key: this.key(), runId, text: p.text, deltas: 1, streaming: true, lastSequence: e.sequence });
        }
        break;
      }
      case "thinking.delta": {
        const last = this.items[this.items.length - 1];
        if (last && last.kind === "thinking" && last.runId === runId && last.streaming) {
          last.text += p.text;
        } else {
          this.push({ kind: "thinking", key: this.key(), runId, text: p.text, streaming: true });
        }
        break;
      }
      case "tool.activity":
        this.applyTool(runId, p);
        break;
      case "plan.updated": {
        const existing = this.items.find((i): i is PlanItem => i.kind === "plan" && i.runId === runId);
        if (existing) existing.steps = p.steps;
        else this.push({ kind: "plan", key: this.key(), runId, steps: p.steps });
        break;
      }
      case "usage":
        this.usage = p;
        break;
      case "limits.updated":
        for (const m of p.meters) {
          this.limits.set(`${m.pool}/${m.meter}`, m);
          if (m.status === "warning" || m.status === "exhausted") {
            this.push({ kind: "status", key: this.key(), runId: e.runId ?? undefined, text: `Limit ${meterText(m)}`, level: "warning" });
          }
        }
        break;
      case "diagnostic":
        this.push({
          kind: "status",
          key: this.key(),
          runId: e.runId ?? undefined,
          text: `${p.code}${p.message ? `: ${p.message}` : ""}`,
          level: p.level,
        });
        break;
      case "interaction.requested": {
        const item: InteractionItem = {
          kind: "interaction",
          key: this.key(),
          runId,
          interactionId: p.interactionId,
          request: p.request,
          status: "pending",
          answer: undefined,
          auto: false,
        };
        const parentId = p.request.kind === "approval" ? p.request.parentToolCallId : undefined;
        if (parentId) {
          const a = (this.tools.get(`${runId}/${parentId}`) ?? this.tools.get(parentId))?.subagent;
          item.subagent = a ? [a.agentType, a.description].filter((x) => x).join(" — ") || "a subagent" : "a subagent";
        }
        this.interactions.set(p.interactionId, item);
        this.push(item);
        break;
      }
      case "interaction.settled": {
        const item = this.interactions.get(p.interactionId);
        if (item) {
          item.status = p.status;
          item.answer = p.answer ?? undefined;
          item.auto = p.auto ?? false;
        }
        break;
      }
      case "run.completed":
        this.endRun(runId, `Turn completed${p.stopReason ? ` (${p.stopReason})` : ""}`, "info", e.sequence);
        break;
      case "run.failed":
        this.endRun(runId, `Turn failed: ${p.error.message} (${p.error.code})${limitOf(p.error.details)}${nextStepOf(p.error.details)}`, "error", e.sequence);
        break;
      case "run.interrupted":
        this.endRun(runId, `Turn interrupted (${p.reason}${p.forced ? ", forced" : ""})`, "warning", e.sequence);
        break;
      case "session.closed":
        this.closed = true;
        this.activeRunId = undefined;
        this.push({ kind: "status", key: this.key(), runId: undefined, text: `Session closed (${p.reason})`, level: "info" });
        break;
      case "session.imported":
        // The earlier turns of a provider's own session, read from its history: done.
        for (const i of this.items) if (i.kind === "assistant" || i.kind === "thinking") i.streaming = false;
        this.push({ kind: "status", key: this.key(), runId: undefined, text: `Imported ${p.records} earlier record${p.records === 1 ? "" : "s"} from ${p.provider}'s own history`, level: "info" });
        break;
      case "session.resumed":
        this.closed = false;
        this.push({ kind: "status", key: this.key(), runId: undefined, text: "Session resumed", level: "info" });
        break;
    }
    return true;
  }

  /** Returns the tool item of a call, when the model has it. */
  tool(toolCallId: string): ToolItem | undefined {
    return this.tools.get(toolCallId);
  }

  /** The plain text of the chat, one item a line (what the tests and the log read). */
  transcript(): string {
    return this.items.map(itemText).join("\n");
  }

  private applyTool(runId: string, p: ToolActivity): void {
    const keyId = `${runId}/${p.toolCallId}`;
    let item = this.tools.get(keyId) ?? this.tools.get(p.toolCallId);
    if (!item || item.runId !== runId) {
      item = {
        kind: "tool",
        key: this.key(),
        runId,
        toolCallId: p.toolCallId,
        name: p.name,
        title: undefined,
        toolKind: undefined,
        status: p.status,
        input: undefined,
        output: "",
        exitCode: undefined,
        edits: [],
        texts: [],
        locations: [],
        parentToolCallId: p.parentToolCallId ?? undefined,
        subagent: undefined,
        children: [],
      };
      this.tools.set(keyId, item);
      this.tools.set(p.toolCallId, item);
      // A call made inside a subagent goes under the call that runs it.
      const parent = item.parentToolCallId ? (this.tools.get(`${runId}/${item.parentToolCallId}`) ?? this.tools.get(item.parentToolCallId)) : undefined;
      if (parent) parent.children.push(item);
      else this.push(item);
    }
    if (p.subagent) item.subagent = { ...item.subagent, ...p.subagent };
    if (p.status !== "output") item.status = p.status;
    if (p.input !== undefined) item.input = p.input;
    if (p.output) item.output += p.output;
    if (p.exitCode != null) item.exitCode = p.exitCode;
    if (p.title) item.title = p.title;
    if (p.kind) item.toolKind = p.kind;
    if (p.locations && p.locations.length) item.locations = p.locations;
    for (const c of p.content ?? []) {
      if (c.type === "edit") {
        const i = item.edits.findIndex((x) => x.path === c.path && x.newText === c.newText && x.oldText === c.oldText);
        if (i < 0) item.edits.push(c);
      } else if (c.type === "text" && !item.texts.includes(c.text)) {
        item.texts.push(c.text);
      }
    }
  }

  /** The meter closest to its limit (highest percent), when any was reported. */
  get fullestMeter(): LimitMeter | undefined {
    let best: LimitMeter | undefined;
    for (const m of this.limits.values()) if ((m.percent ?? -1) > (best?.percent ?? -1)) best = m;
    return best;
  }

  private endRun(runId: string, text: string, level: StatusLevel, endSequence: number): void {
    for (const i of this.items) {
      if ((i.kind === "assistant" || i.kind === "thinking") && i.runId === runId) i.streaming = false;
    }
    if (this.activeRunId === runId) this.activeRunId = undefined;
    this.push({ kind: "status", key: this.key(), runId, text, level, endSequence });
  }

  private push(item: ChatItem): void {
    this.items.push(item);
  }

  private key(): string {
    return `i${++this.counter}`;
  }
}

/** Returns when a time (ISO 8601) is, in local words: "today 17:00", "tomorrow 09:30",
 * else "Wed 2 Jan 07:00" (the local time zone; `now` for the tests). */
export function resetWords(iso: string, now: Date = new Date()): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  const pad = (n: number): string => String(n).padStart(2, "0");
  const hm = `${pad(t.getHours())}:${pad(t.getMinutes())}`;
  const day = (d: Date): string => `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;
  const tomorrow = new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1);
  if (day(t) === day(now)) return `today ${hm}`;
  if (day(t) === day(tomorrow)) return `tomorrow ${hm}`;
  const wd = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][t.getDay()];
  const mo = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][t.getMonth()];
  return `${wd} ${t.getDate()} ${mo} ${hm}`;
}

/** Returns a short text of a limits meter: pool, meter, percent, status, reset. */
export function meterText(m: LimitMeter, now?: Date): string {
  const pc = m.percent != null ? ` ${Math.round(m.percent * 10) / 10}%` : "";
  const st = m.status === "warning" || m.status === "exhausted" ? ` ${m.status}` : "";
  return `${m.pool} ${m.meter}${pc}${st}${m.resetsAt ? `, resets ${resetWords(m.resetsAt, now)}` : ""}`;
}

function limitOf(details: { cause?: string | null; resetsAt?: string | null; retryAfterSeconds?: string | number | null } | null | undefined): string {
  const cause = details?.cause;
  if (cause !== "rate_limited" && cause !== "quota_exhausted") return "";
  const what = cause === "rate_limited" ? "rate limited" : "quota exhausted";
  if (details?.resetsAt) return ` — ${what}, resets ${resetWords(details.resetsAt)}`;
  if (details?.retryAfterSeconds != null) return ` — ${what}, retry after ${details.retryAfterSeconds} s`;
  return ` — ${what}`;
}

function nextStepOf(details: { nextStep?: string } | null | undefined): string {
  return details?.nextStep ? `. Next step: ${details.nextStep}` : "";
}

/** Returns one line of plain text for an item. */
export function itemText(i: ChatItem): string {
  switch (i.kind) {
    case "user":
      // (a command alone: its line is the prompt)
      if (!i.text && i.attachments.length) return [`You: ${i.attachments[0]}`, ...i.attachments.slice(1).map((a) => `  ${a}`)].join("\n");
      return [`You: ${i.text}`, ...i.attachments.map((a) => `  ${a}`)].join("\n");
    case "assistant":
      return `Agent: ${i.text}`;
    case "thinking":
      return `Thinking: ${i.text}`;
    case "tool":
      return `Tool ${i.name}${i.title ? ` (${i.title})` : ""}: ${i.status}${i.edits.length ? `, edits ${i.edits.map((e) => e.path).join(", ")}` : ""}`;
    case "plan":
      return `Plan: ${i.steps.map((s) => `[${s.status}] ${s.text}`).join("; ")}`;
    case "interaction":
      return `${requestTitle(i.request)}${i.subagent ? ` (subagent ${i.subagent})` : ""}: ${i.status === "pending" ? "waiting for your answer" : i.status === "responded" ? describeAnswer(i.request, i.answer) : i.status}`;
    case "status":
      return `-- ${i.text}`;
  }
}

/** Returns the title a prompt shows for an interaction request. */
export function requestTitle(r: InteractionRequest): string {
  switch (r.kind) {
    case "approval":
      return `Approval: ${r.title}`;
    case "question":
      return `Question: ${r.prompt}`;
    case "questionSet":
      return `Questions: ${r.title}`;
  }
}
