/**
 * The wire types, from the bridge's published contract (`schemas/agent-bridge.d.ts`,
 * copied into `src/schema/` by the build), and the guards a host needs on top of them.
 * The known event types and their guard are the generated CommonJS twin of the
 * contract's runtime module (`schemas/agent-bridge.cjs`): no list is copied here.
 */
import type { EventEnvelope, EventPayload, UnknownEventPayload } from "./schema/agent-bridge";
import { KNOWN_EVENT_TYPES, isKnownEvent } from "./schema/agent-bridge.cjs";

export type * from "./schema/agent-bridge";

/** Every event type this version of the protocol knows. */
export { KNOWN_EVENT_TYPES };

/** Returns true when the payload is of a type this version knows (narrowing it). */
export function isKnownPayload(p: EventPayload | UnknownEventPayload): p is EventPayload {
  return isKnownEvent(p);
}

/** Returns the payload of an envelope when its type is known, else undefined. */
export function knownPayload(e: EventEnvelope): EventPayload | undefined {
  return isKnownPayload(e.payload) ? e.payload : undefined;
}
