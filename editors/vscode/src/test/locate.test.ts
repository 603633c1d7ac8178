import { test } from "node:test";
import * as assert from "node:assert/strict";
import { isMissing, locateBridge } from "../locate";

const has = (...paths: string[]) => (p: string) => paths.includes(p);
const base = { bridgePath: "", bridgeArgs: [], stateDir: "" };

test("the setting wins; a name in it is looked up on PATH", () => {
  const r = locateBridge({ ...base, bridgePath: "/opt/ab/agent-bridge" }, "/usr/bin", has("/opt/ab/agent-bridge", "/usr/bin/agent-bridge"));
  assert.deepEqual(r, { command: "/opt/ab/agent-bridge", args: ["serve", "--stdio"], source: "setting" });
  const n = locateBridge({ ...base, bridgePath: "ssh", bridgeArgs: ["-T", "devbox", "agent-bridge", "connect"] }, "/a:/usr/bin", has("/usr/bin/ssh"));
  assert.deepEqual(n, { command: "/usr/bin/ssh", args: ["-T", "devbox", "agent-bridge", "connect"], source: "setting" });
});

test("a setting that names nothing is reported, not silently replaced", () => {
  const r = locateBridge({ ...base, bridgePath: "/nope/agent-bridge" }, "/usr/bin", has("/usr/bin/agent-bridge"));
  assert.ok(isMissing(r));
  assert.match(r.message, /agentBridge.bridgePath \("\/nope\/agent-bridge"\) was not found/);
});

test("PATH, then a message with the next step that works before a release", () => {
  assert.deepEqual(locateBridge(base, "/x:/usr/local/bin", has("/usr/local/bin/agent-bridge")), {
    command: "/usr/local/bin/agent-bridge", args: ["serve", "--stdio"], source: "PATH",
  });
  // uvx on PATH is no fallback: `uvx agent-bridge` does not resolve before a release.
  const r = locateBridge(base, "/usr/bin", has("/usr/bin/uvx"));
  assert.ok(isMissing(r));
  assert.match(r.nextStep, /not on PyPI yet/);
  assert.match(r.nextStep, /pipx install \/path\/to\/agent-bridge/);
  assert.match(r.nextStep, /agentBridge\.bridgePath to a clone's \.venv\/bin\/agent-bridge/);
  assert.doesNotMatch(r.nextStep, /(pipx|uv tool) install agent-bridge/);
});

test("the state dir setting becomes --state-dir for serve and connect", () => {
  const r = locateBridge({ ...base, stateDir: "/s" }, "/b", has("/b/agent-bridge"));
  assert.ok(!isMissing(r) && r.args.join(" ") === "serve --stdio --state-dir /s");
  const c = locateBridge({ ...base, stateDir: "/s", bridgeArgs: ["connect"] }, "/b", has("/b/agent-bridge"));
  assert.ok(!isMissing(c) && c.args.join(" ") === "connect --state-dir /s");
  const s = locateBridge({ bridgePath: "ssh", bridgeArgs: ["-T", "h", "agent-bridge", "connect"], stateDir: "/s" }, "/b", has("/b/ssh"));
  assert.ok(!isMissing(s) && !s.args.includes("--state-dir"), "a remote bridge keeps its own state dir");
});
