// A TypeScript host of agent-bridge, typed by the published contract: spawn
// `agent-bridge serve`, create a scripted session, start a run and print its events,
// narrowing each message with no cast beyond JSON.parse's (a response's result is typed
// by the request its id answers: ResultOf<"session/create">).  In a project that holds
// this file and schemas/agent-bridge.{d.ts,mjs,d.mts} (with typescript, @types/node):
//   npx tsc --strict --module nodenext --target es2022 ts_host.mts
//   node ts_host.mjs [agent-bridge command...]
// The command: the arguments given, else `agent-bridge` on PATH.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { isKnownEvent } from "./agent-bridge.mjs";
import type {
  BridgeToHostMessage,
  EventPayload,
  ResultOf,
  UnknownEventPayload,
} from "./agent-bridge.mjs";

const command = process.argv.length > 2 ? process.argv.slice(2) : ["agent-bridge"];

/** One line per event payload: each case reads its own members. */
function describeEvent(payload: EventPayload | UnknownEventPayload): string {
  if (!isKnownEvent(payload)) return `(a later version's ${payload.type})`;
  switch (payload.type) {
    case "text.delta":
      return `text ${JSON.stringify(payload.text)}`;
    case "tool.activity":
      return `tool ${payload.name} ${payload.status}`;
    case "run.completed":
      return `completed (${payload.stopReason})`;
    case "run.failed":
      return `failed: ${payload.error.code}`;
    default:
      return payload.type;
  }
}

const stateDir = mkdtempSync(join(tmpdir(), "bridge-state-"));
process.on("exit", () => rmSync(stateDir, { recursive: true, force: true }));
const child = spawn(command[0], [...command.slice(1), "serve", "--framing", "newline"], {
  stdio: ["pipe", "pipe", "inherit"],
  env: { ...process.env, AGENT_BRIDGE_STATE_DIR: stateDir },
});
child.on("error", (err: NodeJS.ErrnoException) => {
  console.error(`could not start ${command[0]}: ${err.code ?? err.message}`);
  process.exit(2);
});
let nextId = 1;
function request(method: string, params: unknown): number {
  const id = nextId++;
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  return id;
}

const script = {
  steps: [
    { type: "text", text: "Hello from a typed host" },
    { type: "tool", id: "call_1", name: "Read", input: { path: "README.md" } },
  ],
};
const init = request("initialize", { protocolVersion: 1, clientInfo: { name: "ts-host" } });
let create = 0;
let shutdown = 0;
for await (const line of createInterface({ input: child.stdout })) {
  const msg = JSON.parse(line) as BridgeToHostMessage;
  if ("method" in msg) {
    if (msg.method === "event") {
      const { sequence, payload } = msg.params;
      console.log(`${sequence} ${describeEvent(payload)}`);
      if (payload.type === "run.completed" || payload.type === "run.failed") {
        shutdown = request("shutdown", {});
      }
    }
    continue;
  }
  if ("error" in msg) throw new Error(`request ${msg.id}: ${msg.error.message}`);
  if (msg.id === init) {
    create = request("session/create", { provider: "scripted", options: { script } });
  } else if (msg.id === create) {
    const { sessionId } = (msg.result as ResultOf<"session/create">).session;
    request("run/start", { sessionId, input: { text: "go" } });
  } else if (msg.id === shutdown) {
    child.stdin.end();
  }
}
child.on("exit", (code: number | null) => console.log(`typed host done; bridge exit ${code}`));
