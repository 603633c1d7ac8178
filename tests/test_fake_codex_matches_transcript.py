"""The fake `codex app-server` (tests/standins/fake_codex.py) must look like the real
one, or tests built on it prove nothing.

tests/data/codex/ holds wire transcripts of the real `codex app-server` 0.171.0
(one JSON object a line: {"dir": "->" | "<-" | "stderr" | "note", "t", "msg"}):

- appserver_reference.jsonl: the essential lines of the transcript the project was
  started from (handshake, a text turn, approval accept and decline, interrupt).
- appserver_scenarios.jsonl: a capture made for the Codex adapter, in sections
  marked by "note" lines (text turn, accept / decline / cancel, interrupt during a
  stream and during a pending approval, steer, turn/start during a turn, a failed
  turn, error replies, resume in a fresh process).

These tests drive the fake through the same client messages and compare, for each
kind of message, the method names and the key sets of params / results (and of the
nested item, turn and thread objects), and for each scenario the order of the
messages that matter to an adapter.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "standins" / "fake_codex.py"
DATA = ROOT / "tests" / "data" / "codex"

Msg = dict[str, Any]

# Sent by the real server but not part of what an adapter acts on, or timing-dependent.
NOISE = {
    "item/agentMessage/delta",
    "thread/tokenUsage/updated",
    "account/rateLimits/updated",
    "warning",
    "configWarning",
    "remoteControl/status/changed",
    "thread/goal/cleared",
    "deprecationNotice",
}


# --------------------------------------------------------------------------- transcripts


def load(name: str) -> list[Msg]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def sections(lines: list[Msg]) -> dict[str, list[Msg]]:
    out: dict[str, list[Msg]] = {}
    current = "(start)"
    for line in lines:
        if line["dir"] == "note":
            current = line["msg"]
            out[current] = []
        else:
            out.setdefault(current, []).append(line)
    return out


def keys(obj: Any) -> tuple[str, ...] | str:
    return tuple(sorted(obj)) if isinstance(obj, dict) else type(obj).__name__


def classify(lines: list[Msg]) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Yield (kind, shape) for every JSON-RPC message in a transcript.

    kind names the message: direction, request/notification/result/error, method,
    and for item notifications the item type. shape holds the key sets of params or
    result and of the nested item / turn / thread objects."""
    methods: dict[Any, str] = {}  # request id -> method, per direction
    for line in lines:
        d, m = line["dir"], line["msg"]
        if d not in ("->", "<-") or not isinstance(m, dict):
            continue
        if "method" in m and "id" in m:
            methods[(d, m["id"])] = m["method"]
        if "method" in m:
            params = m.get("params")
            kind: tuple[str, ...] = (d, "request" if "id" in m else "notification", m["method"])
            body = params
        else:
            other = "<-" if d == "->" else "->"
            method = methods.get((other, m.get("id")), "?")
            kind = (d, "result" if "result" in m else "error", method)
            body = m.get("result", m.get("error"))
        shape: dict[str, Any] = {"body": keys(body) if body is not None else None}
        if isinstance(body, dict):
            for nested in ("item", "turn", "thread", "error", "tokenUsage"):
                if isinstance(body.get(nested), dict):
                    shape[nested] = keys(body[nested])
            if isinstance(body.get("item"), dict):
                kind = (*kind, body["item"].get("type", "?"))
        if kind[2] == "thread/status/changed" and isinstance(body, dict):
            kind = (*kind, body["status"].get("type", "?"))
        yield kind, shape


def shapes_of(lines: list[Msg]) -> dict[tuple[str, ...], dict[str, Any]]:
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for kind, shape in classify(lines):
        out.setdefault(kind, shape)
    return out


def flow(lines: list[Msg]) -> list[str]:
    """The order of the messages an adapter acts on, as short labels."""
    out: list[str] = []
    methods: dict[Any, str] = {}
    for line in lines:
        d, m = line["dir"], line["msg"]
        if d not in ("->", "<-") or not isinstance(m, dict):
            continue
        if "method" in m:
            if "id" in m:
                methods[(d, m["id"])] = m["method"]
            method = m["method"]
            if method in NOISE:
                continue
            p = m.get("params") or {}
            label = f"{d} {method}"
            if "item" in p:
                label += f" {p['item']['type']}"
                if method == "item/completed" and p["item"].get("status"):
                    label += f" {p['item']['status']}"
            if method == "turn/completed":
                label += f" {p['turn']['status']}"
            if method == "thread/status/changed":
                label += f" {p['status']['type']} {p['status'].get('activeFlags', '')}"
            out.append(label)
        else:
            other = "<-" if d == "->" else "->"
            method = methods.get((other, m.get("id")), "?")
            out.append(f"{d} {'result' if 'result' in m else 'error'} {method}")
    return out


# --------------------------------------------------------------------------- the fake


class FakeCodexProcess:
    """Drives tests/standins/fake_codex.py as a child process, recording a
    transcript in the same format as tests/data/codex/."""

    def __init__(self, home: Path, script: dict[str, Any] | None = None) -> None:
        home.mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "CODEX_HOME": str(home),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if script is not None:
            env["FAKE_CODEX_SCRIPT"] = json.dumps(script)
        self.proc = subprocess.Popen(
            [sys.executable, str(FAKE), "app-server", "-c", 'model_provider="stub"'],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(home),
        )
        self.lines: list[Msg] = []
        self.stderr: list[str] = []
        self.inbox: queue.Queue[Msg | None] = queue.Queue()
        self.next_id = 1
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                msg = {"_raw": raw.decode(errors="replace")}
            self.lines.append({"dir": "<-", "t": time.time(), "msg": msg})
            self.inbox.put(msg)
        self.inbox.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode(errors="replace").rstrip("\n"))

    def note(self, text: str) -> None:
        self.lines.append({"dir": "note", "t": time.time(), "msg": text})

    def send(self, msg: Msg) -> None:
        assert self.proc.stdin is not None
        self.lines.append({"dir": "->", "t": time.time(), "msg": msg})
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def send_request(self, method: str, params: dict[str, Any] | None = None) -> int:
        req_id = self.next_id
        self.next_id += 1
        msg: Msg = {"id": req_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return req_id

    def wait(self, pred: Callable[[Msg], bool], timeout: float = 10) -> Msg:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("fake_codex: expected message did not arrive")
            try:
                msg = self.inbox.get(timeout=left)
            except queue.Empty as e:
                raise TimeoutError("fake_codex: expected message did not arrive") from e
            if msg is None:
                raise EOFError("fake_codex closed stdout")
            if pred(msg):
                return msg

    def request(self, method: str, params: dict[str, Any] | None = None) -> Msg:
        req_id = self.send_request(method, params)
        return self.wait(lambda m: m.get("id") == req_id and "method" not in m)

    def wait_method(self, method: str, timeout: float = 10) -> Msg:
        return self.wait(lambda m: m.get("method") == method, timeout)

    def handshake(self) -> None:
        self.request(
            "initialize",
            {"clientInfo": {"name": "bridge_probe", "title": "Bridge probe", "version": "0.0.1"}},
        )
        self.send({"method": "initialized"})

    def turn(self, thread_id: str, text: str, decision: Any = None) -> Msg:
        self.send_request(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        )
        while True:
            msg = self.wait(
                lambda m: (
                    m.get("method") in ("turn/completed", "item/commandExecution/requestApproval")
                )
            )
            if msg["method"] == "turn/completed":
                return msg
            self.send({"id": msg["id"], "result": {"decision": decision}})

    def close(self, timeout: float = 10) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for t in self._threads:
                t.join(timeout=5)
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


@pytest.fixture
def fake_factory(tmp_path: Path) -> Iterator[Callable[..., FakeCodexProcess]]:
    made: list[FakeCodexProcess] = []

    def make(script: dict[str, Any] | None = None, home: Path | None = None) -> FakeCodexProcess:
        fake = FakeCodexProcess(home or tmp_path / "codex-home", script)
        made.append(fake)
        return fake

    yield make
    for fake in made:
        if fake.proc.poll() is None:
            fake.proc.kill()
        fake.close()


def run_scenarios(make: Callable[..., FakeCodexProcess], work: Path) -> list[Msg]:
    """The client side of appserver_scenarios.jsonl, against the fake."""
    c = make({"slow_delay": 0.2})
    c.note("handshake")
    c.handshake()
    c.wait_method("remoteControl/status/changed")
    c.note("account/read")
    c.request("account/read", {})
    c.note("thread/start")
    started = c.request(
        "thread/start",
        {"cwd": str(work), "approvalPolicy": "untrusted", "sandbox": "workspace-write"},
    )
    tid = started["result"]["thread"]["id"]
    c.wait_method("thread/started")
    c.note("text turn")
    c.turn(tid, "say hi")
    c.note("approval accept")
    c.turn(tid, "TOOL:touch approved.txt", "accept")
    c.note("approval decline")
    c.turn(tid, "TOOL:touch declined.txt", "decline")
    c.note("approval cancel")
    c.turn(tid, "TOOL:touch cancelled.txt", "cancel")

    c.note("interrupt during slow stream")
    r = c.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "SLOW"}]})
    turn_id = r["result"]["turn"]["id"]
    c.wait_method("item/agentMessage/delta")
    c.wait_method("item/agentMessage/delta")
    c.send_request("turn/interrupt", {"threadId": tid, "turnId": turn_id})
    c.wait_method("turn/completed")

    c.note("interrupt while an approval is pending")
    r = c.request(
        "turn/start",
        {"threadId": tid, "input": [{"type": "text", "text": "TOOL:touch pending.txt"}]},
    )
    turn_id = r["result"]["turn"]["id"]
    c.wait_method("item/commandExecution/requestApproval")
    c.send_request("turn/interrupt", {"threadId": tid, "turnId": turn_id})
    c.wait_method("serverRequest/resolved")

    c.note("steer during slow stream")
    r = c.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "SLOW"}]})
    turn_id = r["result"]["turn"]["id"]
    c.wait_method("item/agentMessage/delta")
    c.send_request(
        "turn/steer",
        {
            "threadId": tid,
            "expectedTurnId": turn_id,
            "input": [{"type": "text", "text": "steer me"}],
        },
    )
    c.wait_method("turn/completed")

    c.note("turn/start while a turn is active")
    r = c.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "SLOW"}]})
    turn_id = r["result"]["turn"]["id"]
    c.wait_method("item/agentMessage/delta")
    # Back to back: the fake's follow-up reply is quicker than the real model's.
    c.send_request(
        "turn/start", {"threadId": tid, "input": [{"type": "text", "text": "more input"}]}
    )
    c.send_request("turn/interrupt", {"threadId": tid, "turnId": turn_id})
    c.wait_method("turn/completed")

    c.note("model error (HTTP 400, not retried)")
    c.turn(tid, "FAIL:bad request")
    c.note("errors")
    c.request("turn/interrupt", {"threadId": tid, "turnId": turn_id})
    c.request("turn/start", {"threadId": "00000000-0000-0000-0000-000000000000", "input": []})
    c.request("no/such/method", {})
    c.note("stdin EOF")
    assert c.close() == 0

    c2 = make()
    c2.note("resume in a fresh process")
    c2.handshake()
    c2.request(
        "thread/resume",
        {
            "threadId": tid,
            "excludeTurns": True,
            "cwd": str(work),
            "approvalPolicy": "untrusted",
            "sandbox": "workspace-write",
        },
    )
    c2.turn(tid, "after resume")
    assert c2.close() == 0
    return c.lines + c2.lines


# --------------------------------------------------------------------------- tests

OPTIONAL_KINDS = {"thread/goal/cleared", "deprecationNotice"}


@pytest.fixture(scope="module")
def fake_scenarios(tmp_path_factory: pytest.TempPathFactory) -> list[Msg]:
    base = tmp_path_factory.mktemp("fake-codex")
    work = base / "work"
    work.mkdir()
    made: list[FakeCodexProcess] = []

    def make(script: dict[str, Any] | None = None) -> FakeCodexProcess:
        fake = FakeCodexProcess(base / "codex-home", script)
        made.append(fake)
        return fake

    try:
        return run_scenarios(make, work)
    finally:
        for fake in made:
            if fake.proc.poll() is None:
                fake.proc.kill()
            fake.close()


def test_data_files_are_present() -> None:
    reference = load("appserver_reference.jsonl")
    scenarios = load("appserver_scenarios.jsonl")
    assert len(reference) > 50 and len(scenarios) > 100
    assert "resume in a fresh process" in sections(scenarios)
    for line in reference + scenarios:
        if isinstance(line["msg"], dict):
            assert "jsonrpc" not in line["msg"], "the real server sends no jsonrpc member"


def test_every_fake_message_has_the_real_shape(fake_scenarios: list[Msg]) -> None:
    real = shapes_of(load("appserver_reference.jsonl"))
    real.update(shapes_of(load("appserver_scenarios.jsonl")))
    fake = shapes_of(fake_scenarios)
    unknown = sorted(k for k in fake if k not in real)
    assert not unknown, (
        f"the fake sends kinds of message the real server was not seen to: {unknown}"
    )
    differ = {k: (fake[k], real[k]) for k in fake if fake[k] != real[k]}
    assert not differ, json.dumps({" ".join(k): v for k, v in differ.items()}, indent=1)


def test_the_fake_sends_every_kind_of_message_the_real_one_did(fake_scenarios: list[Msg]) -> None:
    real = shapes_of(load("appserver_scenarios.jsonl"))
    fake = shapes_of(fake_scenarios)
    missing = sorted(k for k in real if k not in fake and k[2] not in OPTIONAL_KINDS)
    assert not missing, f"never sent by the fake: {missing}"


SCENARIOS = [
    "handshake",
    "account/read",
    "thread/start",
    "text turn",
    "approval accept",
    "approval decline",
    "approval cancel",
    "interrupt during slow stream",
    "interrupt while an approval is pending",
    "steer during slow stream",
    "model error (HTTP 400, not retried)",
    "errors",
    "resume in a fresh process",
]


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_flow_matches(name: str, fake_scenarios: list[Msg]) -> None:
    real = sections(load("appserver_scenarios.jsonl"))[name]
    fake = sections(fake_scenarios)[name]
    assert flow(fake) == flow(real)


def test_turn_start_during_a_turn_joins_it(fake_scenarios: list[Msg]) -> None:
    # The real server answers with the running turn and adds the input to it as a
    # user message; when exactly that item appears relative to the interrupt is a
    # race, so only the facts are compared here.
    for lines in (
        sections(load("appserver_scenarios.jsonl"))["turn/start while a turn is active"],
        sections(fake_scenarios)["turn/start while a turn is active"],
    ):
        results = [
            line["msg"]["result"]["turn"]["id"]
            for line in lines
            if line["dir"] == "<-" and "turn" in (line["msg"].get("result") or {})
        ]
        assert len(results) == 2 and results[0] == results[1]
        texts = [
            line["msg"]["params"]["item"]["content"][0]["text"]
            for line in lines
            if line["msg"].get("method") == "item/completed"
            and line["msg"]["params"]["item"]["type"] == "userMessage"
        ]
        assert texts == ["SLOW", "more input"]
        done = [line["msg"] for line in lines if line["msg"].get("method") == "turn/completed"]
        assert [d["params"]["turn"]["status"] for d in done] == ["interrupted"]


def test_request_ids_and_error_codes_match(fake_scenarios: list[Msg]) -> None:
    def server_request_ids(lines: list[Msg]) -> list[Any]:
        return [
            line["msg"]["id"]
            for line in lines
            if line["dir"] == "<-" and "method" in line["msg"] and "id" in line["msg"]
        ]

    def errors(lines: list[Msg]) -> list[tuple[int, str]]:
        return [
            (line["msg"]["error"]["code"], line["msg"]["error"]["message"][:24])
            for line in lines
            if line["dir"] == "<-" and "error" in line["msg"] and "method" not in line["msg"]
        ]

    real = load("appserver_scenarios.jsonl")
    assert server_request_ids(fake_scenarios) == server_request_ids(real) == [0, 1, 2, 3]
    assert errors(fake_scenarios) == errors(real)


# --------------------------------------------------------------------------- the fake's knobs


def start_thread(c: FakeCodexProcess, tmp_path: Path, approval: str = "untrusted") -> str:
    c.handshake()
    r = c.request(
        "thread/start",
        {"cwd": str(tmp_path), "approvalPolicy": approval, "sandbox": "workspace-write"},
    )
    return str(r["result"]["thread"]["id"])


def test_scripted_replies_then_prompt_rules(fake_factory: Any, tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    c = fake_factory(
        {
            "log": str(log),
            "replies": [
                [{"text": "one two three four", "deltas": 2}],
                [{"command": "make test", "approval": False, "output": "ok"}, {"text": "Done."}],
            ],
        }
    )
    tid = start_thread(c, tmp_path)
    c.turn(tid, "anything")
    deltas = [
        line["msg"]["params"]["delta"]
        for line in c.lines
        if line["msg"].get("method") == "item/agentMessage/delta"
    ]
    assert deltas == ["one two", " three four"]
    done = c.turn(tid, "anything")
    kinds = [i["type"] for i in done["params"]["turn"]["items"]]
    assert kinds == ["agentMessage"] and done["params"]["turn"]["items"][0]["text"] == "Done."
    assert not any("requestApproval" in str(line["msg"].get("method")) for line in c.lines)
    done = c.turn(tid, "hello")  # script used up: prompt rules
    assert done["params"]["turn"]["items"][-1]["text"] == "Hi! I am the stand-in model."
    assert c.close() == 0
    received = [json.loads(line) for line in log.read_text().splitlines()]
    assert [m.get("method") for m in received][:3] == ["initialize", "initialized", "thread/start"]


def test_accept_for_session_is_remembered(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory()
    tid = start_thread(c, tmp_path)
    c.turn(tid, "TOOL:touch a", "acceptForSession")
    c.turn(tid, "TOOL:touch a", "decline")
    asked = [line for line in c.lines if "requestApproval" in str(line["msg"].get("method"))]
    assert len(asked) == 1


def test_error_reply_to_an_approval_fails_the_command(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory()
    tid = start_thread(c, tmp_path)
    c.send_request(
        "turn/start", {"threadId": tid, "input": [{"type": "text", "text": "TOOL:rm -rf x"}]}
    )
    req = c.wait_method("item/commandExecution/requestApproval")
    c.send({"id": req["id"], "error": {"code": -32000, "message": "no"}})
    item = c.wait(
        lambda m: (
            m.get("method") == "item/completed"
            and m["params"]["item"]["type"] == "commandExecution"
        )
    )
    assert item["params"]["item"]["status"] == "failed"
    assert c.wait_method("turn/completed")["params"]["turn"]["status"] == "completed"


def test_crash_mid_turn(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory(
        {
            "faults": {
                "crash": {
                    "after": "item/agentMessage/delta",
                    "count": 2,
                    "code": 3,
                    "stderr": "thread 'main' panicked at fake",
                }
            }
        }
    )
    tid = start_thread(c, tmp_path)
    c.send_request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "SLOW"}]})
    with pytest.raises(EOFError):
        c.wait_method("turn/completed")
    assert c.close() == 3
    assert "thread 'main' panicked at fake" in c.stderr
    sent = [line["msg"].get("method") for line in c.lines if line["dir"] == "<-"]
    assert sent.count("item/agentMessage/delta") == 2


@pytest.mark.parametrize("exits", [True, False])
def test_eof_mid_turn(fake_factory: Any, tmp_path: Path, exits: bool) -> None:
    c = fake_factory({"faults": {"eof": {"after": "turn/started", "exit": exits}}})
    tid = start_thread(c, tmp_path)
    c.send_request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "hi"}]})
    with pytest.raises(EOFError):
        c.wait_method("turn/completed")
    if exits:
        assert c.proc.wait(5) == 0
    else:
        time.sleep(0.2)
        assert c.proc.poll() is None  # alive with stdout closed, until stdin closes
        assert c.close() == 0


def test_ignore_and_drop_interrupt(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory({"slow_delay": 0.01, "faults": {"ignore_interrupt": True}})
    tid = start_thread(c, tmp_path)
    r = c.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "SLOW"}]})
    c.wait_method("item/agentMessage/delta")
    got = c.request("turn/interrupt", {"threadId": tid, "turnId": r["result"]["turn"]["id"]})
    assert got["result"] == {}
    assert c.wait_method("turn/completed")["params"]["turn"]["status"] == "completed"

    d = fake_factory({"slow_delay": 0.01, "faults": {"drop_interrupt": True}}, tmp_path / "d")
    tid = start_thread(d, tmp_path)
    r = d.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "SLOW"}]})
    req_id = d.send_request(
        "turn/interrupt", {"threadId": tid, "turnId": r["result"]["turn"]["id"]}
    )
    assert d.wait_method("turn/completed")["params"]["turn"]["status"] == "completed"
    assert not [line for line in d.lines if line["msg"].get("id") == req_id and line["dir"] == "<-"]


def test_stray_frames(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory({"faults": {"stray": True}})
    tid = start_thread(c, tmp_path)
    r = c.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "hi"}]})
    turn_id = r["result"]["turn"]["id"]
    done = c.wait(
        lambda m: (
            m.get("method") == "turn/completed"
            and m["params"]["turn"]["id"] == turn_id
            and m["params"]["threadId"] == tid
        )
    )
    assert done["params"]["turn"]["status"] == "completed"
    completed = [
        line["msg"]["params"] for line in c.lines if line["msg"].get("method") == "turn/completed"
    ]
    assert len(completed) == 3
    assert {(p["threadId"] == tid, p["turn"]["id"] == turn_id) for p in completed} == {
        (False, True),
        (True, False),
        (True, True),
    }


def test_unknown_server_request_blocks_the_turn(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory(
        {"faults": {"unknown_server_request": {"method": "made/up", "params": {"x": 1}}}}
    )
    tid = start_thread(c, tmp_path)
    c.send_request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "hi"}]})
    req = c.wait_method("made/up")
    assert req["id"] == 0 and req["params"] == {"x": 1}
    with pytest.raises(TimeoutError):
        c.wait_method("turn/completed", timeout=0.3)
    c.send({"id": 0, "error": {"code": -32601, "message": "unsupported"}})
    assert c.wait_method("serverRequest/resolved")["params"]["requestId"] == 0
    assert c.wait_method("turn/completed")["params"]["turn"]["status"] == "completed"


def test_stderr_flood_and_garbage(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory(
        {"faults": {"stderr_flood": {"lines": 20000, "bytes": 200}, "garbage_stdout": True}}
    )
    tid = start_thread(c, tmp_path)
    c.turn(tid, "hi")
    assert c.close() == 0
    assert len(c.stderr) > 20000
    assert any("_raw" in line["msg"] for line in c.lines)


def test_startup_faults(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory({"faults": {"exit_at_start": {"code": 2, "stderr": "Error: no"}}})
    assert c.proc.wait(10) == 2
    c.close()
    assert c.stderr == ["Error: no"]

    h = fake_factory({"faults": {"hang": {"on": "initialize"}}}, tmp_path / "h")
    h.send_request("initialize", {"clientInfo": {"name": "x", "version": "0"}})
    with pytest.raises(TimeoutError):
        h.wait(lambda m: True, timeout=0.3)
    assert h.close() == 0


def test_protocol_errors(fake_factory: Any, tmp_path: Path) -> None:
    c = fake_factory()
    assert c.request("thread/start", {})["error"] == {"code": -32600, "message": "Not initialized"}
    c.handshake()
    again = c.request("initialize", {"clientInfo": {"name": "x", "version": "0"}})
    assert again["error"]["message"] == "Already initialized"
    c.send({"id": 77, "method": "account/read", "params": {}, "jsonrpc": "2.0"})
    assert c.wait(lambda m: m.get("id") == 77)["result"]["requiresOpenaiAuth"] is False
    assert c.proc.stdin is not None
    c.proc.stdin.write(b"not json\n")
    c.proc.stdin.flush()
    assert "error" in c.request("thread/resume", {"threadId": "nope"})
    missing = c.request("thread/resume", {"threadId": "01a22b42-0000-7000-8000-000000000000"})
    assert missing["error"]["message"].startswith("no rollout found for thread id")
    assert c.close() == 0
    assert any("Failed to deserialize JSONRPCMessage" in line for line in c.stderr)


def test_fake_messages_validate_against_the_generated_schema(fake_scenarios: list[Msg]) -> None:
    """adapters/codex/schema/app_server_protocol.json is the real binary's own JSON
    Schema (`codex app-server generate-json-schema`, trimmed): the fake's messages,
    and the real ones in the transcripts, must fit it."""
    import jsonschema  # a declared test dependency (pyproject [test])

    bundle = json.loads(
        (ROOT / "adapters" / "codex" / "schema" / "app_server_protocol.json").read_text()
    )
    methods = bundle["x-methods"]

    def validator(ref: str) -> Any:
        return jsonschema.Draft7Validator({"$ref": ref, "definitions": bundle["definitions"]})

    cache: dict[str, Any] = {}

    def check(ref: str, instance: Any, where: str) -> None:
        v = cache.setdefault(ref, validator(ref))
        errors = [e.message[:200] for e in v.iter_errors(instance)]
        assert not errors, f"{where}: {errors[:3]}"

    for source, lines in (
        ("fake", fake_scenarios),
        ("real", load("appserver_scenarios.jsonl") + load("appserver_reference.jsonl")),
    ):
        pending: dict[tuple[str, Any], str] = {}
        for line in lines:
            d, m = line["dir"], line["msg"]
            if d not in ("->", "<-") or not isinstance(m, dict) or "_raw" in m:
                continue
            where = f"{source} {d} {json.dumps(m)[:120]}"
            if "method" in m:
                if "id" in m:
                    pending[(d, m["id"])] = m["method"]
                body = {k: v for k, v in m.items() if k != "emittedAtMs"}
                if d == "<-":
                    union = "ServerRequest" if "id" in m else "ServerNotification"
                elif m["method"] in methods["clientRequests"] or "id" not in m:
                    union = "ClientRequest" if "id" in m else "ClientNotification"
                else:
                    continue  # a deliberately unknown method
                check(f"#/definitions/{union}", body, where)
            elif "result" in m:
                other = "<-" if d == "->" else "->"
                method = pending.get((other, m["id"]))
                table = methods["serverRequests"] if d == "->" else methods["clientRequests"]
                if method in table and table[method]["result"]:
                    check(table[method]["result"], m["result"], where)
