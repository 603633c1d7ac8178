import { test } from "node:test";
import * as assert from "node:assert/strict";
import { chosenLabels, modelOption, modeOption, optionTitle, providerChoices, valueChoices } from "../pickers";
import type { ProviderDescriptor } from "../protocol";

const caps = {
  run: { interrupt: "cooperative" as const },
  interactions: { approval: { supported: true, modes: ["once" as const] }, question: { supported: true } },
  recovery: { resume: true },
  nativeSessions: { list: "unsupported" as const, read: "unsupported" as const, continue: "unsupported" as const },
};
const claude: ProviderDescriptor = {
  id: "claude-code", displayName: "Claude Code", version: "1.0.0", maturity: "verified", capabilities: caps,
  options: [
    { name: "model", scope: "session", type: "string", description: "--model" },
    { name: "permissionMode", scope: "session", type: "enum", description: "modes", values: ["default", "acceptEdits", "plan"], default: "default" },
  ],
  availability: { status: "unavailable", reason: "the claude executable was not found", nextStep: "install Claude Code" },
};
const codex: ProviderDescriptor = {
  id: "codex", displayName: "OpenAI Codex", version: "0.1.0", maturity: "verified", capabilities: caps,
  options: [
    { name: "model", scope: "session", type: "string", description: "The model" },
    { name: "approvalPolicy", scope: "session", type: "enum", description: "when", values: ["untrusted", "on-request", "never"] },
  ],
  availability: { status: "available", version: "0.171.0", authentication: "unauthenticated", nextStep: "codex login" },
};
const scripted: ProviderDescriptor = {
  id: "scripted", displayName: "Scripted (built-in)", version: "1.0.0", maturity: "verified", capabilities: caps,
  options: [{ name: "script", scope: "session", type: "json", description: "s" }], availability: { status: "available" },
};
const acp: ProviderDescriptor = {
  id: "acp", displayName: "ACP agent", version: "0.1.0", maturity: "experimental", capabilities: caps,
  options: [{ name: "mode", scope: "session", type: "string", description: "m" }, { name: "model", scope: "run", type: "string", description: "m" }],
  availability: { status: "unknown", reason: "named per session" },
};

test("providers: available first, the preferred one on top, unavailable ones say the next step", () => {
  const c = providerChoices([claude, codex, scripted, acp], "scripted");
  assert.deepEqual(c.map((x) => x.providerId), ["scripted", "codex", "acp", "claude-code"]);
  const cl = c[3];
  assert.equal(cl.available, false);
  assert.equal(cl.label, "$(warning) Claude Code");
  assert.equal(cl.detail, "Not available: the claude executable was not found. Next step: install Claude Code");
  assert.equal(c[1].description, "codex · v0.171.0");
  assert.equal(c[1].detail, "Not logged in. Next step: codex login");
  assert.equal(c[2].description, "acp · experimental");
});

test("model and mode options come from the descriptor's session options", () => {
  assert.equal(modelOption(claude)?.type, "string");
  assert.equal(modeOption(claude)?.name, "permissionMode");
  assert.equal(modeOption(codex)?.name, "approvalPolicy");
  assert.equal(modeOption(acp)?.name, "mode");
  assert.equal(modelOption(acp), undefined, "a run-scoped model is not a session picker");
  assert.equal(modelOption(scripted), undefined);
  assert.equal(modeOption(scripted), undefined);
  assert.equal(optionTitle(modeOption(claude)!), "permission mode");
});

test("an enum option's values become choices with the provider default first", () => {
  const v = valueChoices(modeOption(claude)!);
  assert.deepEqual(v?.map((x) => [x.label, x.value, x.description]), [
    ["Provider default", undefined, "(default)"],
    ["default", "default", "default"],
    ["acceptEdits", "acceptEdits", undefined],
    ["plan", "plan", undefined],
  ]);
  assert.equal(valueChoices(modelOption(claude)!), undefined, "a string option is typed in");
});

test("the model and mode chosen, as the chat header shows them", () => {
  assert.deepEqual(chosenLabels(claude, { model: "sonnet", permissionMode: "plan", executable: "/x" }), ["model sonnet", "permissionMode plan"]);
  assert.deepEqual(chosenLabels(codex, { approvalPolicy: "never" }), ["approvalPolicy never"]);
  assert.deepEqual(chosenLabels(scripted, { script: [] }), []);
});
