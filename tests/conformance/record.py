"""Record the conformance corpus and the examples of ``docs/protocol.md`` from a real bridge.

    .venv/bin/python tests/conformance/record.py            # corpus + doc examples
    .venv/bin/python tests/conformance/record.py --corpus   # only tests/conformance/*.jsonl
    .venv/bin/python tests/conformance/record.py --docs     # only the doc examples
    .venv/bin/python tests/conformance/record.py --list

Each scenario below drives ``python -m agent_bridge serve`` over real pipes (newline framing) the
way a host would: it sends a message, then collects what the bridge sends until the
scenario's condition holds and the bridge has been quiet for a moment.  The exchange is
then normalised (volatile ids and timestamps become placeholders, see ``README.md``) and
written as ``tests/conformance/<name>.jsonl`` and/or as the body of the fenced block
```` ```jsonl title="example: <name>" ```` in ``docs/protocol.md`` (only the block's body is
replaced; the prose around it is left alone, and a block the document does not have yet is
reported, not invented).  Nothing here is written by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.replay import (
    CORPUS_DIR,
    DOC_PATH,
    ID_KEYS,
    TIME_KEYS,
    TIMESTAMP,
    BridgeProcess,
    handshake_messages,
)

QUIET = 0.15
_UNSET: Any = object()

Predicate = Callable[[list[Any]], bool]


# --------------------------------------------------------------------- the recorder


class Recorder:
    """Drives one bridge (or several, across ``restart``) and records every line."""

    def __init__(self, args: tuple[str, ...] = ()) -> None:
        self.args = args
        # one journal for the whole scenario, kept across restarts
        self.state_dir = tempfile.mkdtemp(prefix="bridge-record-")
        self.bridge = BridgeProcess("newline", args, self.state_dir)
        self.lines: list[dict[str, Any]] = []
        self.next_id = 1
        #: what the bridge sent in answer to the last :meth:`request`.
        self.last: list[Any] = []

    # -- low level

    def _collect(self, until: Predicate | None, quiet: float) -> list[Any]:
        got: list[Any] = []
        deadline = time.monotonic() + 10
        while until is not None and not until(got):
            message = self.bridge.recv(deadline)
            if message is None:
                raise RuntimeError(f"bridge closed while waiting; got {got}")
            got.append(message)
        while True:
            try:
                message = self.bridge.recv(time.monotonic() + quiet)
            except TimeoutError:
                break
            if message is None:
                break
            got.append(message)
        for message in got:
            self.lines.append({"dir": "recv", "msg": message})
        return got

    def send(
        self,
        message: Any,
        *,
        invalid: bool = False,
        until: Predicate | None = None,
        quiet: float = QUIET,
    ) -> list[Any]:
        """Send ``message``; return what the bridge sent until ``until`` and quiet."""
        line: dict[str, Any] = {"dir": "send", "msg": message}
        if invalid:
            line["invalid"] = True
        self.lines.append(line)
        self.bridge.send(message)
        return self._collect(until, quiet)

    def raw(self, text: str, *, until: Predicate | None = None) -> list[Any]:
        """Send raw text as one frame."""
        self.lines.append({"dir": "send", "raw": text})
        self.bridge.send_bytes(text.encode())
        return self._collect(until, QUIET)

    def comment(self, text: str) -> None:
        """A comment line (``#`` in the docs)."""
        self.lines.append({"dir": "comment", "text": text})

    # -- conveniences

    def request(
        self,
        method: str,
        params: Any = _UNSET,
        *,
        invalid: bool = False,
        until: Predicate | None = None,
        quiet: float = QUIET,
    ) -> dict[str, Any]:
        """Send a request with the next id; return the bridge's response to it."""
        ident = self.next_id
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not _UNSET:
            message["params"] = params

        def done(got: list[Any]) -> bool:
            return response_to(got, ident) is not None and (until is None or until(got))

        got = self.send(message, invalid=invalid, until=done, quiet=quiet)
        response = response_to(got, ident)
        assert response is not None
        self.last = got
        return response

    def notify(
        self, method: str, params: Any = _UNSET, *, until: Predicate | None = None
    ) -> list[Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not _UNSET:
            message["params"] = params
        return self.send(message, until=until)

    def reply(
        self, request: dict[str, Any], result: Any, *, until: Predicate | None = None
    ) -> list[Any]:
        """Answer one of the bridge's requests."""
        return self.send({"jsonrpc": "2.0", "id": request["id"], "result": result}, until=until)

    def handshake(self, kinds: tuple[str, ...]) -> None:
        initialize, initialized = handshake_messages(kinds)
        self.send(initialize, until=lambda got: response_to(got, 0) is not None)
        self.send(initialized)

    def restart(self) -> None:
        """End this bridge (EOF) and start a fresh one."""
        leftovers, code = self.bridge.finish()
        self.bridge.kill()
        assert not leftovers and code == 0, (leftovers, code)
        self.lines.append({"dir": "restart"})
        self.bridge = BridgeProcess("newline", self.args, self.state_dir)

    def finish(self) -> None:
        leftovers, code = self.bridge.finish()
        assert not leftovers, leftovers
        assert code == 0, code


def response_to(got: list[Any], ident: int) -> dict[str, Any] | None:
    for message in got:
        if isinstance(message, dict) and message.get("id") == ident and "method" not in message:
            return message
    return None


def event(kind: str) -> Predicate:
    """Until an ``event`` notification with payload ``type`` ``kind`` arrived."""

    def check(got: list[Any]) -> bool:
        return any(
            isinstance(m, dict)
            and m.get("method") == "event"
            and m["params"]["payload"]["type"] == kind
            for m in got
        )

    return check


def request_of(got: list[Any], method: str) -> dict[str, Any]:
    for message in got:
        if isinstance(message, dict) and message.get("method") == method and "id" in message:
            return message
    raise AssertionError(f"no {method} request in {got}")


def asked(got: list[Any]) -> bool:
    """Until the bridge sent ``interaction/request``."""
    return any(isinstance(m, dict) and m.get("method") == "interaction/request" for m in got)


def interaction_id(got: list[Any]) -> str:
    for message in got:
        if isinstance(message, dict) and message.get("method") == "event":
            payload = message["params"]["payload"]
            if payload["type"] == "interaction.requested":
                return str(payload["interactionId"])
    raise AssertionError(f"no interaction.requested in {got}")


def both(*predicates: Predicate) -> Predicate:
    return lambda got: all(p(got) for p in predicates)


# --------------------------------------------------------------------- normalisation


def normalise(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace bridge-minted ids (learnt from what the bridge sent, in order of
    appearance) and timestamps by placeholders, in every line."""
    mapping: dict[str, str] = {}
    counters: dict[str, int] = {}

    def learn(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                kind = ID_KEYS.get(key)
                if kind is not None and isinstance(value, str) and value not in mapping:
                    counters[kind] = counters.get(kind, 0) + 1
                    mapping[value] = f"${kind}{counters[kind]}"
                learn(value)
        elif isinstance(node, list):
            for item in node:
                learn(item)

    def replace(node: Any, key: str | None = None) -> Any:
        if isinstance(node, str):
            if key in TIME_KEYS:
                return TIMESTAMP
            return mapping.get(node, node)
        if isinstance(node, dict):
            return {k: replace(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [replace(v, key) for v in node]
        return node

    out = []
    for line in lines:
        line = dict(line)
        if line["dir"] == "recv":
            learn(line["msg"])
        if "msg" in line:
            line["msg"] = replace(line["msg"])
        out.append(line)
    return out


# --------------------------------------------------------------------- scenarios


@dataclass
class Scenario:
    name: str
    fn: Callable[[Recorder], None]
    corpus: bool
    doc: bool
    handshake: tuple[str, ...] | None
    args: tuple[str, ...]
    description: str


SCENARIOS: dict[str, Scenario] = {}
ALL_KINDS = ("approval", "question", "questionSet")


def scenario(
    name: str,
    *,
    corpus: bool = True,
    doc: bool = False,
    handshake: tuple[str, ...] | None = ALL_KINDS,
    args: tuple[str, ...] = (),
) -> Callable[[Callable[[Recorder], None]], Callable[[Recorder], None]]:
    def register(fn: Callable[[Recorder], None]) -> Callable[[Recorder], None]:
        description = " ".join((fn.__doc__ or "").split())
        SCENARIOS[name] = Scenario(name, fn, corpus, doc, handshake, args, description)
        return fn

    return register


def create(rec: Recorder, script: Any, **extra: Any) -> str:
    response = rec.request(
        "session/create", {"provider": "scripted", "options": {"script": script}, **extra}
    )
    return str(response["result"]["session"]["sessionId"])


def start(
    rec: Recorder, session: str, text: str, *, until: Predicate | None = None, **extra: Any
) -> str:
    response = rec.request(
        "run/start", {"sessionId": session, "input": {"text": text}, **extra}, until=until
    )
    return str(response["result"]["runId"])


# -- lifecycle


@scenario("lifecycle", doc=True, handshake=None)
def lifecycle(rec: Recorder) -> None:
    """initialize (unknown capabilities are ignored, experimental names the bridge does not
    have are not granted), initialized, bridge/ping, shutdown (after which only exit is
    accepted), exit."""
    rec.request(
        "initialize",
        {
            "protocolVersion": 1,
            "clientInfo": {"name": "my-editor", "version": "2.3.0"},
            "capabilities": {
                "interactions": {"approval": True, "question": True, "questionSet": False},
                "experimental": ["someFutureMethod"],
                "someFutureCapability": {"enabled": True},
            },
        },
    )
    rec.notify("initialized")
    rec.request("bridge/ping", {"data": {"hello": "world"}})
    rec.request("shutdown")
    rec.request("bridge/ping", {})
    rec.notify("exit")


@scenario("version_negotiation", doc=True, handshake=None)
def version_negotiation(rec: Recorder) -> None:
    """A protocol version the bridge does not speak is refused, naming the supported ones;
    the host may then initialize with one of them."""
    rec.request("initialize", {"protocolVersion": 2, "clientInfo": {"name": "future-host"}})
    rec.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "future-host"}})
    rec.notify("initialized")


@scenario("error_not_initialized", doc=True, handshake=None)
def error_not_initialized(rec: Recorder) -> None:
    """Requests before initialize are refused with -32002 (any method, known or not);
    initialize twice is already_initialized."""
    rec.request("session/list", {})
    rec.request("no/such/method", {}, invalid=True)
    rec.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "eager-host"}})
    rec.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "eager-host"}})


@scenario("providers_list", doc=True)
def providers_list(rec: Recorder) -> None:
    """providers/list: descriptors with capabilities, options and (probed) availability."""
    rec.request("providers/list", {})


@scenario("provider_sessions", doc=True)
def provider_sessions(rec: Recorder) -> None:
    """provider/sessions/list, read and continue: a provider that cannot answers
    unsupported; a workspace without sessions of the provider's own is an empty page; a
    reference to no session is session_not_found."""
    rec.request("provider/sessions/list", {"provider": "scripted"})
    rec.request("provider/sessions/read", {"provider": "opencode", "sessionRef": "x"})
    rec.request(
        "provider/sessions/list",
        {"provider": "claude-code", "workspace": "/nonexistent/workspace", "limit": 10},
    )
    rec.request(
        "provider/sessions/continue",
        {
            "provider": "claude-code",
            "sessionRef": "-nonexistent-workspace/00000000-0000-0000-0000-000000000000",
        },
    )


#: A scripted provider session: its reference carries its records inline.
SCRIPTED_REF = (
    '[{"type":"run.started","input":"remember the word pelican"},'
    '{"type":"text.delta","text":"Noted: pelican."}]'
)


@scenario("provider_sessions_continue", doc=True)
def provider_sessions_continue(rec: Recorder) -> None:
    """provider/sessions/continue: the first call binds a bridge session and imports the
    earlier records (then session.imported); the next run continues; a second call
    returns the same session."""
    rec.request("provider/sessions/read", {"provider": "scripted", "sessionRef": SCRIPTED_REF})
    script = {
        "runs": [
            {"steps": [{"type": "text", "text": "Noted: pelican."}]},
            {"steps": [{"type": "text", "text": "The word was pelican."}]},
        ]
    }
    params = {"provider": "scripted", "sessionRef": SCRIPTED_REF, "options": {"script": script}}
    response = rec.request("provider/sessions/continue", params)
    session_id = response["result"]["session"]["sessionId"]
    rec.request("events/read", {"sessionId": session_id, "after": 0, "view": "raw"})
    start(rec, session_id, "what was the word?", until=event("run.completed"))
    rec.request("provider/sessions/continue", {"provider": "scripted", "sessionRef": SCRIPTED_REF})


# -- sessions and runs

STREAM_SCRIPT = {
    "steps": [
        {"type": "thinking", "text": "The user wants a file listing."},
        {
            "type": "plan",
            "steps": [{"text": "List files", "status": "inProgress"}, {"text": "Summarise"}],
        },
        {
            "type": "tool",
            "name": "Bash",
            "id": "call_1",
            "input": {"command": "ls"},
            "output": "README.md\nsrc\n",
            "exitCode": 0,
        },
        {"type": "text", "text": "There are two entries: README.md and src.", "chunks": 3},
        {
            "type": "usage",
            "contextTokens": 1200,
            "maxTokens": 200000,
            "inputTokens": 1200,
            "outputTokens": 80,
            "costUsd": 0.0042,
        },
    ]
}


@scenario("create_and_run", doc=True)
def create_and_run(rec: Recorder) -> None:
    """session/create, run/start returning at once, then the run's events streamed as
    `event` notifications (thinking, plan, tool activity, text deltas, usage) and the
    terminal run.completed."""
    session = create(rec, STREAM_SCRIPT, title="List files")
    start(rec, session, "What is in this directory?", until=event("run.completed"))


@scenario("run_failed", doc=True)
def run_failed(rec: Recorder) -> None:
    """A run that fails ends with run.failed carrying a classified ErrorInfo (retryable
    here); the session stays usable."""
    script = {
        "runs": [
            {
                "steps": [
                    {"type": "text", "text": "Calling the model..."},
                    {"type": "fail", "code": "provider_rate_limited"},
                ]
            },
            {"steps": [{"type": "echo"}]},
        ]
    }
    session = create(rec, script)
    start(rec, session, "Summarise the repo", until=event("run.failed"))
    start(rec, session, "Try again", until=event("run.completed"))


@scenario("limits", doc=True)
def limits(rec: Recorder) -> None:
    """A provider reports its limits (limits.updated), the run then hits one and ends
    run.failed with cause, reset time and retry hint; provider/limits reads the latest
    figures."""
    script = {
        "steps": [
            {
                "type": "emit",
                "payloads": [
                    {
                        "type": "limits.updated",
                        "meters": [
                            {
                                "pool": "codex",
                                "meter": "primary",
                                "percent": 100,
                                "windowSeconds": 18000,
                                "resetsAt": "2026-12-02T05:00:00Z",
                                "status": "exhausted",
                            },
                            {
                                "pool": "codex",
                                "meter": "secondary",
                                "percent": 41.5,
                                "windowSeconds": 604800,
                                "resetsAt": "2026-12-08T00:00:00Z",
                                "status": "ok",
                            },
                        ],
                    }
                ],
            },
            {
                "type": "fail",
                "code": "provider_rate_limited",
                "details": {"cause": "quota_exhausted", "resetsAt": "2026-12-02T05:00:00Z"},
            },
        ]
    }
    session = create(rec, script)
    start(rec, session, "Refactor the parser", until=event("run.failed"))
    rec.request("provider/limits", {"provider": "scripted"})


@scenario("sessions", doc=True)
def sessions(rec: Recorder) -> None:
    """session/list (newest first), events/read paging, session/close (interrupts the active
    run, then session.closed) and what a closed session answers."""
    first = create(rec, {"steps": [{"type": "echo"}]}, title="first")
    start(rec, first, "hi", until=event("run.completed"))
    second = create(rec, {"steps": [{"type": "waitForInterrupt"}]}, title="second")
    start(rec, second, "wait", until=event("run.started"))
    rec.request("session/list", {})
    rec.request("events/read", {"sessionId": first, "after": 0, "limit": 2})
    rec.request("events/read", {"sessionId": first, "after": 2})
    rec.request("session/close", {"sessionId": second}, until=event("session.closed"))
    rec.request("run/start", {"sessionId": second, "input": {"text": "again"}})
    rec.request("session/list", {"provider": "scripted", "limit": 1})


@scenario("create_and_run_streaming")
def create_and_run_streaming(rec: Recorder) -> None:
    """Create, run with every streamed payload kind, read the log back, close."""
    session = create(rec, STREAM_SCRIPT, title="List files")
    start(rec, session, "What is in this directory?", until=event("run.completed"))
    rec.request("events/read", {"sessionId": session})
    rec.request("session/close", {"sessionId": session}, until=event("session.closed"))
    rec.request("shutdown")
    rec.notify("exit")


@scenario("delete", doc=True)
def delete(rec: Recorder) -> None:
    """session/delete closes the session if it is open (session.closed), then deletes its
    history, command receipts and recovery record: afterwards the session is unknown."""
    session = create(rec, {"steps": [{"type": "echo"}]})
    start(rec, session, "hi", until=event("run.completed"))
    rec.request("session/delete", {"sessionId": session}, until=event("session.closed"))
    rec.request("events/read", {"sessionId": session})
    rec.request("session/list", {})


@scenario("fork", doc=True)
def fork(rec: Recorder) -> None:
    """session/fork on a provider whose descriptor has no capabilities.fork (the scripted
    one) is refused unsupported: the bridge never fakes a fork by replaying text.  An
    unknown session is session_not_found."""
    session = create(rec, {"steps": [{"type": "echo"}]})
    start(rec, session, "hi", until=event("run.completed"))
    rec.request("session/fork", {"sessionId": session, "atEvent": 3})
    rec.request("session/fork", {"sessionId": "ses_missing"})


@scenario("session_list_paging")
def session_list_paging(rec: Recorder) -> None:
    """session/list pages newest first with a cursor (nextCursor), and filters by provider."""
    for title in ("one", "two", "three"):
        create(rec, {"steps": [{"type": "echo"}]}, title=title)
    page = rec.request("session/list", {"limit": 2})
    rec.request("session/list", {"limit": 2, "cursor": page["result"]["nextCursor"]})
    rec.request("session/list", {"provider": "codex"})


@scenario("history", doc=True)
def history(rec: Recorder) -> None:
    """events/read pages a session's log backward (before), reads it as a settled
    projection (consecutive text deltas of a run folded into one event that keeps the last
    one's eventId and sequence and says foldedFrom), and with the raw provider records the
    events were projected from (view raw; the scripted provider's are its script steps)."""
    script = {
        "steps": [
            {"type": "text", "text": "Hello, world", "chunks": 3},
            {"type": "tool", "name": "Bash", "id": "call_1", "input": {"command": "ls"}},
        ]
    }
    session = create(rec, script)
    start(rec, session, "hi", until=event("run.completed"))
    rec.request("events/read", {"sessionId": session, "before": 5, "limit": 3})
    rec.request("events/read", {"sessionId": session, "projection": "settled"})
    rec.request("events/read", {"sessionId": session, "view": "raw", "after": 1, "limit": 4})


# -- interactions

APPROVAL_SCRIPT = {
    "steps": [
        {"type": "text", "text": "I need to run a command."},
        {
            "type": "approval",
            "title": "Run `rm -rf build`",
            "toolName": "Bash",
            "command": "rm -rf build",
            "input": {"command": "rm -rf build"},
            "modes": ["once", "session"],
            "onAllow": [
                {
                    "type": "tool",
                    "name": "Bash",
                    "id": "call_7",
                    "input": {"command": "rm -rf build"},
                },
                {"type": "text", "text": "Removed the build directory."},
            ],
            "onDeny": [{"type": "text", "text": "Understood, I left it alone."}],
        },
    ]
}


@scenario("approval_allow", doc=True, handshake=("approval",))
def approval_allow(rec: Recorder) -> None:
    """The bridge asks with a server→client interaction/request; the host's reply (an
    Answer) settles it and the run continues."""
    session = create(rec, APPROVAL_SCRIPT)
    start(rec, session, "Clean the build", until=asked)
    ask = request_of(rec.last, "interaction/request")
    rec.reply(
        ask,
        {"kind": "approval", "decision": "allow", "mode": "session"},
        until=event("run.completed"),
    )


@scenario("approval_deny", doc=True, handshake=("approval",))
def approval_deny(rec: Recorder) -> None:
    """The host answers with interaction/respond instead: the bridge withdraws its
    interaction/request with $/cancelRequest.  The same answer again is `duplicate`; a
    different one is interaction_already_settled."""
    session = create(rec, APPROVAL_SCRIPT)
    start(rec, session, "Clean the build", until=asked)
    interaction = interaction_id(rec.last)
    deny = {"kind": "approval", "decision": "deny"}
    rec.request(
        "interaction/respond",
        {"interactionId": interaction, "answer": deny},
        until=event("run.completed"),
    )
    rec.request("interaction/respond", {"interactionId": interaction, "answer": deny})
    rec.request(
        "interaction/respond",
        {"interactionId": interaction, "answer": {"kind": "approval", "decision": "allow"}},
    )


@scenario("approval_auto_deny", doc=True, handshake=())
def approval_auto_deny(rec: Recorder) -> None:
    """Fail closed: a host that did not declare the approval capability is never asked;
    the bridge denies at once (auto) and says so with a diagnostic."""
    session = create(rec, APPROVAL_SCRIPT)
    start(rec, session, "Clean the build", until=event("run.completed"))


QUESTION_SCRIPT = {
    "steps": [
        {
            "type": "question",
            "prompt": "Which test runner?",
            "choices": [
                {"id": "pytest", "label": "pytest"},
                {"id": "unittest", "label": "unittest"},
            ],
            "branches": {
                "pytest": [{"type": "text", "text": "Using pytest."}],
                "unittest": [{"type": "text", "text": "Using unittest."}],
            },
        }
    ]
}


@scenario("question_choice", doc=True, handshake=("question",))
def question_choice(rec: Recorder) -> None:
    """A question with choices: an answer that is not one of them is invalid_answer (and
    settles nothing); a valid reply to interaction/request settles it."""
    session = create(rec, QUESTION_SCRIPT)
    start(rec, session, "Set up tests", until=asked)
    ask = request_of(rec.last, "interaction/request")
    interaction = interaction_id(rec.last)
    rec.request(
        "interaction/respond",
        {"interactionId": interaction, "answer": {"kind": "question", "choice": "nose"}},
    )
    rec.reply(ask, {"kind": "question", "choice": "pytest"}, until=event("run.completed"))


@scenario("question_free_text", handshake=("question",))
def question_free_text(rec: Recorder) -> None:
    """A free-text question answered by replying to interaction/request."""
    session = create(rec, {"steps": [{"type": "question", "prompt": "Name the new module"}]})
    start(rec, session, "Create a module", until=asked)
    ask = request_of(rec.last, "interaction/request")
    rec.reply(ask, {"kind": "question", "text": "billing"}, until=event("run.completed"))


@scenario("question_set", doc=True, handshake=("questionSet",))
def question_set(rec: Recorder) -> None:
    """Several keyed questions answered at once; the answer must cover exactly the keys."""
    script = {
        "steps": [
            {
                "type": "questionSet",
                "title": "Project setup",
                "items": [
                    {"key": "name", "prompt": "Project name?"},
                    {
                        "key": "license",
                        "prompt": "License?",
                        "choices": [
                            {"id": "mit", "label": "MIT"},
                            {"id": "apache", "label": "Apache-2.0"},
                        ],
                    },
                ],
                "then": [{"type": "text", "text": "Project created."}],
            }
        ]
    }
    session = create(rec, script)
    start(rec, session, "New project", until=asked)
    interaction = interaction_id(rec.last)
    rec.request(
        "interaction/respond",
        {
            "interactionId": interaction,
            "answer": {"kind": "questionSet", "answers": {"name": "demo"}},
        },
    )
    rec.request(
        "interaction/respond",
        {
            "interactionId": interaction,
            "answer": {"kind": "questionSet", "answers": {"name": "demo", "license": "mit"}},
        },
        until=event("run.completed"),
    )


# -- interrupt and steer


@scenario("interrupt", doc=True)
def interrupt(rec: Recorder) -> None:
    """run/interrupt is acknowledged at once (state interrupting); the terminal
    run.interrupted event follows.  Interrupting it again is answered with its state;
    interrupting a run that completed is run_not_active."""
    script = {
        "runs": [
            {"steps": [{"type": "text", "text": "Working..."}, {"type": "waitForInterrupt"}]},
            {"steps": [{"type": "echo"}]},
        ]
    }
    session = create(rec, script)
    run = start(rec, session, "Do something long", until=event("text.delta"))
    rec.request("run/interrupt", {"runId": run}, until=event("run.interrupted"))
    rec.request("run/interrupt", {"runId": run})
    second = start(rec, session, "Something short", until=event("run.completed"))
    rec.request("run/interrupt", {"runId": second})


@scenario("interrupt_pending_interaction", doc=True, handshake=("approval",))
def interrupt_pending_interaction(rec: Recorder) -> None:
    """An interrupt cancels the run's pending interactions at once (interaction.settled
    cancelled, auto) and withdraws the interaction/request; the provider sees the interrupt,
    not a denial, so nothing more of the run follows (no "Not deploying.", no "Done.").  A
    late reply to the request is ignored and a late interaction/respond is
    interaction_already_settled."""
    script = {
        "steps": [
            {
                "type": "approval",
                "title": "Deploy to production",
                "onAllow": [{"type": "text", "text": "Deployed."}],
                "onDeny": [{"type": "text", "text": "Not deploying."}],
            },
            {"type": "text", "text": "Done."},
        ]
    }
    session = create(rec, script)
    run = start(rec, session, "Ship it", until=asked)
    ask = request_of(rec.last, "interaction/request")
    interaction = interaction_id(rec.last)
    rec.request("run/interrupt", {"runId": run}, until=event("run.interrupted"))
    rec.reply(ask, {"kind": "approval", "decision": "allow"})
    rec.request(
        "interaction/respond",
        {"interactionId": interaction, "answer": {"kind": "approval", "decision": "allow"}},
    )


@scenario("interrupt_forced", doc=True, args=("--interrupt-grace", "0.3"))
def interrupt_forced(rec: Recorder) -> None:
    """A provider that ignores the interrupt is stopped after the grace period (here
    `serve --interrupt-grace 0.3`): run.interrupted with forced: true.  The session
    survives; the next run resumes the provider session."""
    script = {
        "runs": [
            {"steps": [{"type": "waitForInterrupt", "ignoreInterrupt": True}]},
            {"steps": [{"type": "echo"}]},
        ]
    }
    session = create(rec, script)
    run = start(rec, session, "Hang", until=event("run.started"))
    rec.request(
        "run/interrupt", {"runId": run, "reason": "timeout"}, until=event("run.interrupted")
    )
    start(rec, session, "Still there?", until=event("run.completed"))


@scenario("steer", doc=True)
def steer(rec: Recorder) -> None:
    """run/steer gives an active run more input (the scripted provider echoes it)."""
    session = create(rec, {"steps": [{"type": "waitForInterrupt"}]})
    run = start(rec, session, "Refactor", until=event("run.started"))
    rec.request("run/steer", {"runId": run, "input": {"text": "keep the public API"}})
    rec.request("run/interrupt", {"runId": run}, until=event("run.interrupted"))
    rec.request("run/steer", {"runId": run, "input": {"text": "too late"}})


#: a 1x1 PNG, base64
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)


@scenario("run_input", doc=True)
def run_input(rec: Recorder) -> None:
    """run/start with content blocks: text, an inline image and an embedded resource reach
    the provider (the scripted received step replies with what arrived) and run.started
    records them (the image by its type, size and SHA-256).  A block the provider cannot
    take, and a path in a session without a workspace, are refused before anything
    starts, naming the block."""
    session = create(rec, {"steps": [{"type": "received"}]})
    content = [
        {"type": "text", "text": "What does this show?"},
        {"type": "image", "mimeType": "image/png", "data": PNG_1X1},
        {"type": "resource", "text": "x = 1", "uri": "untitled:1", "mimeType": "text/x-python"},
    ]
    rec.request(
        "run/start",
        {"sessionId": session, "input": {"content": content}},
        until=event("run.completed"),
    )
    bmp = {"type": "image", "mimeType": "image/bmp", "data": "Qk0="}
    rec.request("run/start", {"sessionId": session, "input": {"content": [bmp]}})
    mention = [{"type": "text", "text": "Explain"}, {"type": "file", "path": "src/main.py"}]
    rec.request("run/start", {"sessionId": session, "input": {"content": mention}})


@scenario("commands", doc=True)
def commands(rec: Recorder) -> None:
    """session/commands lists what the session's provider offers (the scripted provider:
    its script's commands); a command block invokes one (the received step replies
    with what arrived)."""
    script = {
        "commands": [
            {"name": "review", "description": "Review the current diff", "hint": "<focus>"}
        ],
        "steps": [{"type": "received"}],
    }
    session = create(rec, script)
    rec.request("session/commands", {"sessionId": session})
    command = {"type": "command", "name": "review", "arguments": "error handling"}
    rec.request(
        "run/start",
        {"sessionId": session, "input": {"content": [command]}},
        until=event("run.completed"),
    )
    # a run in which the provider's commands change (an emit step plays one)
    changed = {"type": "commands.updated", "commands": [{"name": "review"}, {"name": "test"}]}
    rec.request(
        "run/start",
        {
            "sessionId": session,
            "input": {"text": "Add a command file"},
            "options": {"script": {"steps": [{"type": "emit", "payloads": [changed]}]}},
        },
        until=event("run.completed"),
    )
    rec.request("session/commands", {"sessionId": session})


@scenario("settings", doc=True)
def settings(rec: Recorder) -> None:
    """session/settings reads the session's model and mode (the scripted provider: its
    script's settings); session/configure switches them between runs and every attached
    host gets settings.updated; a value the provider does not offer is invalid_params."""
    script = {
        "settings": {
            "model": {
                "current": "small",
                "available": [{"id": "small", "name": "Small"}, {"id": "large", "name": "Large"}],
            },
            "mode": {"current": "ask", "available": [{"id": "ask"}, {"id": "auto"}]},
        },
        "steps": [{"type": "text", "text": "Done."}],
    }
    session = create(rec, script)
    rec.request("session/settings", {"sessionId": session})
    rec.request(
        "session/configure",
        {"sessionId": session, "model": "large", "mode": "auto"},
        until=event("settings.updated"),
    )
    rec.request("session/configure", {"sessionId": session, "model": "huge"})


@scenario("blob_read", doc=True)
def blob_read(rec: Recorder) -> None:
    """blob/read returns the bytes the journal keeps for an image a run's input held,
    named by the SHA-256 its run.started record gives (base64, with the type its bytes
    show, the whole size and the piece's offset); a SHA-256 the journal does not hold is
    blob_not_found."""
    import base64
    import hashlib

    session = create(rec, {"steps": [{"type": "text", "text": "A small image."}]})
    image = {"type": "image", "mimeType": "image/png", "data": PNG_1X1}
    rec.request(
        "run/start",
        {"sessionId": session, "input": {"content": [image]}},
        until=event("run.completed"),
    )
    sha256 = hashlib.sha256(base64.b64decode(PNG_1X1)).hexdigest()
    rec.request("blob/read", {"sha256": sha256})
    rec.request("blob/read", {"sha256": sha256, "offset": 64, "length": 16})
    rec.request("blob/read", {"sha256": hashlib.sha256(b"never sent").hexdigest()})


# -- recovery


@scenario("resume", doc=True)
def resume(rec: Recorder) -> None:
    """session/export returns a recovery record; a fresh bridge process continues the
    provider session from it with session/resume (a new bridge session id)."""
    script = {
        "runs": [
            {"steps": [{"type": "text", "text": "First answer."}]},
            {"steps": [{"type": "text", "text": "Second answer, same conversation."}]},
        ]
    }
    session = create(rec, script)
    start(rec, session, "First question", until=event("run.completed"))
    record = rec.request("session/export", {"sessionId": session})["result"]["record"]
    rec.restart()
    rec.handshake(ALL_KINDS)
    resumed = rec.request("session/resume", {"record": record, "title": "resumed"})
    start(
        rec,
        resumed["result"]["session"]["sessionId"],
        "Second question",
        until=event("run.completed"),
    )


@scenario("resume_by_id", doc=True)
def resume_by_id(rec: Recorder) -> None:
    """With a journal (the default) sessions outlive the bridge process: after a restart
    session/list still has the session (closed at the shutdown), session/resume
    {sessionId} reopens it under the same id, replays what came after `after`
    (session.closed, then session.resumed: the sequence continues), and the provider's
    conversation goes on."""
    script = {
        "runs": [
            {"steps": [{"type": "text", "text": "First answer."}]},
            {"steps": [{"type": "text", "text": "Second answer, same conversation."}]},
        ]
    }
    session = create(rec, script)
    start(rec, session, "First question", until=event("run.completed"))
    rec.restart()
    rec.handshake(ALL_KINDS)
    rec.request("session/list", {})
    rec.request(
        "session/resume", {"sessionId": session, "after": 3}, until=event("session.resumed")
    )
    start(rec, session, "Second question", until=event("run.completed"))


@scenario("attach", doc=True, handshake=("approval",))
def attach(rec: Recorder) -> None:
    """session/attach: a host that lost its view (a reloaded window, say) gets the events
    after the last sequence it saw, then the live ones with no gap and no duplicate, and
    each pending interaction is asked again under its original interactionId.  Answering
    one request settles it; the bridge withdraws the other ($/cancelRequest)."""
    session = create(rec, APPROVAL_SCRIPT)
    start(rec, session, "Clean the build", until=asked)
    rec.request("session/attach", {"sessionId": session, "after": 1}, until=asked)
    ask = request_of(rec.last, "interaction/request")
    rec.reply(ask, {"kind": "approval", "decision": "deny"}, until=event("run.completed"))


@scenario("command_receipt_after_restart")
def command_receipt_after_restart(rec: Recorder) -> None:
    """Command receipts are journaled: after a restart the same commandId and payload
    still answer the first run (duplicate: true); another payload is command_conflict."""
    session = create(rec, {"steps": [{"type": "echo"}]})
    start(rec, session, "once", until=event("run.completed"), commandId="cmd-7")
    rec.restart()
    rec.handshake(ALL_KINDS)
    params = {"sessionId": session, "input": {"text": "once"}, "commandId": "cmd-7"}
    rec.request("run/start", params)
    rec.request("run/start", {**params, "input": {"text": "other"}})


# -- errors


@scenario("errors", doc=True, corpus=False)
def errors(rec: Recorder) -> None:
    """Malformed JSON, an invalid request, an unknown method, invalid params and a
    classified bridge error."""
    rec.raw('{"jsonrpc": "2.0", "id": 1, "method": "session/list"')
    rec.send({"jsonrpc": "1.0", "id": 2, "method": "session/list"}, invalid=True)
    rec.next_id = 3
    rec.request("session/rename", {"sessionId": "ses_x"}, invalid=True)
    rec.request("session/create", {"provider": 42}, invalid=True)
    rec.request("session/create", {"provider": "no-such-provider"})


@scenario("error_framing_and_envelope")
def error_framing_and_envelope(rec: Recorder) -> None:
    """Malformed JSON (-32700, id null) and envelopes that are not JSON-RPC 2.0 (-32600)."""
    rec.raw('{"jsonrpc": "2.0", "id": 1, "method": "session/list"')
    rec.send({"jsonrpc": "1.0", "id": 2, "method": "session/list"}, invalid=True)
    rec.send({"jsonrpc": "2.0", "id": 3.5, "method": "session/list"}, invalid=True)


@scenario("error_unknown_method")
def error_unknown_method(rec: Recorder) -> None:
    """An unknown method is -32601; so is a bridge->host method sent by the host."""
    rec.request("session/rename", {"sessionId": "ses_x"}, invalid=True)
    rec.request("event", {}, invalid=True)


@scenario("error_invalid_params")
def error_invalid_params(rec: Recorder) -> None:
    """Params that do not decode into the method's params type are -32602 with data.path:
    a wrong type, a missing member, an unknown member, a bad answer kind."""
    rec.request("session/create", {"provider": 42}, invalid=True)
    rec.request("run/start", {"sessionId": "ses_x"}, invalid=True)
    rec.request("session/list", {"limit": 5, "colour": "blue"}, invalid=True)
    rec.request(
        "interaction/respond",
        {"interactionId": "int_x", "answer": {"kind": "vote", "value": 1}},
        invalid=True,
    )
    rec.request("events/read", ["ses_x"], invalid=True)


@scenario("error_session_not_found")
def error_session_not_found(rec: Recorder) -> None:
    """Unknown session, run and interaction ids, and an unknown provider."""
    rec.request("run/start", {"sessionId": "ses_missing", "input": {"text": "hi"}})
    rec.request("session/close", {"sessionId": "ses_missing"})
    rec.request("events/read", {"sessionId": "ses_missing"})
    rec.request("run/interrupt", {"runId": "run_missing"})
    rec.request(
        "interaction/respond",
        {"interactionId": "int_missing", "answer": {"kind": "approval", "decision": "allow"}},
    )
    rec.request("session/create", {"provider": "no-such-provider"})
    rec.request("session/create", {"provider": "scripted", "options": {"colour": "blue"}})


@scenario("error_run_active")
def error_run_active(rec: Recorder) -> None:
    """A second run/start while a run is active is run_active (retryable)."""
    session = create(rec, {"steps": [{"type": "waitForInterrupt"}]})
    run = start(rec, session, "first", until=event("run.started"))
    rec.request("run/start", {"sessionId": session, "input": {"text": "second"}})
    rec.request("run/interrupt", {"runId": run}, until=event("run.interrupted"))
    start(rec, session, "third", until=event("run.started"))
    rec.request("session/close", {"sessionId": session}, until=event("session.closed"))


@scenario("error_interaction_already_settled", handshake=("approval",))
def error_interaction_already_settled(rec: Recorder) -> None:
    """The reply to interaction/request settles the interaction; a different answer by
    interaction/respond afterwards is interaction_already_settled (the same one again would
    be `duplicate`)."""
    session = create(rec, APPROVAL_SCRIPT)
    start(rec, session, "Clean the build", until=asked)
    ask = request_of(rec.last, "interaction/request")
    interaction = interaction_id(rec.last)
    rec.reply(ask, {"kind": "approval", "decision": "allow"}, until=event("run.completed"))
    rec.request(
        "interaction/respond",
        {"interactionId": interaction, "answer": {"kind": "approval", "decision": "deny"}},
    )
    rec.request(
        "interaction/respond",
        {"interactionId": interaction, "answer": {"kind": "approval", "decision": "allow"}},
    )


@scenario("error_command_conflict")
def error_command_conflict(rec: Recorder) -> None:
    """commandId makes run/start idempotent: the same payload again returns the first run
    (duplicate: true) without starting another; another payload is command_conflict."""
    session = create(rec, {"steps": [{"type": "echo"}]})
    start(rec, session, "once", until=event("run.completed"), commandId="cmd-1")
    rec.request(
        "run/start", {"sessionId": session, "input": {"text": "once"}, "commandId": "cmd-1"}
    )
    rec.request(
        "run/start", {"sessionId": session, "input": {"text": "twice"}, "commandId": "cmd-1"}
    )


# --------------------------------------------------------------------- writers


def record(s: Scenario) -> list[dict[str, Any]]:
    rec = Recorder(s.args)
    try:
        if s.handshake is not None:
            rec.handshake(s.handshake)
        s.fn(rec)
        rec.finish()
    finally:
        rec.bridge.kill()
        shutil.rmtree(rec.state_dir, ignore_errors=True)
    return normalise(rec.lines)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def corpus_text(s: Scenario, lines: list[dict[str, Any]]) -> str:
    meta: dict[str, Any] = {"dir": "meta", "description": s.description}
    if s.args:
        meta["args"] = list(s.args)
    out = [_dumps(meta)]
    out += [_dumps(line) for line in lines]
    return "\n".join(out) + "\n"


def doc_body(s: Scenario, lines: list[dict[str, Any]]) -> list[str]:
    if s.handshake is not None:
        lines = lines[3:]  # initialize, its response, initialized: hidden
    out = []
    for line in lines:
        if line["dir"] == "comment":
            out.append("# " + line["text"])
        elif line["dir"] == "restart":
            out.append("! restart")
        elif "raw" in line:
            out.append(">~ " + line["raw"])
        elif line["dir"] == "send":
            out.append((">! " if line.get("invalid") else "> ") + _dumps(line["msg"]))
        else:
            out.append("< " + _dumps(line["msg"]))
    return out


def doc_fence(s: Scenario) -> str:
    attrs = [f'title="example: {s.name}"']
    if s.handshake is not None:
        attrs.append(f'handshake="{",".join(s.handshake)}"')
    if s.args:
        attrs.append(f'args="{" ".join(s.args)}"')
    return "```jsonl " + " ".join(attrs)


def update_doc(text: str, bodies: dict[str, tuple[str, list[str]]]) -> tuple[str, list[str]]:
    """Replace the body (and fence line) of each example block found in ``text``."""
    lines = text.splitlines()
    out: list[str] = []
    found: set[str] = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        match = re.match(r'^```jsonl\s+.*title="example: ([^"]+)"', line)
        if match is None or match.group(1) not in bodies:
            out.append(line)
            i += 1
            continue
        name = match.group(1)
        fence, body = bodies[name]
        found.add(name)
        out.append(fence)
        out += body
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        out.append("```")
        i += 1
    missing = sorted(set(bodies) - found)
    return "\n".join(out) + "\n", missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="store_true", help="only the corpus")
    parser.add_argument("--docs", action="store_true", help="only the doc examples")
    parser.add_argument("--list", action="store_true", help="list the scenarios")
    parser.add_argument("names", nargs="*", help="only these scenarios")
    args = parser.parse_args(argv)
    if args.list:
        for s in SCENARIOS.values():
            where = ", ".join(w for w, on in (("corpus", s.corpus), ("doc", s.doc)) if on)
            print(f"{s.name:36} {where:12} {s.description}")
        return 0
    do_corpus = args.corpus or not args.docs
    do_docs = args.docs or not args.corpus
    chosen = [s for s in SCENARIOS.values() if not args.names or s.name in args.names]
    bodies: dict[str, tuple[str, list[str]]] = {}
    for s in chosen:
        if not ((s.corpus and do_corpus) or (s.doc and do_docs)):
            continue
        print(f"recording {s.name}", file=sys.stderr)
        lines = record(s)
        if s.corpus and do_corpus:
            (CORPUS_DIR / f"{s.name}.jsonl").write_text(corpus_text(s, lines), "utf-8")
        if s.doc and do_docs:
            bodies[s.name] = (doc_fence(s), doc_body(s, lines))
    if bodies:
        text, missing = update_doc(DOC_PATH.read_text("utf-8"), bodies)
        DOC_PATH.write_text(text, "utf-8")
        for name in missing:
            print(
                f"docs/protocol.md has no block for example {name}; add:\n{bodies[name][0]}\n```",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
