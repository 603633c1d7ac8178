import { test } from "node:test";
import * as assert from "node:assert/strict";
import { BridgeRequestError, BridgeStartError } from "../client";
import { providerUnavailableMessage, requestErrorMessage, startFailureMessage } from "../messages";
import type { ProviderDescriptor } from "../protocol";

const gemini: ProviderDescriptor = {
  id: "gemini", displayName: "Gemini CLI", version: "0.1.0", maturity: "verified",
  capabilities: { run: { interrupt: "cooperative" }, interactions: { approval: { supported: true }, question: { supported: true } }, recovery: { resume: false }, nativeSessions: { list: "unsupported", read: "unsupported", continue: "unsupported" } },
  availability: { status: "unavailable", reason: "the gemini executable was not found", nextStep: "install the Gemini CLI (npm package @google/gemini-cli)" },
};

test("a provider error says what is missing and the next step from the descriptor", () => {
  const err = new BridgeRequestError("session/create", -32000, "the provider is not available on this machine", {
    code: "provider_unavailable", message: "the provider is not available on this machine", retryable: false, details: { provider: "gemini" },
  });
  assert.equal(
    requestErrorMessage(err, gemini),
    "The provider is not available on this machine (provider_unavailable; provider gemini): the gemini executable was not found. Next step: install the Gemini CLI (npm package @google/gemini-cli)",
  );
  assert.equal(providerUnavailableMessage(gemini), "Gemini CLI is not available: the gemini executable was not found. Next step: install the Gemini CLI (npm package @google/gemini-cli)");
});

test("an error's own next step wins; retryable errors say so; plain JSON-RPC errors keep their code", () => {
  const err = new BridgeRequestError("run/start", -32000, "m", { code: "run_active", message: "the session already has an active run", retryable: true });
  assert.equal(requestErrorMessage(err), "The session already has an active run (run_active). Next step: cancel the running turn first (retrying may help)");
  const plain = new BridgeRequestError("session/create", -32602, "Invalid params", undefined);
  assert.equal(requestErrorMessage(plain), "session/create failed: Invalid params (JSON-RPC -32602)");
});

test("a bridge that cannot start says how to fix it", () => {
  assert.match(startFailureMessage(new BridgeStartError("not_found", "x", "/no/agent-bridge", "")), /\/no\/agent-bridge was not found. Next step: agent-bridge is not on PyPI yet: install it from a clone \(pipx install \/path\/to\/agent-bridge/);
  assert.doesNotMatch(startFailureMessage(new BridgeStartError("not_found", "x", "/no/agent-bridge", "")), /pipx install agent-bridge/);
  assert.match(startFailureMessage(new BridgeStartError("exited", "the bridge exited during start (exit code 2)", "ab", "usage: bad flag")), /exit code 2\) — usage: bad flag/);
});
