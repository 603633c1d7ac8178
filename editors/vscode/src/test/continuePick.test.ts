import { test } from "node:test";
import * as assert from "node:assert/strict";
import { continuableProviders, continueItems } from "../continuePick";
import type { ProviderDescriptor, SessionInfo } from "../protocol";

const bridge: SessionInfo[] = [
  { sessionId: "ses_a", providerId: "scripted", state: "closed", createdAt: "2026-12-01T10:00:00Z", updatedAt: "2026-12-01T11:00:00Z", title: "Old chat" },
  { sessionId: "ses_b", providerId: "claude-code", state: "active", createdAt: "2026-12-02T09:00:00Z", title: "Bound", pendingInteractions: 1 },
];

test("bridge and provider sessions in one list, newest first, a bound one once", () => {
  const native = new Map([
    [
      "claude-code",
      [
        { sessionRef: "-ws/1", title: "say hello", updatedAt: "2026-12-01T12:00:00Z", sizeBytes: 4000 },
        { sessionRef: "-ws/2", title: "bound one", updatedAt: "2026-12-02T10:00:00Z", bridgeSessionId: "ses_b" },
        { sessionRef: "-ws/3", updatedAt: "2026-11-30T12:00:00Z", bridgeSessionId: "ses_gone" },
      ],
    ],
  ]);
  const items = continueItems(bridge, native, new Map([["codex", "the provider timed out"]]));
  assert.deepEqual(
    items.map((i) => [i.label, i.description, i.target.kind]),
    [
      ["Bound", "claude-code · agent-bridge · active · 1 pending · also in claude-code's own history", "bridge"],
      ["say hello", "claude-code · its own history", "native"],
      ["Old chat", "scripted · agent-bridge · closed", "bridge"],
      ["-ws/3", "claude-code · its own history", "native"],
      ["codex: its sessions could not be listed", "the provider timed out", "problem"],
    ],
  );
  assert.deepEqual(items[1].target, { kind: "native", provider: "claude-code", sessionRef: "-ws/1", title: "say hello" });
  assert.match(items[1].detail ?? "", /^updated \d+ Dec \d\d:\d\d · 4 KiB$/);
});

test("only providers that list and continue their own sessions are asked (installed or not)", () => {
  const caps = (list: "supported" | "unsupported", cont: "supported" | "unsupported") => ({
    run: { interrupt: "cooperative" as const },
    interactions: { approval: { supported: true, modes: ["once" as const] }, question: { supported: true } },
    recovery: { resume: true },
    nativeSessions: { list, read: "exact" as const, continue: cont },
  });
  const d = (id: string, list: "supported" | "unsupported", cont: "supported" | "unsupported"): ProviderDescriptor => ({
    id, displayName: id, version: "1", maturity: "verified", capabilities: caps(list, cont), options: [],
  });
  assert.deepEqual(
    continuableProviders([
      d("claude-code", "supported", "supported"),
      d("scripted", "unsupported", "supported"),
      d("x", "supported", "unsupported"),
      { ...d("gemini", "supported", "supported"), availability: { status: "unavailable", reason: "not found" } },
    ]).map((p) => p.id),
    ["claude-code", "gemini"],
  );
});
