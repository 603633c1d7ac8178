// An ACP client on the TypeScript SDK (@agentclientprotocol/sdk, pinned in
// scripts/install-provider-clis.sh): spawns the agent given after "--", plays one phase
// of the scenario of tests/acp_agent_support.py and prints one JSON object with what it
// saw (updates, permission requests, replies, errors) on stdout.
//
//   node ts_client.mjs SDK_DIR PHASE SESSION_ID CWD -- AGENT [ARGS...]
//
// PHASE "first": initialize, new session, a prompt allowed, one denied, one cancelled
// mid-turn while its permission is unanswered, bad input, list.  PHASE "second" (a new
// bridge process on the same journal): initialize, list, load SESSION_ID, set the
// provider config option, prompt, close; delete a new open session and the closed one,
// list, load it (an error) and delete an unknown one.  PHASE "rich": initialize, new
// session, one prompt of a text, an image (SESSION_ID is its base64 PNG), a resource link
// to CWD/main.py and an embedded resource; the agent's reply text is what arrived.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, phase, sessionArg, cwd, dashdash, ...agent] = process.argv.slice(2);
if (dashdash !== "--" || agent.length === 0) {
  console.error("usage: ts_client.mjs SDK_DIR PHASE SESSION_ID CWD -- AGENT [ARGS...]");
  process.exit(2);
}
const acp = await import(pathToFileURL(path.join(sdkDir, "dist/v1/stable/acp.js")).href);

const child = spawn(agent[0], agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const seen = { updates: [], permissions: [], replies: {}, errors: {} };
let decisions = [];
let onAsked = () => {};

const app = acp
  .client({ name: "agent-bridge-ts-test" })
  .onNotification(acp.methods.client.session.update, (cx) => {
    seen.updates.push(cx.params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, async (cx) => {
    seen.permissions.push(cx.params);
    const decision = decisions.shift();
    onAsked();
    if (decision === undefined) {
      // left unanswered until the agent withdraws it (or the turn is over)
      await new Promise((resolve) => {
        cx.signal.addEventListener("abort", resolve);
        setTimeout(resolve, 15000);
      });
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: decision } };
  });

function text(updates) {
  return updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk")
    .map((u) => u.content.text)
    .join("");
}

async function expectError(name, op) {
  try {
    await op();
    seen.errors[name] = null;
  } catch (error) {
    seen.errors[name] = { code: error.code, data: error.data ?? null };
  }
}

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "agent-bridge-ts-test", version: "1" },
  });
  seen.replies.initialize = init;
  if (phase === "first") {
    const created = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const sessionId = created.sessionId;
    seen.sessionId = sessionId;
    seen.replies.new = created;
    const prompt = (words) =>
      ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: words }],
      });
    decisions = ["allow_once"];
    let start = seen.updates.length;
    seen.replies.allowed = await prompt("Greet");
    seen.allowedText = text(seen.updates.slice(start));
    decisions = ["reject_once"];
    start = seen.updates.length;
    seen.replies.denied = await prompt("Again");
    seen.deniedText = text(seen.updates.slice(start));
    decisions = [undefined];
    const asked = new Promise((resolve) => (onAsked = resolve));
    const cancelled = prompt("Stop");
    await asked;
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    seen.replies.cancelled = await cancelled;
    await expectError("unknownSession", () =>
      ctx.request(acp.methods.agent.session.prompt, {
        sessionId: "ses_nope",
        prompt: [{ type: "text", text: "x" }],
      }),
    );
    await expectError("badParams", () =>
      ctx.request(acp.methods.agent.session.prompt, { sessionId }));
    seen.replies.list = await ctx.request(acp.methods.agent.session.list, {});
  } else if (phase === "rich") {
    const created = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    seen.replies.rich = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: created.sessionId,
      prompt: [
        { type: "text", text: "What is wrong?" },
        { type: "image", mimeType: "image/png", data: sessionArg },
        {
          type: "resource_link",
          name: "main.py",
          uri: pathToFileURL(path.join(cwd, "main.py")).href,
        },
        {
          type: "resource",
          resource: { uri: "untitled:1", text: "x = 1", mimeType: "text/x-python" },
        },
      ],
    });
    seen.richText = text(seen.updates);
  } else {
    const sessionId = sessionArg;
    seen.replies.list = await ctx.request(acp.methods.agent.session.list, { cwd });
    seen.replies.load = await ctx.request(acp.methods.agent.session.load, {
      sessionId,
      cwd,
      mcpServers: [],
    });
    seen.loadUpdates = seen.updates.length;
    seen.replies.config = await ctx.request(acp.methods.agent.session.setConfigOption, {
      sessionId,
      configId: "provider",
      value: "scripted",
    });
    const start = seen.updates.length;
    seen.replies.after = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "after restart" }],
    });
    seen.afterText = text(seen.updates.slice(start));
    seen.replies.close = await ctx.request(acp.methods.agent.session.close, { sessionId });
    // session/delete: an open session (closed first), then the closed one; then nothing
    // of either is listed or loaded
    const open = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    seen.replies.deleteOpen = await ctx.request(acp.methods.agent.session.delete, {
      sessionId: open.sessionId,
    });
    seen.replies.delete = await ctx.request(acp.methods.agent.session.delete, { sessionId });
    seen.replies.listAfterDelete = await ctx.request(acp.methods.agent.session.list, {});
    await expectError("loadDeleted", () =>
      ctx.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] }),
    );
    // the SDK resolves a -32002 to session/delete as done (deleting is idempotent)
    seen.replies.deleteUnknown = await ctx.request(acp.methods.agent.session.delete, {
      sessionId: "ses_nope",
    });
  }
});

child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", (c) => resolve(c)));
seen.agentExit = code;
process.stdout.write(JSON.stringify(seen) + "\n");
