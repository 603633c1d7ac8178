/**
 * What a prompt carries besides its text: the selection or the current file as context
 * (a `file` block naming the file and its lines, or a `resource` block with the text of
 * a buffer the agent cannot read from disk), a pasted image (an `image` block), and a
 * slash command; how each is labelled in the chat; and the run input they make.
 * Pure (no VS Code API), unit-tested in src/test/context.test.ts.
 */
import type { CommandInfo, InputBlock, InputKind, InputRecord, RunInput } from "./protocol";

/** What the extension knows of a text document (a VS Code TextDocument's parts). */
export interface DocumentFacts {
  /** The document's URI as a string (`file:///…`, `untitled:Untitled-1`). */
  uri: string;
  /** Its path on disk when its scheme is `file`. */
  fsPath: string | undefined;
  /** True when the buffer differs from the file on disk (or there is no file). */
  dirty: boolean;
  /** The text the block carries when it cannot name a file: the selection's, else the whole text. */
  text: string;
}

/** A selection's lines, from 1, inclusive (a selection ending at column 0 ends on the line above). */
export interface LineRange {
  startLine: number;
  endLine: number;
}

/**
 * Returns the context block of a document (`range`: a selection's lines, else the
 * whole file): a `file` block when the file is saved on disk (the agent reads it
 * itself), else a `resource` block with the text (an unsaved or untitled buffer).
 */
export function contextBlock(doc: DocumentFacts, range?: LineRange): InputBlock {
  if (doc.fsPath && !doc.dirty) {
    return range ? { type: "file", path: doc.fsPath, startLine: range.startLine, endLine: range.endLine } : { type: "file", path: doc.fsPath };
  }
  return { type: "resource", text: doc.text, uri: doc.uri, mimeType: "text/plain" };
}

/** Returns the lines a selection covers (`start`/`end`: 0-based line and character). */
export function selectionLines(start: { line: number; character: number }, end: { line: number; character: number }): LineRange {
  const last = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
  return { startLine: start.line + 1, endLine: last + 1 };
}

/**
 * Returns the image block of a pasted image given as a data URL (`data:image/png;base64,…`),
 * or a message saying why it cannot be sent (not an image, not base64, a type or a size
 * the provider does not take).
 */
export function imageBlock(dataUrl: string, accepted?: { mimeTypes: string[]; maxBytes: number } | null): InputBlock | string {
  const m = /^data:([\w.+-]+\/[\w.+-]+);base64,([A-Za-z0-9+/=]*)$/.exec(dataUrl);
  if (!m) return "The pasted item is not an image.";
  const [, mimeType, data] = m;
  if (!mimeType.startsWith("image/")) return `The pasted item is ${mimeType}, not an image.`;
  if (accepted) {
    if (!accepted.mimeTypes.includes(mimeType)) return `This provider does not take ${mimeType} images (it takes ${accepted.mimeTypes.join(", ")}).`;
    const bytes = base64Bytes(data);
    if (bytes > accepted.maxBytes) return `The image is ${formatBytes(bytes)}; this provider takes images up to ${formatBytes(accepted.maxBytes)}.`;
  }
  return { type: "image", mimeType, data };
}

/** The image type a file's extension names (a picked file is sent as that type). */
const IMAGE_TYPES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  bmp: "image/bmp",
  svg: "image/svg+xml",
  tif: "image/tiff",
  tiff: "image/tiff",
  avif: "image/avif",
  heic: "image/heic",
};

/** Returns the image type of a file by its extension, or undefined when it names none. */
export function imageFileType(path: string): string | undefined {
  const m = /\.([A-Za-z0-9]+)$/.exec(path);
  return m ? IMAGE_TYPES[m[1].toLowerCase()] : undefined;
}

/**
 * Returns why the image file `name` (`bytes` long) cannot be sent to a provider taking
 * `accepted`, or undefined when it can: checked from the file's name and size, before
 * the file is read (a 2 GB file is refused unread).
 */
export function imageFileRefusal(name: string, bytes: number, accepted?: { mimeTypes: string[]; maxBytes: number } | null): string | undefined {
  const mimeType = imageFileType(name);
  if (!mimeType) return `${name} is not an image file (by its extension).`;
  if (accepted) {
    if (!accepted.mimeTypes.includes(mimeType)) return `This provider does not take ${mimeType} images (it takes ${accepted.mimeTypes.join(", ")}).`;
    if (bytes > accepted.maxBytes) {
      // exact bytes when the rounded sizes would read the same
      const [is, max] = formatBytes(bytes) === formatBytes(accepted.maxBytes) ? [`${bytes} B`, `${accepted.maxBytes} B`] : [formatBytes(bytes), formatBytes(accepted.maxBytes)];
      return `${name} is ${is}; this provider takes images up to ${max}.`;
    }
  }
  return undefined;
}

/** Returns how many bytes base64 `data` decodes to. */
export function base64Bytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
}

/** Returns `n` bytes in words ("1.5 kB"). */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)} kB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

/** Returns a path relative to `workspace` when it is inside it, else the path. */
function shortPath(path: string, workspace?: string): string {
  if (workspace && path.startsWith(workspace.endsWith("/") ? workspace : `${workspace}/`)) return path.slice(workspace.replace(/\/$/, "").length + 1);
  return path;
}

/**
 * Returns one line for a block of a run's input that is not its text (an attachment, as
 * the input box's bar and the chat's prompt show it), or undefined for text.
 */
export function describeBlock(b: InputBlock | InputRecord, workspace?: string): string | undefined {
  switch (b.type) {
    case "command":
      return `/${b.name}${b.arguments ? ` ${b.arguments}` : ""}`;
    case "file": {
      const where = b.startLine ? `:${b.startLine}-${b.endLine ?? b.startLine}` : "";
      return `@ ${shortPath(b.path, workspace)}${where}`;
    }
    case "resource": {
      const n = b.text.split("\n").length;
      return `@ ${b.uri ?? "text"} (${n} ${n === 1 ? "line" : "lines"})`;
    }
    case "image": {
      const rec = b as { size?: unknown; data?: unknown };
      const size = typeof rec.size === "number" ? rec.size : typeof rec.data === "string" ? base64Bytes(rec.data) : undefined;
      return `@ image ${b.mimeType ?? ""}${size !== undefined ? ` (${formatBytes(size)})` : ""}`.replace(/ +/g, " ").trim();
    }
    default:
      return undefined;
  }
}

/**
 * Returns the run input for `text` with `attachments`: a text starting `/name` where
 * `name` is one of the session's `commands` is that command (the rest its arguments);
 * `{text}` alone when nothing is attached, else content blocks (the prompt first).
 */
export function runInput(text: string, attachments: InputBlock[], commands: CommandInfo[] = []): RunInput {
  const m = /^\/(\S+)\s*([\s\S]*?)\s*$/.exec(text);
  const command = m && commands.some((c) => c.name === m[1]) ? m : null;
  if (!command && !attachments.length) return { text };
  const first: InputBlock = command
    ? command[2]
      ? { type: "command", name: command[1], arguments: command[2] }
      : { type: "command", name: command[1] }
    : { type: "text", text };
  return { content: [first, ...attachments] };
}

/**
 * Returns the blocks a provider that takes only `kinds` can receive in place of
 * `blocks`: a file or resource it does not take becomes a text block quoting it (a
 * file's lines are read by `readLines`), anything else it does not take is left out
 * and named in `refused`.
 */
export function adaptBlocks(
  blocks: InputBlock[],
  kinds: InputKind[],
  readLines: (path: string, range?: LineRange) => string | undefined,
): { blocks: InputBlock[]; refused: string[] } {
  const out: InputBlock[] = [];
  const refused: string[] = [];
  for (const b of blocks) {
    if (kinds.includes(b.type)) {
      out.push(b);
      continue;
    }
    if (b.type === "file" && kinds.includes("text")) {
      const range = b.startLine ? { startLine: b.startLine, endLine: b.endLine ?? b.startLine } : undefined;
      const text = readLines(b.path, range);
      if (text !== undefined) {
        out.push({ type: "text", text: `${describeBlock(b)?.slice(2)}:\n\`\`\`\n${text}\n\`\`\`` });
        continue;
      }
    }
    if (b.type === "resource" && kinds.includes("text")) {
      out.push({ type: "text", text: `${b.uri ?? "text"}:\n\`\`\`\n${b.text}\n\`\`\`` });
      continue;
    }
    refused.push(describeBlock(b) ?? b.type);
  }
  return { blocks: out, refused };
}
