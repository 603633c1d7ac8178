/**
 * The wire types, from the bridge's published contract (`schemas/agent-bridge.d.ts`,
 * copied into `src/schema/` by the build), and the guards a host needs on top of them.
 */
import type {
  EventEnvelope,
  EventPayload,
  KnownEventType,
  UnknownEventPayload,
} from "./schema/agent-bridge";

export type * from "./schema/agent-bridge";

/** Every event type this version of the protocol knows. */
export const KNOWN_EVENT_TYPES: readonly KnownEventType[] = [
  "diagnostic",
  "interaction.requested",
  "interaction.settled",
  "plan.updated",
  "run.completed",
  "run.failed",
  "run.interrupted",
  "run.started",
  "session.closed",
  "session.resumed",
  "text.delta",
  "thinking.delta",
  "tool.activity",
  "usage",
];

const KNOWN: ReadonlySet<string> = new Set(KNOWN_EVENT_TYPES);

/** Returns true when the payload is of a type this version knows (narrowing it). */
export function isKnownPayload(p: EventPayload | UnknownEventPayload): p is EventPayload {
  return KNOWN.has(p.type);
}

/** Returns the payload of an envelope when its type is known, else undefined. */
export function knownPayload(e: EventEnvelope): EventPayload | undefined {
  return isKnownPayload(e.payload) ? e.payload : undefined;
}
