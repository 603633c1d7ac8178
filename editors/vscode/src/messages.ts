/**
 * The messages the user sees for errors: a bridge that cannot start, an error reply, an
 * unavailable provider. Each says what happened and the next step. Pure.
 */
import { BridgeRequestError, BridgeStartError } from "./client";
import { INSTALL_STEP } from "./locate";
import type { ProviderDescriptor } from "./protocol";

/** Returns the message for a bridge that could not be started. */
export function startFailureMessage(err: BridgeStartError): string {
  switch (err.kind) {
    case "not_found":
      return `agent-bridge could not be started: ${err.command} was not found. Next step: ${INSTALL_STEP}.`;
    case "timeout":
      return `agent-bridge did not answer in time (${err.command}). Next step: run "${err.command} doctor" in a terminal, and see Agent Bridge: Show Protocol Traffic Log.`;
    case "exited":
    case "protocol":
      return `agent-bridge failed to start: ${err.message}${err.stderr ? ` — ${lastLine(err.stderr)}` : ""}. Next step: see Agent Bridge: Show Protocol Traffic Log.`;
  }
}

/**
 * Returns the message for an error reply. For provider errors the descriptor's
 * availability (when given) supplies the next step the error lacks.
 */
export function requestErrorMessage(err: unknown, provider?: ProviderDescriptor): string {
  if (err instanceof BridgeRequestError) {
    const info = err.info;
    if (!info) return `${err.method} failed: ${err.message} (JSON-RPC ${err.rpcCode})`;
    const d = info.details ?? {};
    const facts: string[] = [];
    if (d.provider) facts.push(`provider ${d.provider}`);
    if (d.option) facts.push(`option ${d.option}`);
    if (d.cause) facts.push(`cause ${d.cause}`);
    if (d.missing) facts.push(`missing ${d.missing}`);
    let next = d.nextStep ?? provider?.availability?.nextStep ?? undefined;
    if (!next) next = defaultNextStep(info.code);
    const reason = provider?.availability?.reason;
    return (
      `${capitalize(info.message)} (${info.code}${facts.length ? `; ${facts.join(", ")}` : ""})` +
      (reason && info.code.startsWith("provider_") ? `: ${reason}` : "") +
      (next ? `. Next step: ${next}` : "") +
      (info.retryable ? " (retrying may help)" : "")
    );
  }
  if (err instanceof BridgeStartError) return startFailureMessage(err);
  return err instanceof Error ? err.message : String(err);
}

/** Returns the message for a provider the user picked that is not available here. */
export function providerUnavailableMessage(d: ProviderDescriptor): string {
  const a = d.availability;
  return `${d.displayName} is not available: ${a?.reason ?? "unknown reason"}.${a?.nextStep ? ` Next step: ${a.nextStep}` : ""}`;
}

function defaultNextStep(code: string): string | undefined {
  switch (code) {
    case "provider_unavailable":
      return "run agent-bridge doctor to see what is missing";
    case "provider_auth_required":
      return "log in to the provider's CLI (agent-bridge doctor says how)";
    case "session_in_use":
      return "the session is open in another bridge process; close it there or use the daemon (agent-bridge connect)";
    case "run_active":
      return "cancel the running turn first";
    case "session_closed":
      return "reattach the session from the Sessions view to resume it";
    case "history_corrupt":
      return "restart the bridge with another state directory (agentBridge.stateDir)";
    default:
      return undefined;
  }
}

function capitalize(s: string): string {
  return s ? s[0].toUpperCase() + s.slice(1) : s;
}

function lastLine(s: string): string {
  const lines = s.trim().split("\n");
  return lines[lines.length - 1] ?? "";
}
