// A Node host's test against agent-bridge: spawn `agent-bridge serve`, replay a recorded
// cassette through the scripted provider, answer as recorded, compare the events.
//   node docs/examples/node_host_test.mjs CASSETTE.json [agent-bridge command...]
// The command: the arguments after the cassette, else `agent-bridge` on PATH, else the
// .venv of the checkout this file is in (scripts/setup.sh makes it).
import { spawn } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

function bridgeCommand() {
  if (process.argv.length > 3) return process.argv.slice(3);
  const onPath = (process.env.PATH ?? "")
    .split(delimiter)
    .some((dir) => dir && existsSync(join(dir, "agent-bridge")));
  if (onPath) return ["agent-bridge"];
  const checkout = fileURLToPath(new URL("../../.venv/bin/agent-bridge", import.meta.url));
  if (existsSync(checkout)) return [checkout];
  console.error(
    "agent-bridge was not found: it is not on PATH and this checkout has no .venv. " +
      "Next step: run `bash scripts/setup.sh` in the checkout, install it " +
      "(`pipx install .`), or pass the command after the cassette.",
  );
  process.exit(2);
}

if (process.argv.length < 3 || !existsSync(resolve(process.argv[2]))) {
  console.error(
    (process.argv.length < 3 ? "no cassette given" : `no cassette ${resolve(process.argv[2])}`) +
      ". Usage: node node_host_test.mjs CASSETTE.json [agent-bridge command...]; " +
      "tests/conformance/recorded/ has some, `agent-bridge record SESSION_ID --out FILE` makes one.",
  );
  process.exit(2);
}
const cassettePath = resolve(process.argv[2]);
const command = bridgeCommand();
const cassette = JSON.parse(readFileSync(cassettePath, "utf8"));
const stateDir = mkdtempSync(join(tmpdir(), "bridge-state-"));
process.on("exit", () => rmSync(stateDir, { recursive: true, force: true })); // also on failure
const child = spawn(command[0], [...command.slice(1), "serve", "--framing", "newline"], {
  stdio: ["pipe", "pipe", "inherit"],
  env: { ...process.env, AGENT_BRIDGE_STATE_DIR: stateDir },
});
child.on("error", (err) => {
  console.error(`could not start ${command[0]}: ${err.code ?? err.message}`);
  process.exit(2);
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
