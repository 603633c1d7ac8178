import { test } from "node:test";
import * as assert from "node:assert/strict";
import { ChatModel, describeAnswer, meterText, resetWords } from "../chatModel";
import type { EventEnvelope, EventPayload } from "../protocol";

const SID = "ses_1";
function ev(sequence: number, payload: EventPayload | { type: string; [k: string]: unknown }, runId: string | undefined = "run_1"): EventEnvelope {
  return { eventId: `evt_${sequence}`, sessionId: SID, sequence, occurredAt: "2025-01-01T00:00:00Z", payload, ...(runId ? { runId } : {}) };
}

test("text deltas stream into one assistant message, ended by the terminal event", () => {
  const m = new ChatModel(SID);
  m.applyAll([
    ev(1, { type: "run.started", input: "hi" }),
    ev(2, { type: "text.delta", text: "Hel" }),
    ev(3, { type: "text.delta", text: "lo, " }),
    ev(4, { type: "text.delta", text: "world" }),
  ]);
  assert.equal(m.runState, "running");
  const a = m.items[1];
  assert.equal(a.kind, "assistant");
  assert.ok(a.kind === "assistant" && a.text === "Hello, world" && a.deltas === 3 && a.streaming);
  m.apply(ev(5, { type: "run.completed", stopReason: "end_turn" }));
  assert.equal(m.runState, "idle");
  assert.ok(a.kind === "assistant" && !a.streaming);
  assert.equal(m.transcript(), "You: hi\nAgent: Hello, world\n-- Turn completed (end_turn)");
});

test("thinking, tool calls with edits and the plan become their own items", () => {
  const m = new ChatModel(SID);
  const edit = { type: "edit" as const, path: "src/a.py", oldText: "x = 1\n", newText: "x = 2\n" };
  m.applyAll([
    ev(1, { type: "run.started", input: "go" }),
    ev(2, { type: "thinking.delta", text: "Let me " }),
    ev(3, { type: "thinking.delta", text: "look." }),
    ev(4, { type: "plan.updated", steps: [{ text: "Edit", status: "inProgress" }] }),
    ev(5, { type: "tool.activity", toolCallId: "c1", name: "Edit", status: "started", kind: "edit", title: "Edit src/a.py", content: [edit] }),
    ev(6, { type: "tool.activity", toolCallId: "c1", name: "Edit", status: "output", output: "ok\n" }),
    ev(7, { type: "tool.activity", toolCallId: "c1", name: "Edit", status: "completed", content: [edit], exitCode: 0 }),
    ev(8, { type: "plan.updated", steps: [{ text: "Edit", status: "completed" }] }),
  ]);
  assert.deepEqual(m.items.map((i) => i.kind), ["user", "thinking", "plan", "tool"]);
  const t = m.tool("c1");
  assert.ok(t);
  assert.equal(t.status, "completed");
  assert.equal(t.output, "ok\n");
  assert.equal(t.exitCode, 0);
  assert.equal(t.title, "Edit src/a.py");
  assert.deepEqual(t.edits, [edit], "the same edit on two events is kept once");
  const plan = m.items[2];
  assert.ok(plan.kind === "plan" && plan.steps[0].status === "completed");
  const th = m.items[1];
  assert.ok(th.kind === "thinking" && th.text === "Let me look.");
});

test("a replayed event is skipped by sequence and a jump is recorded as a gap", () => {
  const m = new ChatModel(SID);
  m.applyAll([ev(1, { type: "run.started", input: "a" }), ev(2, { type: "text.delta", text: "x" })]);
  assert.equal(m.apply(ev(2, { type: "text.delta", text: "x" })), false);
  assert.equal(m.apply(ev(1, { type: "run.started", input: "a" })), false);
  assert.equal(m.duplicates, 2);
  assert.ok(m.contiguous);
  m.apply(ev(5, { type: "text.delta", text: "y" }));
  assert.deepEqual(m.gaps, [[3, 4]]);
  assert.equal(m.contiguous, false);
  assert.equal(m.apply({ ...ev(6, { type: "text.delta", text: "z" }), sessionId: "other" }), false, "another session's event");
});

test("interactions count as pending until settled; the answer is described", () => {
  const m = new ChatModel(SID);
  const request = { kind: "approval" as const, action: "tool", title: "Run `ls`", modes: ["once" as const, "session" as const] };
  m.applyAll([ev(1, { type: "run.started", input: "a" }), ev(2, { type: "interaction.requested", interactionId: "int_1", request })]);
  assert.equal(m.pendingApprovals, 1);
  m.apply(ev(3, { type: "interaction.settled", interactionId: "int_1", status: "responded", answer: { kind: "approval", decision: "allow", mode: "session" } }));
  assert.equal(m.pendingApprovals, 0);
  assert.match(m.transcript(), /Approval: Run `ls`: allowed for this session/);
  const q = { kind: "question" as const, prompt: "Which?", choices: [{ id: "a", label: "Alpha" }] };
  assert.equal(describeAnswer(q, { kind: "question", choice: "a" }), "answered: Alpha");
  assert.equal(describeAnswer(q, { kind: "question", text: "free" }), "answered: free");
  assert.equal(describeAnswer({ kind: "questionSet", title: "T", items: [] }, { kind: "questionSet", answers: { b: "2", a: "1" } }), "answered: a=1, b=2");
});

test("failed and interrupted turns, closed and resumed sessions say so", () => {
  const m = new ChatModel(SID);
  m.applyAll([
    ev(1, { type: "run.started", input: "a" }),
    ev(2, { type: "run.failed", error: { code: "provider_unavailable", message: "the provider is not available on this machine", retryable: false, details: { nextStep: "install it" } } }),
    ev(3, { type: "run.started", input: "b" }, "run_2"),
    ev(4, { type: "run.interrupted", reason: "user" }, "run_2"),
    ev(5, { type: "session.closed", reason: "shutdown" }, undefined),
    ev(6, { type: "session.resumed" }, undefined),
  ]);
  const lines = m.transcript().split("\n");
  assert.equal(lines[1], "-- Turn failed: the provider is not available on this machine (provider_unavailable). Next step: install it");
  assert.equal(lines[3], "-- Turn interrupted (user)");
  assert.equal(lines[4], "-- Session closed (shutdown)");
  assert.equal(lines[5], "-- Session resumed");
  assert.equal(m.closed, false);
});

test("an event type from a later version is counted and ignored", () => {
  const m = new ChatModel(SID);
  assert.equal(m.apply(ev(1, { type: "future.thing", x: 1 })), true);
  assert.equal(m.unknownEvents, 1);
  assert.equal(m.items.length, 0);
  assert.equal(m.lastSequence, 1);
});

test("a call made inside a subagent goes under the call that runs it, not in the chat", () => {
  const m = new ChatModel(SID);
  m.applyAll([
    ev(1, { type: "run.started", input: "look" }),
    ev(2, { type: "tool.activity", toolCallId: "task1", name: "Task", status: "started", subagent: { agentType: "Explore", description: "Find it", status: "running" } }),
    ev(3, { type: "tool.activity", toolCallId: "read1", name: "Read", status: "started", input: { file_path: "a.c" }, parentToolCallId: "task1" }),
    ev(4, { type: "tool.activity", toolCallId: "read1", name: "Read", status: "completed", parentToolCallId: "task1" }),
    ev(5, { type: "tool.activity", toolCallId: "task1", name: "Task", status: "output", subagent: { status: "completed", usage: { toolUses: 1 } } }),
  ]);
  assert.deepEqual(m.items.map((i) => i.kind), ["user", "tool"]);
  const task = m.tool("task1")!;
  assert.deepEqual(task.children.map((c) => [c.toolCallId, c.status]), [["read1", "completed"]]);
  assert.deepEqual(task.subagent, { agentType: "Explore", description: "Find it", status: "completed", usage: { toolUses: 1 } });
});

test("limits: meters kept, a warning or exhausted one is a line, a limit failure says when it resets", () => {
  const m = new ChatModel(SID);
  const resetsAt = "2030-01-02T05:00:00Z";
  m.applyAll([
    ev(1, { type: "run.started", input: "go" }),
    ev(2, { type: "limits.updated", meters: [
      { pool: "claude", meter: "five_hour", percent: 100, resetsAt, status: "exhausted" },
      { pool: "claude", meter: "seven_day", percent: 41.5, status: "ok" },
    ] }),
    ev(3, { type: "run.failed", error: { code: "provider_rate_limited", message: "the provider is rate limited", retryable: true, details: { cause: "quota_exhausted", resetsAt } } }),
  ]);
  assert.equal(m.fullestMeter?.meter, "five_hour");
  const words = resetWords(resetsAt);
  assert.equal(m.transcript().split("\n").slice(1).join("\n"),
    `-- Limit claude five_hour 100% exhausted, resets ${words}\n-- Turn failed: the provider is rate limited (provider_rate_limited) — quota exhausted, resets ${words}`);
  const end = m.items[m.items.length - 1];
  assert.ok(end.kind === "status" && end.endSequence === 3);
  assert.equal(meterText({ pool: "codex", meter: "primary", percent: 41.54 }), "codex primary 41.5%");
});

test("reset times in local words: today, tomorrow, else the day", () => {
  const now = new Date(2030, 0, 2, 9, 0); // local time
  assert.equal(resetWords(new Date(2030, 0, 2, 17, 5).toISOString(), now), "today 17:05");
  assert.equal(resetWords(new Date(2030, 0, 3, 9, 30).toISOString(), now), "tomorrow 09:30");
  assert.equal(resetWords(new Date(2030, 0, 8, 0, 0).toISOString(), now), "Tue 8 Jan 00:00");
  assert.equal(resetWords("not a time", now), "not a time");
});

test("an approval a subagent asks for names the subagent", () => {
  const m = new ChatModel(SID);
  m.applyAll([
    ev(1, { type: "run.started", input: "look" }),
    ev(2, { type: "tool.activity", toolCallId: "task1", name: "Task", status: "started", subagent: { agentType: "Explore", description: "Find it" } }),
    ev(3, { type: "interaction.requested", interactionId: "int_1", request: { kind: "approval", action: "tool", title: "Run ls", parentToolCallId: "task1" } }),
    ev(4, { type: "interaction.requested", interactionId: "int_2", request: { kind: "approval", action: "tool", title: "Run pwd" } }),
  ]);
  assert.deepEqual(m.transcript().split("\n").slice(2), [
    "Approval: Run ls (subagent Explore — Find it): waiting for your answer",
    "Approval: Run pwd: waiting for your answer",
  ]);
});
