// A Node host's test against agent-bridge: spawn `agent-bridge serve`, replay a recorded
// cassette through the scripted provider, answer as recorded, compare the events.
//   node docs/examples/node_host_test.mjs CASSETTE.json [agent-bridge command...]
import { spawn } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import assert from "node:assert/strict";

const cassettePath = resolve(process.argv[2]);
const command = process.argv.length > 3 ? process.argv.slice(3) : ["agent-bridge"];
const cassette = JSON.parse(readFileSync(cassettePath, "utf8"));
const stateDir = mkdtempSync(join(tmpdir(), "bridge-state-"));
process.on("exit", () => rmSync(stateDir, { recursive: true, force: true })); // also on failure
const child = spawn(command[0], [...command.slice(1), "serve", "--framing", "newline"], {
  stdio: ["pipe", "pipe", "inherit"],
  env: { ...process.env, AGENT_BRIDGE_STATE_DIR: stateDir },
});

let buffer = "";
const waiting = [];
const inbox = [];
child.stdout.on("data", (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const message = JSON.parse(buffer.slice(0, nl));
    buffer = buffer.slice(nl + 1);
    const i = waiting.findIndex((w) => w.pred(message));
    if (i >= 0) waiting.splice(i, 1)[0].resolve(message);
    else inbox.push(message);
  }
});
const next = (pred) => {
  const i = inbox.findIndex(pred);
  if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0]);
  return new Promise((resolve) => waiting.push({ pred, resolve }));
};
const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
let nextId = 1;
async function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  const reply = await next((m) => m.id === id && !m.method);
  if (reply.error) throw new Error(`${method}: ${JSON.stringify(reply.error)}`);
  return reply.result;
}

await request("initialize", {
  protocolVersion: 1,
  clientInfo: { name: "node-host-test" },
  capabilities: { interactions: { approval: true, question: true, questionSet: true } },
});
send({ method: "initialized", params: {} });
const { session } = await request("session/create", {
  provider: "scripted",
  options: { script: cassettePath },
});
for (const run of cassette.recorded.runs) {
  const answers = run.events
    .filter((p) => p.type === "interaction.settled" && p.status === "responded" && !p.auto)
    .map((p) => p.answer);
  const { runId } = await request("run/start", {
    sessionId: session.sessionId,
    input: { text: run.input },
  });
  const got = [];
  for (;;) {
    const m = await next(
      (m) => (m.method === "event" || m.method === "interaction/request") && m.params.runId === runId,
    );
    if (m.method === "interaction/request") {
      send({ id: m.id, result: answers.shift() });
      continue;
    }
    const { interactionId, ...payload } = m.params.payload; // ids aside
    got.push(payload);
    if (["run.completed", "run.failed", "run.interrupted"].includes(payload.type)) break;
  }
  assert.deepEqual(got, run.events);
}
child.stdin.end();
child.on("exit", (code) => {
  console.log(`replayed ${cassette.recorded.runs.length} run(s): same events; bridge exit ${code}`);
  process.exit(code);
});
