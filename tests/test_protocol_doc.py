"""``docs/protocol.md`` is true: its examples are replayed against real bridges.

Every fenced block ```` ```jsonl title="example: NAME" ```` is a transcript recorded by
``tests/conformance/record.py``; each is replayed against a fresh ``python -m agent_bridge
serve`` over pipes (host lines sent, bridge lines compared, volatile ids and timestamps
matched through placeholders, every message validated against ``schemas/``).  The
document must also show every method and every event payload type, and its error table
must agree with ``schemas/methods.json``.
"""

from __future__ import annotations

import copy
import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conformance import record
from conformance.replay import DOC_PATH, Step, Transcript, parse_doc_examples, replay
from wire_validation import load_contract

DOC = DOC_PATH.read_text("utf-8")
EXAMPLES = parse_doc_examples(DOC)
BY_NAME = {t.name: t for t in EXAMPLES}


def _run(transcript: Transcript) -> BaseException | None:
    try:
        replay(transcript, "newline")
    except BaseException as exc:  # reported by the test of this example
        return exc
    return None


@pytest.fixture(scope="module")
def outcomes() -> dict[str, BaseException | None]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(BY_NAME, pool.map(_run, EXAMPLES), strict=True))


@pytest.mark.parametrize("name", list(BY_NAME))
def test_example_replays(name: str, outcomes: dict[str, BaseException | None]) -> None:
    error = outcomes[name]
    if error is not None:
        raise error


def test_examples_are_unique_and_recorded() -> None:
    names = [t.name for t in EXAMPLES]
    assert len(names) == len(set(names)), "two examples share a title"
    recorded = {s.name for s in record.SCENARIOS.values() if s.doc}
    assert set(names) == recorded, (
        "docs/protocol.md and tests/conformance/record.py disagree on the examples: "
        f"only in the doc {sorted(set(names) - recorded)}, only recorded "
        f"{sorted(recorded - set(names))}; run tests/conformance/record.py --docs"
    )


def _messages(direction: str) -> list[Any]:
    return [s.msg for t in EXAMPLES for s in t.steps if s.dir == direction and s.msg is not None]


def test_every_method_has_an_example() -> None:
    contract = load_contract()
    sent = {m["method"] for m in _messages("send") if isinstance(m, dict) and "method" in m}
    received = {m["method"] for m in _messages("recv") if isinstance(m, dict) and "method" in m}
    shown = {"host->bridge": sent, "bridge->host": received, "both": sent | received}
    # journal/status needs a failing disk: described in prose, driven on a real full
    # filesystem by tests/hardening/test_hard_storage.py
    unrecordable = {"journal/status"}
    missing = [
        name
        for name, spec in contract.methods.items()
        if name not in shown[spec.direction] and name not in unrecordable
    ]
    assert not missing, f"methods without an example in docs/protocol.md: {missing}"
    # and every request shown is answered in its example
    for transcript in EXAMPLES:
        asked = {
            m["id"]
            for s in transcript.steps
            if s.dir == "send" and isinstance(s.msg, dict) and "method" in s.msg and "id" in s.msg
            for m in [s.msg]
        }
        answered = {
            s.msg["id"]
            for s in transcript.steps
            if s.dir == "recv" and isinstance(s.msg, dict) and "method" not in s.msg
        }
        assert asked <= answered, f"{transcript.name}: requests never answered: {asked - answered}"


def test_the_method_index_lists_every_method() -> None:
    """The table a host developer reads first: no published method left out of it."""
    doc = DOC_PATH.read_text("utf-8")
    index = doc[doc.index("\n## Method index\n") :]
    listed = set(re.findall(r"^\| `([^`]+)` \|", index, re.M))
    missing = sorted(set(load_contract().methods) - listed)
    assert not missing, f"docs/protocol.md's Method index lacks {missing}"


def test_every_event_payload_has_an_example() -> None:
    contract = load_contract()
    union = contract.schema["$defs"]["EventPayload"]["oneOf"]
    types = {
        contract.schema["$defs"][m["$ref"].rsplit("/", 1)[1]]["properties"]["type"]["const"]
        for m in union
    }
    shown = {
        m["params"]["payload"]["type"]
        for m in _messages("recv")
        if isinstance(m, dict) and m.get("method") == "event"
    }
    assert types <= shown, f"event payloads without an example: {sorted(types - shown)}"


def test_error_tables_match_the_published_codes() -> None:
    methods = json.loads((DOC_PATH.parent.parent / "schemas" / "methods.json").read_text("utf-8"))
    block = DOC.split("<!-- error-codes:", 1)[1].split("<!-- /error-codes -->", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| (-\d+) \| (yes|no) \| (.+?) \|$", block, re.M)
    table = {code: (int(rpc), flag == "yes", message) for code, rpc, flag, message in rows}
    published = {
        code: (spec["jsonRpcCode"], spec["retryable"], spec["message"])
        for code, spec in methods["errorCodes"].items()
    }
    assert table == published, "the error-code table in docs/protocol.md is out of date"
    rpc_rows = set(re.findall(r"^\| (-32\d\d\d) \| ", DOC, re.M))
    assert {str(e["code"]) for e in methods["jsonRpcErrors"]} == rpc_rows


# ----------------------------------------------------------------------- the check has teeth


def _mutated(name: str, mutate: Any) -> Transcript:
    original = BY_NAME[name]
    steps = [Step(s.dir, copy.deepcopy(s.msg), s.raw, s.invalid) for s in original.steps]
    mutate(steps)
    return Transcript(original.name + "-mutated", steps, original.args, source=original.source)


def _last_event(steps: list[Step]) -> Step:
    return [s for s in steps if s.dir == "recv" and s.msg.get("method") == "event"][-1]


def _change_text(steps: list[Step]) -> None:
    _last_event(steps).msg["params"]["payload"]["stopReason"] = "max_tokens"


def _swap_identity(steps: list[Step]) -> None:
    _last_event(steps).msg["params"]["eventId"] = "$event1"  # already bound to another event


def _drop_line(steps: list[Step]) -> None:
    steps.remove(_last_event(steps))


def _extra_line(steps: list[Step]) -> None:
    steps.append(Step("recv", {"jsonrpc": "2.0", "method": "event", "params": {}}))


@pytest.mark.parametrize("mutate", [_change_text, _swap_identity, _drop_line, _extra_line])
def test_a_wrong_example_fails(mutate: Any) -> None:
    with pytest.raises(AssertionError):
        replay(_mutated("create_and_run", mutate), "newline", timeout=1.0)
