import { test } from "node:test";
import * as assert from "node:assert/strict";
import { ChatModel } from "../chatModel";
import { escapeHtml, forkCutNotice, forkOffer, renderHeader, renderItems } from "../chatHtml";
import type { EventEnvelope, EventPayload } from "../protocol";

function ev(sequence: number, payload: EventPayload): EventEnvelope {
  return { eventId: `e${sequence}`, sessionId: "s", runId: "r", sequence, occurredAt: "2025-01-01T00:00:00Z", payload };
}

test("bridge text is escaped", () => {
  assert.equal(escapeHtml(`<img src=x onerror="a('b')">&`), "&lt;img src=x onerror=&quot;a(&#39;b&#39;)&quot;&gt;&amp;");
  const m = new ChatModel("s");
  m.applyAll([ev(1, { type: "run.started", input: "<script>x</script>" })]);
  assert.ok(!renderItems(m).includes("<script>"));
});

test("a pending approval renders one button per option; thinking and tools are collapsible", () => {
  const m = new ChatModel("s");
  m.applyAll([
    ev(1, { type: "run.started", input: "go" }),
    ev(2, { type: "thinking.delta", text: "hmm" }),
    ev(3, { type: "tool.activity", toolCallId: "c1", name: "Write", status: "started", content: [{ type: "edit", path: "a.txt", newText: "hi\n" }] }),
    ev(4, { type: "interaction.requested", interactionId: "int_1", request: { kind: "approval", action: "tool", title: "Write a.txt", modes: ["once", "session"] } }),
  ]);
  const html = renderItems(m);
  assert.match(html, /<details class="thinking" data-key="i2" open><summary>Thinking…<\/summary>/);
  assert.match(html, /<details class="tool status-started"[^>]*><summary>… Write <span class="badge">1 edit<\/span>/);
  assert.match(html, /new file.*data-action="openEdit" data-tool="c1" data-run="r" data-index="0">Open diff/);
  const buttons = [...html.matchAll(/data-action="answer" data-interaction="int_1" data-option="(\d)">([^<]+)</g)].map((x) => [x[1], x[2]]);
  assert.deepEqual(buttons, [["0", "Allow once"], ["1", "Allow for this session"], ["2", "Deny"]]);
  assert.match(renderHeader(m, "T", "scripted"), /1 pending approval</);
  const h = renderHeader(m, "T", "claude-code", ["model sonnet", "permissionMode plan"]);
  assert.match(h, /<span class="badge">claude-code<\/span><span class="badge chosen">model sonnet<\/span><span class="badge chosen">permissionMode plan<\/span>/);
  m.apply(ev(5, { type: "interaction.settled", interactionId: "int_1", status: "responded", answer: { kind: "approval", decision: "deny" } }));
  assert.ok(!renderItems(m).includes('data-action="answer"'));
  assert.match(renderItems(m), /<div class="outcome">denied<\/div>/);
});

test("a tool card's header shows what the call acts on when it has no title (a Bash command)", () => {
  const m = new ChatModel("s");
  m.applyAll([
    ev(1, { type: "run.started", input: "go" }),
    ev(2, { type: "tool.activity", toolCallId: "c1", name: "Bash", status: "started", input: { command: "make -j4" } }),
    ev(3, { type: "tool.activity", toolCallId: "c1", name: "Bash", status: "completed", exitCode: 0 }),
  ]);
  assert.match(renderItems(m), /<summary>✓ Bash — make -j4 \(exit 0\)/);
});

test("fork is offered as the provider's capabilities.fork allows: at each turn, at the last, or not at all", () => {
  const m = new ChatModel("s");
  const turn = (n: number, run: string): EventEnvelope[] => [
    { ...ev(n, { type: "run.started", input: `t${n}` }), runId: run },
    { ...ev(n + 1, { type: "run.completed", stopReason: "end_turn" }), runId: run },
  ];
  m.applyAll([...turn(1, "r1"), ...turn(3, "r2")]);
  const buttons = (html: string) => [...html.matchAll(/<button class="link fork" data-action="fork"( data-seq="(\d+)")?/g)].map((x) => x[2] ?? "whole");
  assert.equal(forkOffer({ atEnd: true, atEvent: true }), "atEvent");
  assert.equal(forkOffer({ atEnd: true }), "atEnd");
  assert.equal(forkOffer({}), "none");
  assert.equal(forkOffer(undefined), "none");
  assert.deepEqual(buttons(renderItems(m, "atEvent")), ["2", "4"]);
  assert.deepEqual(buttons(renderItems(m, "atEnd")), ["whole"]);
  assert.deepEqual(buttons(renderItems(m, "none")), []);
});

test("granularity message: each finished agent message offers a fork at its last delta, besides each turn's end", () => {
  const m = new ChatModel("s");
  m.applyAll([
    { ...ev(1, { type: "run.started", input: "go" }), runId: "r1" },
    { ...ev(2, { type: "text.delta", text: "Let me " }), runId: "r1" },
    { ...ev(3, { type: "text.delta", text: "look." }), runId: "r1" },
    { ...ev(4, { type: "tool.activity", toolCallId: "c1", name: "Read", status: "completed" }), runId: "r1" },
    { ...ev(5, { type: "text.delta", text: "Done." }), runId: "r1" },
    { ...ev(6, { type: "run.started", input: "more" }), runId: "r2" },
    { ...ev(7, { type: "text.delta", text: "Still going" }), runId: "r2" },
  ]);
  const seqs = (html: string) => [...html.matchAll(/data-action="fork" data-seq="(\d+)"/g)].map((x) => Number(x[1]));
  assert.equal(forkOffer({ atEnd: true, atEvent: true, granularity: "message" }), "message");
  assert.equal(forkOffer({ atEnd: true, atEvent: true, granularity: "run" }), "atEvent");
  // r2 still streams: no fork at its message yet, nor a turn end
  assert.deepEqual(seqs(renderItems(m, "message")), []);
  m.apply({ ...ev(8, { type: "run.completed", stopReason: "end_turn" }), runId: "r2" });
  m.apply({ ...ev(9, { type: "run.completed", stopReason: "end_turn" }), runId: "r1" });
  assert.deepEqual(seqs(renderItems(m, "message")), [3, 5, 7, 8, 9]);
  // run granularity: the turn ends only, as before
  assert.deepEqual(seqs(renderItems(m, "atEvent")), [8, 9]);
});

test("a fork cut earlier than the event picked says so; an exact one says nothing", () => {
  assert.equal(forkCutNotice(5, 5), undefined);
  assert.equal(forkCutNotice(undefined, 3), undefined);
  assert.match(forkCutNotice(5, 3)!, /up to event 5, but the agent remembers it only up to event 3/);
  assert.match(forkCutNotice(2, 0)!, /remembers none of it/);
});
