"""Building scripted-provider scripts, reading recorded ones (cassettes), and asserting on
event sequences."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "Cassette",
    "Script",
    "assert_event_types",
    "assert_payloads_in_order",
    "event_types",
    "normalized",
    "payloads",
]

Message = dict[str, Any]


class Script:
    """A fluent builder of scripted-provider scripts::

        Script().text("Hello").approval("touch x", on_allow=Script().text("done")).build()

    :meth:`session` gives the ``session/create`` params for it.
    """

    def __init__(self) -> None:
        self.steps: list[Message] = []

    def step(self, type: str, **fields: Any) -> Script:
        """Any step, by its ``type`` and fields (camelCase, as in the script language)."""
        self.steps.append({"type": type, **{k: v for k, v in fields.items() if v is not None}})
        return self

    def text(self, text: str, chunks: int = 1) -> Script:
        return self.step("text", text=text, chunks=chunks)

    def thinking(self, text: str) -> Script:
        return self.step("thinking", text=text)

    def echo(self) -> Script:
        return self.step("echo")

    def tool(self, name: str, id: str = "tool_1", **fields: Any) -> Script:
        return self.step("tool", name=name, id=id, **fields)

    def approval(
        self,
        title: str = "Run a tool",
        *,
        on_allow: Script | None = None,
        on_deny: Script | None = None,
        **fields: Any,
    ) -> Script:
        return self.step(
            "approval",
            title=title,
            onAllow=None if on_allow is None else on_allow.steps,
            onDeny=None if on_deny is None else on_deny.steps,
            **fields,
        )

    def question(
        self,
        prompt: str,
        choices: Iterable[tuple[str, str]] = (),
        branches: dict[str, Script] | None = None,
    ) -> Script:
        return self.step(
            "question",
            prompt=prompt,
            choices=[{"id": i, "label": label} for i, label in choices],
            branches=None if branches is None else {k: v.steps for k, v in branches.items()},
        )

    def fail(self, code: str = "provider_failed") -> Script:
        return self.step("fail", code=code)

    def wait_for_interrupt(self) -> Script:
        return self.step("waitForInterrupt")

    def build(self) -> Message:
        """The script (``{"steps": [...]}``)."""
        return {"steps": list(self.steps)}

    def session(self, **params: Any) -> Message:
        """``session/create`` params running this script."""
        return {"provider": "scripted", "options": {"script": self.build()}, **params}


def payloads(events: Iterable[Message]) -> list[Message]:
    """The payloads of ``event`` params (or of envelopes)."""
    return [e["payload"] for e in events]


def event_types(events: Iterable[Message]) -> list[str]:
    """The payload types of ``events``, in order."""
    return [e["payload"]["type"] for e in events]


def normalized(events: Iterable[Message]) -> list[Message]:
    """The payloads of ``events`` with ids and times aside (``interactionId`` removed):
    what two runs of the same script must agree on."""
    return [{k: v for k, v in e["payload"].items() if k != "interactionId"} for e in events]


def assert_event_types(events: Sequence[Message], expected: Sequence[str]) -> None:
    """Assert the payload types are exactly ``expected``; consecutive deltas of one kind
    count once when ``expected`` names them once (streaming may chunk text)."""
    got = event_types(events)
    folded = [t for i, t in enumerate(got) if not (i and t == got[i - 1] and t.endswith(".delta"))]
    if got != list(expected) and folded != list(expected):
        raise AssertionError(f"event types differ:\n  got      {got}\n  expected {list(expected)}")


def assert_payloads_in_order(events: Sequence[Message], expected: Sequence[Message]) -> None:
    """Assert each of ``expected`` (partial payloads: only the keys given are compared)
    occurs in ``events``, in this order (other events may come between)."""
    got = payloads(events)
    i = 0
    for want in expected:
        while i < len(got) and not all(got[i].get(k) == v for k, v in want.items()):
            i += 1
        if i == len(got):
            raise AssertionError(f"no payload matching {want} in order in {got}")
        i += 1


class Cassette:
    """A script written by ``agent-bridge record`` and what its recording saw."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.script: Message = json.loads(self.path.read_text(encoding="utf-8"))
        recorded = self.script.get("recorded")
        if not isinstance(recorded, dict):
            raise ValueError(f"{self.path} is not a recorded script (no 'recorded')")
        self.recorded: Message = recorded
        self.provider: str = recorded["provider"]

    @property
    def runs(self) -> list[Message]:
        """The recorded runs: ``input`` and ``events`` (normalized payloads)."""
        runs: list[Message] = self.recorded["runs"]
        return runs

    def session(self, **params: Any) -> Message:
        """``session/create`` params replaying this cassette (the file path as
        ``options.script``)."""
        return {"provider": "scripted", "options": {"script": str(self.path.resolve())}, **params}

    def answers(self, run: int) -> list[Message]:
        """The answers given in recorded run ``run``, in order (auto answers left out)."""
        return [
            p["answer"]
            for p in self.runs[run]["events"]
            if p["type"] == "interaction.settled"
            and p.get("status") == "responded"
            and not p.get("auto")
        ]

    def interrupt_after(self, run: int) -> int | None:
        """For a recorded run that was interrupted: after how many events to interrupt."""
        events = self.runs[run]["events"]
        if events and events[-1]["type"] == "run.interrupted":
            return len(events) - 1
        return None

    def assert_matches(self, replayed: Sequence[Sequence[Message]]) -> None:
        """Assert the replayed runs' events (``event`` params per run) equal the
        recorded ones, ids and times aside."""
        want = [r["events"] for r in self.runs]
        got = [normalized(run) for run in replayed]
        if got != want:
            for i, (g, w) in enumerate(zip(got, want, strict=False)):
                if g != w:
                    raise AssertionError(f"run {i} differs:\n  got      {g}\n  recorded {w}")
            raise AssertionError(f"{len(got)} runs replayed, {len(want)} recorded")
