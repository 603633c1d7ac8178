import { test } from "node:test";
import * as assert from "node:assert/strict";
import { approvalDetail, approvalOptions, questionOptions, questionSetItemOptions } from "../approvals";

test("an approval offers exactly the modes it names, and deny", () => {
  const both = approvalOptions({ kind: "approval", action: "tool", title: "t", toolName: "Bash", modes: ["once", "session"] });
  assert.deepEqual(both.map((o) => o.label), ["Allow once", "Allow for this session", "Deny"]);
  assert.deepEqual(both.map((o) => o.answer), [
    { kind: "approval", decision: "allow", mode: "once" },
    { kind: "approval", decision: "allow", mode: "session" },
    { kind: "approval", decision: "deny" },
  ]);
  assert.equal(both[1].description, "every Bash call in this session");
  const dflt = approvalOptions({ kind: "approval", action: "tool", title: "t" });
  assert.deepEqual(dflt.map((o) => o.label), ["Allow once", "Deny"], "no modes means once");
  const sessionOnly = approvalOptions({ kind: "approval", action: "tool", title: "t", modes: ["session"] });
  assert.deepEqual(sessionOnly.map((o) => o.label), ["Allow for this session", "Deny"]);
});

test("the approval's detail shows the command, else the input, and the directory", () => {
  assert.equal(approvalDetail({ kind: "approval", action: "tool", title: "t", command: "rm -rf build", cwd: "/w" }), "$ rm -rf build  in /w");
  assert.equal(approvalDetail({ kind: "approval", action: "tool", title: "t", input: { path: "a.txt" } }), '{"path":"a.txt"}');
});

test("a question offers its choices by id, and free text when allowed or choiceless", () => {
  const q = questionOptions({ kind: "question", prompt: "p", choices: [{ id: "pytest", label: "pytest" }, { id: "ut", label: "unittest" }] });
  assert.deepEqual(q.options.map((o) => [o.label, o.answer]), [
    ["pytest", { kind: "question", choice: "pytest" }],
    ["unittest", { kind: "question", choice: "ut" }],
  ]);
  assert.equal(q.freeText, false);
  assert.equal(questionOptions({ kind: "question", prompt: "p" }).freeText, true);
  assert.equal(questionOptions({ kind: "question", prompt: "p", choices: [{ id: "a", label: "A" }], allowFreeText: true }).freeText, true);
  assert.deepEqual(questionSetItemOptions({ key: "k", prompt: "p", choices: [{ id: "mit", label: "MIT" }] }), [{ label: "MIT", value: "mit" }]);
});
