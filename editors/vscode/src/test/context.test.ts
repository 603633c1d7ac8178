import { test } from "node:test";
import * as assert from "node:assert/strict";
import { adaptBlocks, contextBlock, describeBlock, imageBlock, imageFileRefusal, imageFileType, runInput, selectionLines } from "../context";

const saved = { uri: "file:///ws/hello.py", fsPath: "/ws/hello.py", dirty: false, text: "print('hi')\n" };

test("a saved file is a file block, with the selection's lines", () => {
  assert.deepEqual(contextBlock(saved), { type: "file", path: "/ws/hello.py" });
  assert.deepEqual(contextBlock(saved, { startLine: 2, endLine: 4 }), { type: "file", path: "/ws/hello.py", startLine: 2, endLine: 4 });
});

test("an unsaved or untitled buffer is a resource block with its text", () => {
  assert.deepEqual(contextBlock({ ...saved, dirty: true, text: "x = 1" }), { type: "resource", text: "x = 1", uri: "file:///ws/hello.py", mimeType: "text/plain" });
  assert.deepEqual(contextBlock({ uri: "untitled:Untitled-1", fsPath: undefined, dirty: true, text: "notes" }), {
    type: "resource", text: "notes", uri: "untitled:Untitled-1", mimeType: "text/plain",
  });
});

test("a selection ending at column 0 ends on the line above", () => {
  assert.deepEqual(selectionLines({ line: 0, character: 0 }, { line: 2, character: 0 }), { startLine: 1, endLine: 2 });
  assert.deepEqual(selectionLines({ line: 3, character: 2 }, { line: 3, character: 9 }), { startLine: 4, endLine: 4 });
});

test("a pasted image: type and size checked against the provider's", () => {
  const png = "data:image/png;base64,iVBORw0KGgo=";
  assert.deepEqual(imageBlock(png, { mimeTypes: ["image/png"], maxBytes: 100 }), { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" });
  assert.match(imageBlock(png, { mimeTypes: ["image/jpeg"], maxBytes: 100 }) as string, /does not take image\/png/);
  assert.match(imageBlock(png, { mimeTypes: ["image/png"], maxBytes: 4 }) as string, /8 B; this provider takes images up to 4 B/);
  assert.match(imageBlock("data:text/plain;base64,aGk=") as string, /not an image/);
  assert.match(imageBlock("hello") as string, /not an image/);
});

test("an image file: its type by extension, refused by type or size before it is read", () => {
  const takes = { mimeTypes: ["image/png", "image/jpeg"], maxBytes: 100 };
  assert.equal(imageFileType("/ws/shot.PNG"), "image/png");
  assert.equal(imageFileType("/ws/photo.jpg"), "image/jpeg");
  assert.equal(imageFileType("/ws/notes.txt"), undefined);
  assert.equal(imageFileRefusal("shot.png", 100, takes), undefined);
  assert.equal(imageFileRefusal("shot.bmp", 10, takes), "This provider does not take image/bmp images (it takes image/png, image/jpeg).");
  assert.match(imageFileRefusal("big.png", 101, takes) ?? "", /^big\.png is 101 B; this provider takes images up to 100 B\.$/);
  assert.equal(imageFileRefusal("big.png", 10_485_761, { mimeTypes: ["image/png"], maxBytes: 10_485_760 }), "big.png is 10485761 B; this provider takes images up to 10485760 B.");
  assert.equal(imageFileRefusal("notes.txt", 5, takes), "notes.txt is not an image file (by its extension).");
  assert.equal(imageFileRefusal("any.webp", 1e9, null), undefined); // a provider that names no limits
});

test("the run input: text alone, blocks with attachments, a known command", () => {
  const file = { type: "file" as const, path: "/ws/a.py" };
  assert.deepEqual(runInput("hi", []), { text: "hi" });
  assert.deepEqual(runInput("hi", [file]), { content: [{ type: "text", text: "hi" }, file] });
  const cmds = [{ name: "review", description: "" }];
  assert.deepEqual(runInput("/review the tests ", [], cmds), { content: [{ type: "command", name: "review", arguments: "the tests" }] });
  assert.deepEqual(runInput("/review", [], cmds), { content: [{ type: "command", name: "review" }] });
  assert.deepEqual(runInput("/unknown x", [], cmds), { text: "/unknown x" });
});

test("attachments are labelled as the chat shows them", () => {
  assert.equal(describeBlock({ type: "file", path: "/ws/a.py", startLine: 1, endLine: 3 }, "/ws"), "@ a.py:1-3");
  assert.equal(describeBlock({ type: "resource", text: "a\nb", uri: "untitled:Untitled-1" }), "@ untitled:Untitled-1 (2 lines)");
  assert.equal(describeBlock({ type: "image", mimeType: "image/png", size: 2048, sha256: "x" }), "@ image image/png (2.0 kB)");
  assert.equal(describeBlock({ type: "command", name: "review", arguments: "x" }), "/review x");
  assert.equal(describeBlock({ type: "text", text: "x" }), undefined);
});

test("a text-only provider gets files and resources quoted as text; images refused", () => {
  const r = adaptBlocks(
    [{ type: "file", path: "/ws/a.py", startLine: 2, endLine: 2 }, { type: "resource", text: "n", uri: "untitled:1" }, { type: "image", mimeType: "image/png", data: "AA==" }],
    ["text"],
    (_p, range) => (range ? `line ${range.startLine}` : "all"),
  );
  assert.deepEqual(r.blocks, [
    { type: "text", text: "/ws/a.py:2-2:\n```\nline 2\n```" },
    { type: "text", text: "untitled:1:\n```\nn\n```" },
  ]);
  assert.deepEqual(r.refused, ["@ image image/png (1 B)"]);
});
