// The bridge client against a real `agent-bridge serve --stdio` child (AGENT_BRIDGE_BIN).
import { test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { BridgeClient, BridgeRequestError, BridgeStartError } from "../client";
import { ChatModel } from "../chatModel";
import type { EventEnvelope, InteractionRequestParams } from "../protocol";

const BIN = process.env.AGENT_BRIDGE_BIN ?? "";

function stateDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "ab-vscode-unit-"));
}

async function start(dir: string): Promise<BridgeClient> {
  assert.ok(BIN && fs.existsSync(BIN), `AGENT_BRIDGE_BIN must name the agent-bridge executable (got "${BIN}")`);
  return BridgeClient.start({ command: BIN, args: ["serve", "--stdio", "--state-dir", dir], clientName: "unit", clientVersion: "0" });
}

function until(cond: () => boolean, ms = 10000): Promise<void> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = (): void => {
      if (cond()) resolve();
      else if (Date.now() - t0 > ms) reject(new Error("timed out"));
      else setTimeout(tick, 10);
    };
    tick();
  });
}

const APPROVAL_SCRIPT = {
  steps: [
    { type: "text", text: "I need to run a command.", chunks: 2 },
    {
      type: "approval", title: "Run `rm -rf build`", toolName: "Bash", command: "rm -rf build", modes: ["once", "session"],
      onAllow: [{ type: "text", text: "Removed." }], onDeny: [{ type: "text", text: "Left it." }],
    },
  ],
};

test("a scripted turn with an approval, answered through the interaction handler", async () => {
  const client = await start(stateDir());
  try {
    assert.equal(client.initializeResult.protocolVersion, 1);
    const providers = (await client.request("providers/list", { probe: false })).providers;
    assert.ok(providers.some((p) => p.id === "scripted"));
    const asked: InteractionRequestParams[] = [];
    client.setInteractionHandler(async (p) => {
      asked.push(p);
      return { kind: "approval", decision: "allow", mode: "session" };
    });
    const s = (await client.request("session/create", { provider: "scripted", options: { script: APPROVAL_SCRIPT } })).session;
    const model = new ChatModel(s.sessionId);
    client.onEvent((e: EventEnvelope) => model.apply(e));
    await client.request("run/start", { sessionId: s.sessionId, input: { text: "Clean" } });
    await until(() => model.runState === "idle" && model.lastSequence > 0);
    assert.equal(asked.length, 1);
    assert.equal(asked[0].request.kind, "approval");
    assert.equal(
      model.transcript(),
      "You: Clean\nAgent: I need to run a command.\nApproval: Run `rm -rf build`: allowed for this session\nAgent: Removed.\n-- Turn completed (end_turn)",
    );
    assert.ok(model.contiguous);
  } finally {
    await client.stop();
  }
});

test("an interaction answered elsewhere withdraws the request: the handler's token is cancelled", async () => {
  const client = await start(stateDir());
  try {
    let cancelled = false;
    let seen: InteractionRequestParams | undefined;
    client.setInteractionHandler((p, token) => {
      seen = p;
      return new Promise((_, reject) => {
        token.onCancellationRequested(() => {
          cancelled = true;
          reject(new Error("withdrawn"));
        });
      });
    });
    const s = (await client.request("session/create", { provider: "scripted", options: { script: APPROVAL_SCRIPT } })).session;
    await client.request("run/start", { sessionId: s.sessionId, input: { text: "x" } });
    await until(() => seen !== undefined);
    const r = await client.request("interaction/respond", { interactionId: seen!.interactionId, answer: { kind: "approval", decision: "deny" } });
    assert.equal(r.status, "applied");
    await until(() => cancelled);
    await assert.rejects(
      client.request("interaction/respond", { interactionId: seen!.interactionId, answer: { kind: "approval", decision: "allow" } }),
      (err: unknown) => err instanceof BridgeRequestError && err.info?.code === "interaction_already_settled" && err.rpcCode === -32000,
    );
  } finally {
    await client.stop();
  }
});

test("a missing executable and a bridge that exits at start are told apart", async () => {
  await assert.rejects(
    BridgeClient.start({ command: "/nonexistent/agent-bridge", args: ["serve"], clientName: "u", clientVersion: "0" }),
    (err: unknown) => err instanceof BridgeStartError && err.kind === "not_found",
  );
  await assert.rejects(
    BridgeClient.start({ command: BIN, args: ["serve", "--no-such-flag"], clientName: "u", clientVersion: "0" }),
    (err: unknown) => err instanceof BridgeStartError && err.kind === "exited" && /no-such-flag/.test(err.stderr),
  );
});
