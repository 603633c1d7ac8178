/**
 * Provider, model and mode pickers built from `providers/list` descriptors. Pure: the
 * extension turns these into quick picks or input boxes.
 */
import type { OptionDescriptor, ProviderDescriptor } from "./protocol";

export interface ProviderChoice {
  label: string;
  description: string;
  detail: string | undefined;
  providerId: string;
  available: boolean;
  /** What to do to make an unavailable provider usable. */
  nextStep: string | undefined;
}

/** Session options that choose how much the agent may do without asking, first found wins. */
export const MODE_OPTION_NAMES = ["permissionMode", "mode", "approvalPolicy"] as const;
/** The session option that chooses the model. */
export const MODEL_OPTION_NAME = "model";

/**
 * Returns one choice per provider, available ones first (then in the bridge's order),
 * with `preferred` first among them; unavailable ones say why and the next step.
 */
export function providerChoices(descriptors: readonly ProviderDescriptor[], preferred?: string): ProviderChoice[] {
  const choices = descriptors.map((d, index) => {
    const a = d.availability;
    const available = !a || a.status !== "unavailable";
    const facts = [d.id, a?.version ? `v${a.version}` : undefined, d.maturity === "verified" ? undefined : d.maturity]
      .filter((x): x is string => !!x)
      .join(" · ");
    let detail: string | undefined;
    if (a?.status === "unavailable") detail = `Not available: ${a.reason ?? "unknown reason"}${a.nextStep ? `. Next step: ${a.nextStep}` : ""}`;
    else if (a?.authentication === "unauthenticated") detail = `Not logged in${a.nextStep ? `. Next step: ${a.nextStep}` : ""}`;
    else if (a?.status === "unknown" && a.reason) detail = a.reason;
    return {
      choice: {
        label: available ? d.displayName : `$(warning) ${d.displayName}`,
        description: facts,
        detail,
        providerId: d.id,
        available,
        nextStep: a?.nextStep ?? undefined,
      },
      rank: (available ? 0 : 2) + (d.id === preferred ? -1 : 0),
      index,
    };
  });
  choices.sort((a, b) => a.rank - b.rank || a.index - b.index);
  return choices.map((c) => c.choice);
}

/** Returns the provider's session-scoped `model` option, if it has one. */
export function modelOption(d: ProviderDescriptor): OptionDescriptor | undefined {
  return (d.options ?? []).find((o) => o.scope === "session" && o.name === MODEL_OPTION_NAME);
}

/** Returns the provider's session-scoped mode option (permission mode, ACP mode, approval policy). */
export function modeOption(d: ProviderDescriptor): OptionDescriptor | undefined {
  for (const name of MODE_OPTION_NAMES) {
    const o = (d.options ?? []).find((x) => x.scope === "session" && x.name === name);
    if (o) return o;
  }
  return undefined;
}

export interface ValueChoice {
  label: string;
  description: string | undefined;
  /** undefined: leave the option out (the provider's default). */
  value: string | undefined;
}

/**
 * Returns the choices of an option: "provider default" first, then each allowed value
 * (the declared default marked). An option without `values` returns undefined: ask
 * for free text instead.
 */
export function valueChoices(o: OptionDescriptor): ValueChoice[] | undefined {
  const values = o.values ?? [];
  if (o.type !== "enum" || values.length === 0) return undefined;
  const def = typeof o.default === "string" ? o.default : undefined;
  return [
    { label: "Provider default", description: def ? `(${def})` : undefined, value: undefined },
    ...values.map((v) => ({ label: v, description: v === def ? "default" : undefined, value: v })),
  ];
}

/** Returns a one-line, human name for an option ("model", "permission mode"). */
export function optionTitle(o: OptionDescriptor): string {
  return o.name.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
}

/**
 * Returns the model and mode set in `options` for provider `d`, as the chat header shows
 * them: e.g. ["model sonnet", "permissionMode plan"].
 */
export function chosenLabels(d: ProviderDescriptor, options: Record<string, unknown>): string[] {
  const out: string[] = [];
  const model = modelOption(d);
  if (model && options[model.name] !== undefined) out.push(`model ${String(options[model.name])}`);
  const mode = modeOption(d);
  if (mode && options[mode.name] !== undefined) out.push(`${mode.name} ${String(options[mode.name])}`);
  return out;
}
