/**
 * The "continue a session" picker's items: the bridge's sessions of the workspace and the
 * sessions each provider keeps itself (its CLI's too, `provider/sessions/list`), newest
 * first, one item per conversation (a provider session bound to a bridge session is that
 * bridge session's item). Pure, unit-tested in src/test/continuePick.test.ts.
 */
import type { NativeSessionInfo, ProviderDescriptor, SessionInfo } from "./protocol";

/** What picking an item does: open a bridge session, continue a provider's own, or explain. */
export type ContinueTarget =
  | { kind: "bridge"; sessionId: string }
  | { kind: "native"; provider: string; sessionRef: string; title: string | undefined }
  | { kind: "problem"; message: string };

export interface ContinueItem {
  label: string;
  description: string;
  detail?: string;
  /** For the order: the last update (or creation), ISO 8601. */
  when: string;
  target: ContinueTarget;
}

/**
 * The providers whose own sessions can be listed and continued in the bridge. (One whose
 * CLI a probe did not find is asked too: its sessions may be on disk, and continuing
 * them takes an `executable` from the session options.)
 */
export function continuableProviders(providers: ProviderDescriptor[]): ProviderDescriptor[] {
  return providers.filter((p) => p.capabilities.nativeSessions.list === "supported" && p.capabilities.nativeSessions.continue === "supported");
}

/** Returns an ISO time as local "2 Dec 07:30" (empty when absent). */
export function shortTime(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const hh = String(d.getHours()).padStart(2, "0");
  const mm = String(d.getMinutes()).padStart(2, "0");
  return `${d.getDate()} ${months[d.getMonth()]} ${hh}:${mm}`;
}

/**
 * Returns the picker's items, newest first: each bridge session (`bridge`), each provider
 * session (`native`, by provider id) that is not bound to one of those, and a `problem`
 * item per provider whose listing failed (`problems`, by provider id), last.
 */
export function continueItems(
  bridge: SessionInfo[],
  native: Map<string, NativeSessionInfo[]>,
  problems: Map<string, string> = new Map(),
): ContinueItem[] {
  const bridgeIds = new Set(bridge.map((s) => s.sessionId));
  const boundFrom = new Map<string, string>();
  const items: ContinueItem[] = bridge.map((s) => {
    const when = s.updatedAt ?? s.createdAt;
    return {
      label: s.title || s.sessionId,
      description: `${s.providerId} · agent-bridge · ${s.state}${s.pendingInteractions ? ` · ${s.pendingInteractions} pending` : ""}`,
      detail: `updated ${shortTime(when)}`,
      when,
      target: { kind: "bridge", sessionId: s.sessionId },
    };
  });
  for (const [provider, sessions] of native) {
    for (const n of sessions) {
      if (n.bridgeSessionId && bridgeIds.has(n.bridgeSessionId)) {
        boundFrom.set(n.bridgeSessionId, provider);
        continue;
      }
      const when = n.updatedAt ?? n.createdAt ?? "";
      items.push({
        label: n.title || n.sessionRef,
        description: `${provider} · its own history`,
        detail: `updated ${shortTime(when)}${n.sizeBytes ? ` · ${Math.ceil(n.sizeBytes / 1024)} KiB` : ""}`,
        when,
        target: { kind: "native", provider, sessionRef: n.sessionRef, title: n.title ?? undefined },
      });
    }
  }
  for (const i of items) {
    if (i.target.kind === "bridge" && boundFrom.has(i.target.sessionId)) i.description += ` · also in ${boundFrom.get(i.target.sessionId)}'s own history`;
  }
  items.sort((a, b) => (a.when < b.when ? 1 : a.when > b.when ? -1 : 0));
  for (const [provider, message] of problems) {
    items.push({ label: `${provider}: its sessions could not be listed`, description: message, when: "", target: { kind: "problem", message: `${provider}: ${message}` } });
  }
  return items;
}
