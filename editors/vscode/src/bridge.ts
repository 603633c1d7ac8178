/**
 * The bridge process as the extension sees it: found from the settings, started on
 * first use, its traffic written to the "Agent Bridge Traffic" output channel, a clear
 * message (with the next step) when it is missing or dies, restarted on request.
 */
import * as fs from "fs";
import * as vscode from "vscode";
import { BridgeClient, BridgeStartError, TraceDirection } from "./client";
import { isMissing, locateBridge, LocatedBridge, MissingBridge } from "./locate";
import { startFailureMessage } from "./messages";
import type { Ui } from "./ui";

const SETTINGS_ACTION = "Open Settings";
const LOG_ACTION = "Show Traffic Log";
const RESTART_ACTION = "Restart Bridge";

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Owns the bridge child process and its traffic log. */
export class BridgeHost implements vscode.Disposable {
  private client: BridgeClient | undefined;
  private starting: Promise<BridgeClient> | undefined;
  private stopping = false;
  private readonly didStart = new vscode.EventEmitter<BridgeClient>();
  private readonly didStop = new vscode.EventEmitter<void>();
  /** Fires with each newly started (initialized) client. */
  readonly onDidStart = this.didStart.event;
  /** Fires when the bridge process ended (stopped or died). */
  readonly onDidStop = this.didStop.event;
  /** Every traffic line written, kept for the test mode's assertions. */
  readonly trafficLines: string[] = [];
  /** The last reason the bridge could not be used, shown in the Sessions view. */
  lastProblem: string | undefined;

  constructor(
    readonly output: vscode.OutputChannel,
    private readonly ui: Ui,
    private readonly version: string,
  ) {}

  /** The running client, if any (does not start one). */
  get current(): BridgeClient | undefined {
    return this.client?.running ? this.client : undefined;
  }

  /** Returns the bridge command the settings resolve to, or what is missing. */
  locate(): LocatedBridge | MissingBridge {
    const cfg = vscode.workspace.getConfiguration("agentBridge");
    return locateBridge(
      {
        bridgePath: cfg.get<string>("bridgePath", "").trim(),
        bridgeArgs: cfg.get<string[]>("bridgeArgs", []),
        stateDir: cfg.get<string>("stateDir", "").trim(),
      },
      process.env.PATH ?? "",
      isExecutable,
    );
  }

  /** Returns the running client, starting the bridge when none runs; raises BridgeStartError. */
  async ensure(): Promise<BridgeClient> {
    if (this.client?.running) return this.client;
    if (!this.starting) {
      this.starting = this.start().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  /**
   * Like ensure(), but shows the failure (with its next step and buttons) instead of
   * raising; returns undefined then.
   */
  async ensureOrExplain(): Promise<BridgeClient | undefined> {
    try {
      return await this.ensure();
    } catch (err) {
      const msg = this.lastProblem ?? (err instanceof BridgeStartError ? startFailureMessage(err) : String(err));
      void this.explain(msg);
      return undefined;
    }
  }

  /** Stops the bridge (shutdown, exit) and starts it again. */
  async restart(): Promise<BridgeClient | undefined> {
    await this.stop();
    return this.ensureOrExplain();
  }

  /** Stops the bridge if it runs. */
  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c) {
      this.stopping = true;
      try {
        await c.stop();
      } finally {
        this.stopping = false;
      }
      this.didStop.fire();
    }
  }

  dispose(): void {
    void this.stop();
    this.didStart.dispose();
    this.didStop.dispose();
  }

  private trace(direction: TraceDirection, text: string): void {
    const line = `${new Date().toISOString().slice(11, 23)} ${direction} ${text}`;
    this.trafficLines.push(line);
    if (this.trafficLines.length > 5000) this.trafficLines.splice(0, 1000);
    this.output.appendLine(line);
  }

  private async start(): Promise<BridgeClient> {
    const located = this.locate();
    if (isMissing(located)) {
      this.lastProblem = `${located.message} Next step: ${located.nextStep}`;
      this.trace("!", this.lastProblem);
      throw new BridgeStartError("not_found", located.message, "agent-bridge", "");
    }
    this.trace("!", `starting ${located.command} ${located.args.join(" ")} (found via ${located.source})`);
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    try {
      const client = await BridgeClient.start({
        command: located.command,
        args: located.args,
        cwd,
        clientName: "agent-bridge-vscode",
        clientVersion: this.version,
        trace: (d, t) => this.trace(d, t),
      });
      this.lastProblem = undefined;
      this.client = client;
      client.onExit((code, signal) => {
        this.trace("!", `the bridge exited (${signal ?? `exit code ${code}`})`);
        if (this.client === client) this.client = undefined;
        if (!this.stopping) {
          this.lastProblem = `The bridge exited unexpectedly (${signal ?? `exit code ${code}`}).`;
          void this.ui
            .error(`${this.lastProblem} Its sessions can be reattached after a restart.`, RESTART_ACTION, LOG_ACTION)
            .then((a) => {
              if (a === RESTART_ACTION) void this.ensureOrExplain();
              if (a === LOG_ACTION) this.output.show(true);
            });
          this.didStop.fire();
        }
      });
      client.onJournalStatus((p) => {
        if (p.state !== "ok") void this.ui.error(`The bridge's journal is ${p.state}${p.reason ? ` (${p.reason})` : ""}: new sessions and turns wait until it recovers.`);
      });
      this.didStart.fire(client);
      return client;
    } catch (err) {
      if (err instanceof BridgeStartError) {
        this.lastProblem = startFailureMessage(err);
        this.trace("!", this.lastProblem);
      }
      throw err;
    }
  }

  private async explain(msg: string): Promise<void> {
    const a = await this.ui.error(msg, SETTINGS_ACTION, LOG_ACTION);
    if (a === SETTINGS_ACTION) void vscode.commands.executeCommand("workbench.action.openSettings", "agentBridge");
    if (a === LOG_ACTION) this.output.show(true);
  }
}
