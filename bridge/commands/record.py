"""``agent-bridge record``: turn a journaled session into a scripted-provider script.

Any session in the journal (a real Claude Code or Codex run included) becomes a script
that the built-in ``scripted`` provider replays deterministically, with no CLI and no
network (``session/create {"provider": "scripted", "options": {"script": FILE}}``):

* each run becomes an entry of ``runs``, in order;
* the provider's payloads become ``emit`` steps, grouped by the raw record they were
  projected from (which they carry, so ``events/read`` with ``view: "raw"`` shows the
  recorded provenance);
* each interaction becomes an ``interaction`` step asking the recorded request: what
  followed it is its ``then`` branch, taken when the answer goes the way the recorded
  one went (same decision, same choice); any other answer takes ``otherwise``, a
  ``replay_diverged`` warning, after which the run completes;
* the run's end becomes ``complete`` (with the recorded ``stopReason``), ``fail`` (with
  the recorded code) or ``waitForInterrupt`` (an interrupted run waits to be
  interrupted again; ``ignoreInterrupt`` when it was stopped by force);
* ``recorded`` keeps what the recording saw (the inputs, every payload with ids and
  times aside), so a host can check that a replay gives the same events.

Every string of the script is passed through :func:`agent_bridge.redaction.redact`, so
secret-shaped text (keys, tokens, passwords) is not written out.  Events a provider sent
while an interaction was pending are replayed after its settlement (a script waits on
each interaction).  The journal is read through its package face only.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from agent_bridge.redaction import redact

if TYPE_CHECKING:
    import argparse

    from agent_bridge.journal import History

__all__ = [
    "PROVIDER_TYPES",
    "add_parsers",
    "normalized_payload",
    "record_session",
    "run",
    "script_from_events",
]

#: Payload types a provider emits (everything else the runtime produces itself).
PROVIDER_TYPES: Final = frozenset(
    {"text.delta", "thinking.delta", "tool.activity", "plan.updated", "usage", "diagnostic"}
)
#: Diagnostics the runtime itself adds (a replay adds them again).
_RUNTIME_DIAGNOSTICS: Final = frozenset(
    {"approval_auto_denied", "question_auto_cancelled", "provider_contract"}
)
_PAGE: Final = 1000
_DIVERGED: Final = {
    "type": "diagnostic",
    "level": "warning",
    "code": "replay_diverged",
    "message": "the answer took a branch the recording did not take",
}


def normalized_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with its per-run ids (``interactionId``) removed: what a replay must
    reproduce exactly."""
    return {k: v for k, v in payload.items() if k != "interactionId"}


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    return value


class _Builder:
    """Steps of one run from its events (in sequence order)."""

    def __init__(self, events: Sequence[dict[str, Any]], raws: dict[int, Any]) -> None:
        self.events = events
        self.raws = raws
        self.settled: dict[str, dict[str, Any]] = {}
        self.by_seq: dict[int, int] = {}
        for raw_id, (spans, _) in raws.items():
            for a, b in spans:
                for seq in range(a, b + 1):
                    self.by_seq[seq] = raw_id
        for event in events:
            payload = event["payload"]
            if payload["type"] == "interaction.settled":
                self.settled.setdefault(payload["interactionId"], payload)

    def steps(self, start: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        group_raw: int | None = None
        i = start
        while i < len(self.events):
            event = self.events[i]
            payload = event["payload"]
            kind = payload["type"]
            i += 1
            if kind == "diagnostic" and payload.get("code") in _RUNTIME_DIAGNOSTICS:
                continue
            if kind in PROVIDER_TYPES:
                raw_id = self.by_seq.get(event["sequence"])
                last = out[-1] if out else None
                if (
                    last is not None
                    and last["type"] == "emit"
                    and raw_id is not None
                    and raw_id == group_raw
                ):
                    last["payloads"].append(payload)
                    continue
                step: dict[str, Any] = {"type": "emit", "payloads": [payload]}
                if raw_id is not None:
                    step["raw"] = self.raws[raw_id][1]
                out.append(step)
                group_raw = raw_id
                continue
            group_raw = None
            if kind == "interaction.requested":
                settled = self.settled.get(payload["interactionId"], {})
                answer = settled.get("answer") if settled.get("status") == "responded" else None
                rest = [
                    j
                    for j in range(i, len(self.events))
                    if not (
                        self.events[j]["payload"]["type"] == "interaction.settled"
                        and self.events[j]["payload"]["interactionId"] == payload["interactionId"]
                    )
                ]
                tail = _Builder([self.events[j] for j in rest], self.raws)
                tail.settled, tail.by_seq = self.settled, self.by_seq
                out.append(
                    {
                        "type": "interaction",
                        "request": payload["request"],
                        "answer": answer,
                        "then": tail.steps(0),
                        "otherwise": [dict(_DIVERGED)],
                    }
                )
                return out
            if kind == "run.completed":
                out.append({"type": "complete", "stopReason": payload.get("stopReason")})
                return out
            if kind == "run.failed":
                out.append({"type": "fail", "code": payload["error"]["code"]})
                return out
            if kind == "run.interrupted":
                out.append(
                    {"type": "waitForInterrupt", "ignoreInterrupt": bool(payload.get("forced"))}
                )
                return out
            # run.started, interaction.settled (handled with its request), session events
        return out


def script_from_events(
    envelopes: Sequence[dict[str, Any]],
    raws: dict[int, tuple[list[tuple[int, int]], Any]],
    *,
    provider: str,
    session_id: str,
    recorded_at: str,
    provider_version: str | None = None,
) -> dict[str, Any]:
    """The script (parsed JSON) replaying the session whose events are ``envelopes``
    (decoded, in sequence order); ``raws`` maps raw record ids to their ``(spans,
    record)``.  Pure: no I/O; redacted."""
    order: list[str] = []
    by_run: dict[str, list[dict[str, Any]]] = {}
    for envelope in envelopes:
        run_id = envelope.get("runId")
        if run_id is None:
            continue
        if run_id not in by_run:
            order.append(run_id)
            by_run[run_id] = []
        by_run[run_id].append(envelope)
    runs: list[dict[str, Any]] = []
    recorded_runs: list[dict[str, Any]] = []
    for run_id in order:
        events = by_run[run_id]
        started = next((e for e in events if e["payload"]["type"] == "run.started"), None)
        runs.append({"steps": _Builder(events, raws).steps(0)})
        recorded_runs.append(
            {
                "input": started["payload"]["input"] if started else "",
                "events": [normalized_payload(e["payload"]) for e in events],
            }
        )
    if not runs:
        runs.append({"steps": [{"type": "complete", "stopReason": "end_turn"}]})
    recording: dict[str, Any] = {
        "provider": provider,
        "sessionId": session_id,
        "recordedAt": recorded_at,
        "runs": recorded_runs,
    }
    if provider_version is not None:
        recording["providerVersion"] = provider_version
    script: dict[str, Any] = _scrub({"runs": runs, "recorded": recording})
    return script


async def record_session(history: History, session_id: str, recorded_at: str) -> dict[str, Any]:
    """Read ``session_id`` from ``history`` (events and raw records) and return its
    script, checked against the scripted provider's script language.  Raises
    ``session_not_found``."""
    import msgspec

    from agent_bridge.errors import BridgeError
    from agent_bridge.wire.script import decode_script

    record = await history.load_session(session_id)
    if record is None:
        raise BridgeError("session_not_found")
    last = record.last_sequence
    envelopes: list[dict[str, Any]] = []
    raws: dict[int, tuple[list[tuple[int, int]], Any]] = {}
    for lo in range(1, last + 1, _PAGE):
        hi = min(last, lo + _PAGE - 1)
        bodies = await history.read_events(session_id, lo, hi)
        envelopes.extend(msgspec.json.decode(b) for b in bodies)
        for raw in await history.read_raw(session_id, lo, hi):
            value: Any = raw.text if raw.record is None else msgspec.json.decode(bytes(raw.record))
            spans, _ = raws.setdefault(raw.raw_id, ([], value))
            spans.extend(raw.spans)
    envelopes.sort(key=lambda e: int(e["sequence"]))
    script = script_from_events(
        envelopes,
        raws,
        provider=record.provider_id,
        session_id=session_id,
        recorded_at=recorded_at,
        provider_version=record.provider_version or None,
    )
    decode_script(script)  # what we write must replay
    return script


def add_parsers(sub: Any) -> None:
    """Add ``record`` to the subcommand parsers ``sub``."""
    rec = sub.add_parser(
        "record",
        help="turn a journaled session into a scripted-provider script",
        description="Write the journaled session SESSION_ID as a script the scripted "
        "provider replays (a cassette; see docs/testing-hosts.md): "
        'session/create {"provider": "scripted", "options": {"script": FILE}}.',
        epilog="example: agent-bridge record ses_7b0f6b51000001 --out cassette.json; "
        "replay: agent-bridge exec --provider scripted --option script=cassette.json PROMPT",
    )
    rec.add_argument(
        "session_id",
        metavar="SESSION_ID",
        help="the journaled session to record (exec prints its id on stderr; "
        "session/list lists them)",
    )
    rec.add_argument(
        "--out",
        default="-",
        metavar="FILE",
        help="where to write the script (default: stdout)",
    )
    rec.add_argument("--state-dir", metavar="DIR", help="the journal (as for serve)")


def run(args: argparse.Namespace) -> int:
    """Run ``record``: write the script of ``args.session_id`` to ``args.out`` (``-``, the
    default: stdout); return
    the exit status (1 for a journal that cannot be read, 2 for ``:memory:``, 6 for an
    unknown session, or a state directory with no journal, which is left uncreated)."""
    import json
    import os

    import anyio

    from agent_bridge.commands import boot
    from agent_bridge.errors import BridgeError
    from agent_bridge.ids import Clock
    from agent_bridge.journal import MemoryHistory
    from agent_bridge.journal.paths import JOURNAL_FILE, MEMORY, resolve_state_dir

    directory = resolve_state_dir(args.state_dir)
    journal = os.path.join(directory, JOURNAL_FILE)
    if directory != MEMORY and not os.path.exists(journal):
        # a read: never create a journal (a mistyped --state-dir) only to find it empty
        sys.stderr.write(_not_found(f"none in {directory}"))
        return 6
    history = boot.open_journal("agent-bridge record", args.state_dir)
    if history is None:
        return 1
    if isinstance(history, MemoryHistory):
        sys.stderr.write("agent-bridge record: a ':memory:' state directory keeps no sessions\n")
        return 2

    async def main() -> dict[str, Any]:
        try:
            return await record_session(history, args.session_id, Clock().now_iso())
        finally:
            await history.aclose()

    try:
        script = anyio.run(main)
    except BridgeError as exc:
        if exc.error_code == "session_not_found":
            sys.stderr.write(_not_found(journal))
            return 6
        sys.stderr.write(f"agent-bridge record: {exc.error_code}: {exc.info.message}\n")
        return 1
    text = json.dumps(script, ensure_ascii=False, indent=1) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0


def _not_found(journal: str) -> str:
    """What ``record`` says for a session its journal does not hold: where it looked,
    and that the journal is the one of the session's ``--state-dir``."""
    from agent_bridge.commands import boot

    return boot.describe_error(
        "record",
        "session_not_found",
        "no session with this id",
        {
            "journal": journal,
            "nextStep": "pass the --state-dir that exec or serve used for this session "
            "(record reads the same default journal as they do)",
        },
    )
