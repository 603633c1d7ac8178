/**
 * The bridge connection: spawns `agent-bridge serve --stdio` (or whatever command the
 * settings name), speaks JSON-RPC with Content-Length framing over the child's pipes
 * through `vscode-jsonrpc`, and types every request by the published `Methods` map.
 * No VS Code API here: the node test runner drives this module against a real bridge.
 */
import { ChildProcess, spawn } from "child_process";
import {
  CancellationToken,
  createMessageConnection,
  Disposable,
  Message,
  MessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  DataCallback,
  ErrorCodes,
} from "vscode-jsonrpc/node";
import type {
  Answer,
  ErrorInfo,
  EventEnvelope,
  HostRequestMethod,
  InitializeResult,
  InteractionRequestParams,
  JournalStatusParams,
  ParamsOf,
  ResultOf,
} from "./protocol";

/** Which way a logged message went: `>` host to bridge, `<` bridge to host, `!` stderr/lifecycle. */
export type TraceDirection = ">" | "<" | "!";

export interface BridgeCommand {
  command: string;
  args: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export interface BridgeClientOptions extends BridgeCommand {
  clientName: string;
  clientVersion: string;
  /** Receives every protocol message as JSON text, and the bridge's stderr lines. */
  trace?: (direction: TraceDirection, text: string) => void;
  /** How long the bridge may take to answer `initialize`, in ms. */
  startTimeoutMs?: number;
}

/** Why the bridge could not be started or talked to. */
export type BridgeStartFailure = "not_found" | "exited" | "timeout" | "protocol";

/** The bridge could not be started: `kind` says why, `stderr` holds its last lines. */
export class BridgeStartError extends Error {
  constructor(
    readonly kind: BridgeStartFailure,
    message: string,
    readonly command: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = "BridgeStartError";
  }
}

/** An error reply from the bridge: the JSON-RPC code and, for -32000/-32001/-32002, its `ErrorInfo`. */
export class BridgeRequestError extends Error {
  constructor(
    readonly method: string,
    readonly rpcCode: number,
    message: string,
    readonly info: ErrorInfo | undefined,
  ) {
    super(message);
    this.name = "BridgeRequestError";
  }
}

/** Returns the `ErrorInfo` carried by a JSON-RPC error's data, when it has one. */
export function errorInfoOf(data: unknown): ErrorInfo | undefined {
  if (data && typeof data === "object") {
    const d = data as Record<string, unknown>;
    if (typeof d.code === "string" && typeof d.message === "string" && typeof d.retryable === "boolean") {
      return d as unknown as ErrorInfo;
    }
  }
  return undefined;
}

/** Answers an interaction; rejects when the user gives no answer before `token` is cancelled. */
export type InteractionHandler = (params: InteractionRequestParams, token: CancellationToken) => Promise<Answer>;

class TracingReader extends StreamMessageReader {
  constructor(
    stream: NodeJS.ReadableStream,
    private readonly trace: (text: string) => void,
  ) {
    super(stream);
  }
  override listen(callback: DataCallback): Disposable {
    return super.listen((msg: Message) => {
      this.trace(JSON.stringify(msg));
      callback(msg);
    });
  }
}

class TracingWriter extends StreamMessageWriter {
  constructor(
    stream: NodeJS.WritableStream,
    private readonly trace: (text: string) => void,
  ) {
    super(stream);
  }
  override write(msg: Message): Promise<void> {
    this.trace(JSON.stringify(msg));
    return super.write(msg);
  }
}

/** A live, initialized connection to one bridge process. */
export class BridgeClient {
  private readonly eventListeners = new Set<(e: EventEnvelope) => void>();
  private readonly journalListeners = new Set<(p: JournalStatusParams) => void>();
  private readonly exitListeners = new Set<(code: number | null, signal: string | null) => void>();
  private interactionHandler: InteractionHandler | undefined;
  private exited = false;
  private readonly exitPromise: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly connection: MessageConnection,
    readonly initializeResult: InitializeResult,
    readonly command: BridgeCommand,
    private readonly stderrTail: () => string,
  ) {
    this.exitPromise = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        this.exited = true;
        resolve();
        return;
      }
      child.once("exit", (code, signal) => {
        this.exited = true;
        for (const l of this.exitListeners) l(code, signal);
        resolve();
      });
    });
    connection.onNotification("event", (params: EventEnvelope) => {
      for (const l of this.eventListeners) l(params);
    });
    connection.onNotification("journal/status", (params: JournalStatusParams) => {
      for (const l of this.journalListeners) l(params);
    });
    connection.onRequest("interaction/request", (params: InteractionRequestParams, token: CancellationToken) => {
      const handler = this.interactionHandler;
      if (!handler) {
        return new ResponseError(ErrorCodes.MethodNotFound, "this host has no interaction handler");
      }
      return handler(params, token);
    });
  }

  /**
   * Spawns the bridge, initializes the connection (declaring approvals, questions and
   * question sets) and returns the client. Raises BridgeStartError when the executable
   * is missing, exits before answering, does not answer in time or refuses initialize.
   */
  static async start(opts: BridgeClientOptions): Promise<BridgeClient> {
    const trace = opts.trace ?? (() => undefined);
    let stderr = "";
    const child = spawn(opts.command, opts.args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const tail = (): string => stderr.split("\n").slice(-20).join("\n").trim();
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-8000);
      for (const line of chunk.split("\n")) if (line.trim()) trace("!", line);
    });
    const failed = new Promise<never>((_, reject) => {
      child.once("error", (err: NodeJS.ErrnoException) => {
        const kind: BridgeStartFailure = err.code === "ENOENT" ? "not_found" : "exited";
        reject(new BridgeStartError(kind, `${opts.command}: ${err.message}`, opts.command, tail()));
      });
      child.once("exit", (code, signal) => {
        // Let the last stderr chunk arrive before the message is built.
        setTimeout(() => {
          reject(
            new BridgeStartError(
              "exited",
              `the bridge exited during start (${signal ?? `exit code ${code}`})`,
              opts.command,
              tail(),
            ),
          );
        }, 50);
      });
    });
    failed.catch(() => undefined);
    // Nothing is written before the process exists (a missing executable fails here).
    await Promise.race([new Promise<void>((resolve) => child.once("spawn", () => resolve())), failed]);
    if (!child.stdout || !child.stdin) throw new BridgeStartError("protocol", "no pipes to the bridge", opts.command, "");
    child.stdin.on("error", () => undefined);
    const connection = createMessageConnection(
      new TracingReader(child.stdout, (t) => trace("<", t)),
      new TracingWriter(child.stdin, (t) => trace(">", t)),
    );
    connection.listen();
    const timeoutMs = opts.startTimeoutMs ?? 30000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new BridgeStartError("timeout", `the bridge did not answer initialize in ${timeoutMs} ms`, opts.command, tail())),
        timeoutMs,
      );
    });
    try {
      const init = (await Promise.race([
        connection.sendRequest("initialize", {
          protocolVersion: 1,
          clientInfo: { name: opts.clientName, version: opts.clientVersion },
          capabilities: { interactions: { approval: true, question: true, questionSet: true } },
        }),
        failed,
        timeout,
      ])) as InitializeResult;
      await connection.sendNotification("initialized");
      return new BridgeClient(child, connection, init, opts, tail);
    } catch (err) {
      connection.dispose();
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      if (err instanceof BridgeStartError) throw err;
      const msg = err instanceof ResponseError ? `initialize was refused: ${err.message}` : String(err);
      throw new BridgeStartError("protocol", msg, opts.command, tail());
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** Sends a host request and returns its typed result; raises BridgeRequestError on an error reply. */
  async request<M extends HostRequestMethod>(method: M, params: ParamsOf<M>, token?: CancellationToken): Promise<ResultOf<M>> {
    try {
      const result: unknown = token
        ? await this.connection.sendRequest(method, params, token)
        : await this.connection.sendRequest(method, params);
      return result as ResultOf<M>;
    } catch (err) {
      if (err instanceof ResponseError) {
        const info = errorInfoOf(err.data);
        throw new BridgeRequestError(method, err.code, info?.message ?? err.message, info);
      }
      throw err;
    }
  }

  /** Calls `listener` with every `event` notification; returns a disposable. */
  onEvent(listener: (e: EventEnvelope) => void): Disposable {
    this.eventListeners.add(listener);
    return { dispose: () => this.eventListeners.delete(listener) };
  }

  /** Calls `listener` with every `journal/status` notification. */
  onJournalStatus(listener: (p: JournalStatusParams) => void): Disposable {
    this.journalListeners.add(listener);
    return { dispose: () => this.journalListeners.delete(listener) };
  }

  /** Calls `listener` when the bridge process exits (expectedly or not). */
  onExit(listener: (code: number | null, signal: string | null) => void): Disposable {
    this.exitListeners.add(listener);
    return { dispose: () => this.exitListeners.delete(listener) };
  }

  /** Sets who answers `interaction/request`. */
  setInteractionHandler(handler: InteractionHandler | undefined): void {
    this.interactionHandler = handler;
  }

  /** True while the bridge process runs. */
  get running(): boolean {
    return !this.exited;
  }

  /** The bridge's recent stderr lines. */
  stderr(): string {
    return this.stderrTail();
  }

  /**
   * Ends the bridge: `shutdown` (which closes its sessions), `exit`, then waits for the
   * process; kills it when it does not end within `graceMs`. Never raises.
   */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.exited) {
      try {
        await Promise.race([this.connection.sendRequest("shutdown"), sleep(graceMs)]);
        await this.connection.sendNotification("exit");
      } catch {
        // The bridge is already gone or refused: killed below if it still runs.
      }
      await Promise.race([this.exitPromise, sleep(graceMs)]);
      if (!this.exited) {
        this.child.kill("SIGKILL");
        await Promise.race([this.exitPromise, sleep(1000)]);
      }
    }
    this.connection.dispose();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
