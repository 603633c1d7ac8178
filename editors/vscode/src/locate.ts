/**
 * Finds the bridge command: the `agentBridge.bridgePath` setting, else `agent-bridge`
 * on PATH, else `uvx agent-bridge`; and the messages shown when none is there. Pure
 * apart from the `isExecutable` probe, which the caller passes in.
 */
import * as path from "path";

export interface BridgeSettings {
  bridgePath: string;
  bridgeArgs: string[];
  stateDir: string;
}

export type BridgeSource = "setting" | "PATH" | "uvx";

export interface LocatedBridge {
  command: string;
  args: string[];
  source: BridgeSource;
}

export interface MissingBridge {
  message: string;
  nextStep: string;
}

export const DEFAULT_ARGS = ["serve", "--stdio"];

/** Returns the first `name` found on `pathEnv`, or undefined. */
export function findOnPath(name: string, pathEnv: string, isExecutable: (p: string) => boolean): string | undefined {
  for (const dir of pathEnv.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Returns the command to spawn, or what is missing. `--state-dir` is added to the
 * arguments of `serve` and `connect` when the setting names one (not to an `ssh`
 * command, whose bridge is configured where it runs).
 */
export function locateBridge(
  settings: BridgeSettings,
  pathEnv: string,
  isExecutable: (p: string) => boolean,
): LocatedBridge | MissingBridge {
  const args = settings.bridgeArgs.length ? [...settings.bridgeArgs] : [...DEFAULT_ARGS];
  if (settings.stateDir && (args[0] === "serve" || args[0] === "connect") && !args.includes("--state-dir")) {
    args.push("--state-dir", settings.stateDir);
  }
  if (settings.bridgePath) {
    const p = settings.bridgePath;
    const explicit = p.includes("/") || p.includes("\\");
    const found = explicit ? (isExecutable(p) ? p : undefined) : findOnPath(p, pathEnv, isExecutable);
    if (found) return { command: found, args, source: "setting" };
    return {
      message: `The agent-bridge executable set in agentBridge.bridgePath ("${p}") was not found${explicit ? "" : " on PATH"}.`,
      nextStep: "Fix the agentBridge.bridgePath setting, or clear it to use agent-bridge from PATH.",
    };
  }
  const onPath = findOnPath("agent-bridge", pathEnv, isExecutable);
  if (onPath) return { command: onPath, args, source: "PATH" };
  const uvx = findOnPath("uvx", pathEnv, isExecutable);
  if (uvx) return { command: uvx, args: ["agent-bridge", ...args], source: "uvx" };
  return {
    message: "agent-bridge was not found: agentBridge.bridgePath is not set and neither agent-bridge nor uvx is on PATH.",
    nextStep:
      "Install it (pipx install agent-bridge, or uv tool install agent-bridge), or set agentBridge.bridgePath to the agent-bridge executable.",
  };
}

/** True when `r` says the bridge is missing. */
export function isMissing(r: LocatedBridge | MissingBridge): r is MissingBridge {
  return "nextStep" in r;
}
