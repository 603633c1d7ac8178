/**
 * Finds the bridge command: the `agentBridge.bridgePath` setting, else `agent-bridge`
 * on PATH; and the messages shown when neither is there. Pure apart from the
 * `isExecutable` probe, which the caller passes in. There is no `uvx agent-bridge`
 * fallback: agent-bridge is not on PyPI yet, so it would only fail in uv's resolver.
 */
import * as path from "path";

export interface BridgeSettings {
  bridgePath: string;
  bridgeArgs: string[];
  stateDir: string;
}

export type BridgeSource = "setting" | "PATH";

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

/**
 * How to get agent-bridge before its first release (the README's Install section): from
 * a clone, as a tool or through the clone's own `.venv`.
 */
export const INSTALL_STEP =
  "agent-bridge is not on PyPI yet: install it from a clone (pipx install /path/to/agent-bridge, or uv tool install /path/to/agent-bridge), " +
  "or set agentBridge.bridgePath to a clone's .venv/bin/agent-bridge (made by bash scripts/setup.sh)";

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
  return {
    message: "agent-bridge was not found: agentBridge.bridgePath is not set and agent-bridge is not on PATH.",
    nextStep: `${INSTALL_STEP[0].toUpperCase()}${INSTALL_STEP.slice(1)}.`,
  };
}

/** True when `r` says the bridge is missing. */
export function isMissing(r: LocatedBridge | MissingBridge): r is MissingBridge {
  return "nextStep" in r;
}
