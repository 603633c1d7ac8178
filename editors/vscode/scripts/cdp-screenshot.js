// Takes a PNG of the workbench page of a running headless Chromium through the DevTools
// protocol: node cdp-screenshot.js DEVTOOLS_PORT PAGE_URL_PART OUT.png
// Uses the `ws` package that code-server brings (in .tools/vscode-host/node_modules).
const fs = require("fs");
const path = require("path");
const WebSocket = require(path.join(process.env.TOOLS_NODE_MODULES, "ws"));

async function main() {
  const [port, urlPart, out] = process.argv.slice(2);
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const page = targets.find((t) => t.type === "page" && t.url.includes(urlPart));
  if (!page) throw new Error(`no page with ${urlPart}: ${JSON.stringify(targets.map((t) => t.url))}`);
  const ws = new WebSocket(page.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); });
  const reply = await new Promise((resolve, reject) => {
    ws.on("message", (data) => {
      const m = JSON.parse(String(data));
      if (m.id === 1) (m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result));
    });
    ws.send(JSON.stringify({ id: 1, method: "Page.captureScreenshot", params: { format: "png" } }));
  });
  fs.writeFileSync(out, Buffer.from(reply.data, "base64"));
  ws.close();
}
main().catch((err) => { console.error(String(err)); process.exit(1); });
