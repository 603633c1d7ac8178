"""The fake claude CLI speaks what the real one spoke, and the stand-ins behave as documented.

Reference data (copied into the repository, never read from elsewhere):

- ``tests/data/claude/stream_2.1.197.jsonl``: captured from the real
  ``@anthropic-ai/claude-code`` 2.1.197 (the pinned version) driven in bidirectional
  stream-json mode against ``tests/standins/anthropic_server.py``; scenarios ``main``
  (initialize, text turn, Bash allowed, Bash denied, interrupt during a slow stream, a
  turn after the interrupt), ``resume`` (a second process with ``--resume``),
  ``interrupt_pending_permission`` and ``api_error_400``. Paths rewritten to
  ``/home/user/demo``; the initialize response's lists shortened.
- ``tests/data/claude/stream_2.1.332_excerpt.jsonl``: one line per message kind from a
  capture of a newer release (2.1.332), to tell the keys every version has from the ones
  only some have.

Each line: ``{"scenario", "dir": "->" | "<-" | "stderr", "t", "msg"}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from standins.anthropic_server import AnthropicStandIn, Text, ToolUse

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "claude"
FAKE = HERE / "standins" / "fake_claude.py"
FLAGS = [
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-prompt-tool",
    "stdio",
    "--include-partial-messages",
]

Msg = dict[str, Any]


# --------------------------------------------------------------------------- helpers


def load(name: str) -> list[Msg]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def by_scenario(entries: list[Msg]) -> dict[str, list[Msg]]:
    out: dict[str, list[Msg]] = {}
    for e in entries:
        out.setdefault(e["scenario"], []).append(e)
    return out


class Fake:
    """The fake CLI as a child process, driven line by line."""

    def __init__(
        self, tmp: Path, *extra: str, script: Msg | None = None, cwd: Path | None = None
    ) -> None:
        self.cwd = cwd or tmp / "work"
        self.cwd.mkdir(parents=True, exist_ok=True)
        (tmp / "config").mkdir(exist_ok=True)
        argv = [sys.executable, str(FAKE), *FLAGS, *extra]
        if script is not None:
            argv += ["--fake-script", json.dumps(script)]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp),
            "CLAUDE_CONFIG_DIR": str(tmp / "config"),
            "TMPDIR": str(tmp),
            "ANTHROPIC_API_KEY": "dummy",
        }
        self.p = subprocess.Popen(
            argv,
            cwd=self.cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.log: list[Msg] = []
        self.q: queue.Queue[Msg | None] = queue.Queue()
        self.stderr = b""
        self._threads = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._read_err, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def __enter__(self) -> Fake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            msg = json.loads(line)
            self.log.append({"dir": "<-", "msg": msg})
            self.q.put(msg)
        self.q.put(None)

    def _read_err(self) -> None:
        assert self.p.stderr is not None
        self.stderr = self.p.stderr.read()

    def send(self, msg: Msg) -> None:
        assert self.p.stdin is not None
        self.log.append({"dir": "->", "msg": msg})
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def user(self, text: str) -> None:
        self.send(
            {
                "type": "user",
                "message": {"role": "user", "content": text},
                "parent_tool_use_id": None,
                "session_id": "default",
            }
        )

    def control(self, rid: str, subtype: str, **fields: Any) -> None:
        self.send(
            {
                "type": "control_request",
                "request_id": rid,
                "request": {"subtype": subtype, **fields},
            }
        )

    def reply(self, request: Msg, response: Msg) -> None:
        self.send(
            {
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": request["request_id"],
                    "response": response,
                },
            }
        )

    def until(self, pred: Callable[[Msg], bool], timeout: float = 10.0) -> Msg:
        end = time.monotonic() + timeout
        while True:
            m = self.q.get(timeout=max(0.01, end - time.monotonic()))
            if m is None:
                raise EOFError("fake closed stdout")
            if pred(m):
                return m

    def rest(self, timeout: float = 10.0) -> list[Msg]:
        """Everything until stdout closes."""
        out: list[Msg] = []
        end = time.monotonic() + timeout
        while True:
            m = self.q.get(timeout=max(0.01, end - time.monotonic()))
            if m is None:
                return out
            out.append(m)

    def close(self, timeout: float = 10.0) -> int:
        assert self.p.stdin is not None
        if not self.p.stdin.closed:
            self.p.stdin.close()
        return self.p.wait(timeout)

    def kill(self) -> None:
        """Make sure the process is gone and every pipe is closed."""
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(5)
        for t in self._threads:
            t.join(5)
        for pipe in (self.p.stdin, self.p.stdout, self.p.stderr):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(BrokenPipeError):
                    pipe.close()

    def wait_stderr(self) -> bytes:
        self.p.wait(5)
        self._threads[1].join(5)
        return self.stderr


def is_type(t: str, sub: str | None = None) -> Callable[[Msg], bool]:
    return lambda m: m.get("type") == t and (sub is None or m.get("subtype") == sub)


def is_delta(text: str) -> Callable[[Msg], bool]:
    return lambda m: (
        m.get("type") == "stream_event" and m["event"].get("delta", {}).get("text") == text
    )


# --------------------------------------------------------------------------- shapes


def answered_subtypes(entries: list[Msg]) -> dict[str, str]:
    """request_id -> subtype of the control requests the driver sent."""
    return {
        e["msg"]["request_id"]: e["msg"]["request"]["subtype"]
        for e in entries
        if e["dir"] == "->" and e["msg"].get("type") == "control_request"
    }


def kind(m: Msg, answered: dict[str, str]) -> tuple[str, ...]:
    t = m.get("type", "?")
    if t == "stream_event":
        ev = m["event"]
        return (t, ev["type"], ev.get("delta", {}).get("type", ""))
    if t == "system":
        return (t, m.get("subtype", ""))
    if t == "assistant":
        msg = m["message"]
        first = msg["content"][0]["type"] if msg["content"] else ""
        return (t, "synthetic" if msg.get("model") == "<synthetic>" else first)
    if t == "user":
        c = m["message"]["content"]
        return (t, c[0]["type"] if isinstance(c, list) and c else "str")
    if t == "control_request":
        return (t, m["request"]["subtype"])
    if t == "control_response":
        r = m["response"]
        return (t, r["subtype"], answered.get(r.get("request_id", ""), "?"))
    if t == "result":
        return (t, m["subtype"], "api_error" if m.get("api_error_status") else "")
    return (t,)


def shape(m: Msg) -> frozenset[tuple[str, frozenset[str]]]:
    """The key sets of a message and of its nested objects that an adapter reads."""
    parts: list[tuple[str, frozenset[str]]] = [("", frozenset(m))]

    def add(name: str, obj: Any) -> None:
        if isinstance(obj, dict):
            parts.append((name, frozenset(obj)))

    t = m.get("type")
    if t == "stream_event":
        ev = m["event"]
        add("event", ev)
        add("event.message", ev.get("message"))
        add("event.delta", ev.get("delta"))
        add("event.content_block", ev.get("content_block"))
        add("event.usage", ev.get("usage"))
    elif t in ("assistant", "user"):
        add("message", m["message"])
        content = m["message"]["content"]
        for b in content if isinstance(content, list) else []:
            add(f"block.{b.get('type')}", b)
    elif t == "control_request":
        add("request", m["request"])
    elif t == "control_response":
        add("response", m["response"])
        payload = m["response"].get("response")
        add("response.response", payload)
        if isinstance(payload, dict):
            add("response.response.account", payload.get("account"))
            for x in payload.get("models") or []:
                add("response.response.models.*", x)
    elif t == "result":
        add("usage", m["usage"])
        for v in m.get("modelUsage", {}).values():
            add("modelUsage.*", v)
        for d in m.get("permission_denials", []):
            add("permission_denials.*", d)
    return frozenset(parts)


def shape_diff(got: frozenset[Any], wanted: set[frozenset[Any]]) -> dict[str, Any]:
    """Per nested object: keys the fake has in excess (+) and lacks (-), vs the closest shape."""

    def as_dict(sh: frozenset[Any]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for name, keys in sh:
            out.setdefault(name, set()).update(keys)
        return out

    g = as_dict(got)
    best: dict[str, Any] = {}
    for w in map(as_dict, wanted):
        diff = {}
        for name in sorted(set(g) | set(w)):
            extra, missing = (
                g.get(name, set()) - w.get(name, set()),
                w.get(name, set()) - g.get(name, set()),
            )
            if extra or missing:
                diff[name or "<top>"] = {"+": sorted(extra), "-": sorted(missing)}
        if not best or len(str(diff)) < len(str(best)):
            best = diff
    return best


def received(entries: list[Msg]) -> list[Msg]:
    return [e["msg"] for e in entries if e["dir"] == "<-"]


def collapsed_kinds(entries: list[Msg]) -> list[tuple[str, ...]]:
    answered = answered_subtypes(entries)
    out: list[tuple[str, ...]] = []
    for m in received(entries):
        k = kind(m, answered)
        if not out or out[-1] != k:
            out.append(k)
    return out


# --------------------------------------------------------------------------- the fake, driven


def drive_fake(tmp: Path) -> dict[str, list[Msg]]:
    """Run the fake through the reference scenarios, the way the real CLI was driven."""
    runs: dict[str, list[Msg]] = {}
    slow = " ".join(f"word{i}" for i in range(40))
    main_script = {
        "turns": [
            "Hi! I am the stand-in model.",
            [{"bash": "touch approved.txt"}],
            [{"bash": "touch denied.txt"}],
            [{"text": slow, "delay": 0.05}],
            [{"text": "after interrupt"}],
        ]
    }
    with Fake(tmp, script=main_script) as f:
        f.control("req_1", "initialize", hooks=None)
        f.until(is_type("control_response"))
        f.user("say hi")
        first = f.until(is_type("result"))
        sid = first["session_id"]
        f.user("TOOL:touch approved.txt")
        f.reply(
            f.until(is_type("control_request")),
            {
                "behavior": "allow",
                "updatedInput": {"command": "touch approved.txt", "description": "scripted"},
            },
        )
        f.until(is_type("result"))
        assert (f.cwd / "approved.txt").exists()
        f.user("TOOL:touch denied.txt")
        f.reply(
            f.until(is_type("control_request")), {"behavior": "deny", "message": "Denied by test"}
        )
        f.until(is_type("result"))
        assert not (f.cwd / "denied.txt").exists()
        f.user("SLOW")
        f.until(is_delta(" word2"))
        f.control("req_2", "interrupt")
        f.until(is_type("result"))
        f.user("ECHO:after interrupt")
        f.until(is_type("result"))
        assert f.close() == 0
    runs["main"] = f.log

    with Fake(tmp, "--resume", sid) as f:
        f.control("req_1", "initialize", hooks=None)
        f.until(is_type("control_response"))
        f.user("ECHO:resumed")
        f.until(is_type("result"))
        assert f.close() == 0
    runs["resume"] = f.log

    with Fake(tmp, cwd=tmp / "work2") as f:
        f.control("init", "initialize", hooks=None)
        f.until(is_type("control_response"))
        f.user("TOOL:touch pending.txt")
        req = f.until(is_type("control_request"))
        f.control("int1", "interrupt")
        f.until(is_type("result"))
        f.reply(req, {"behavior": "allow", "updatedInput": req["request"]["input"]})  # too late
        f.user("ECHO:next")
        f.until(is_type("result"))
        assert not (f.cwd / "pending.txt").exists()
        f.close()
    runs["interrupt_pending_permission"] = f.log

    with Fake(
        tmp, script={"turns": [[{"api_error": {"status": 400, "message": "bad thing"}}]]}
    ) as f:
        f.control("init", "initialize", hooks=None)
        f.until(is_type("control_response"))
        f.user("hello")
        f.until(is_type("result"))
        assert f.close() == 1  # as the real CLI: exit 1 after a failed last turn
    runs["api_error_400"] = f.log
    return runs


@pytest.fixture(scope="module")
def reference() -> dict[str, list[Msg]]:
    return by_scenario(load("stream_2.1.197.jsonl"))


@pytest.fixture(scope="module")
def fake_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Msg]]:
    return drive_fake(tmp_path_factory.mktemp("fake"))


SCENARIOS = ["main", "resume", "interrupt_pending_permission", "api_error_400"]


# --------------------------------------------------------------------------- shape tests


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_same_message_sequence(
    scenario: str, reference: dict[str, list[Msg]], fake_runs: dict[str, list[Msg]]
) -> None:
    """Same kinds of messages in the same order (runs of one kind collapsed)."""
    assert collapsed_kinds(fake_runs[scenario]) == collapsed_kinds(reference[scenario])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_same_key_sets(
    scenario: str, reference: dict[str, list[Msg]], fake_runs: dict[str, list[Msg]]
) -> None:
    ref_entries, fake_entries = reference[scenario], fake_runs[scenario]
    ref_answered, fake_answered = answered_subtypes(ref_entries), answered_subtypes(fake_entries)
    ref_shapes: dict[tuple[str, ...], set[frozenset[Any]]] = {}
    for m in received(ref_entries):
        ref_shapes.setdefault(kind(m, ref_answered), set()).add(shape(m))
    for m in received(fake_entries):
        k = kind(m, fake_answered)
        assert k in ref_shapes, f"the fake sent a kind the real CLI did not: {k}"
        if shape(m) not in ref_shapes[k]:
            pytest.fail(
                f"{k}: key sets differ from the real CLI's: {shape_diff(shape(m), ref_shapes[k])}"
            )


def check_semantics(runs: dict[str, list[Msg]]) -> None:
    """Facts about the protocol that hold for the real CLI (checked on the reference too)."""
    main = received(runs["main"])
    results = [m for m in main if m["type"] == "result"]
    assert [r["subtype"] for r in results] == [
        "success",
        "success",
        "success",
        "error_during_execution",
        "success",
    ]
    assert [r["terminal_reason"] for r in results] == [
        "completed",
        "completed",
        "completed",
        "aborted_streaming",
        "completed",
    ]
    assert results[3]["is_error"] is True and results[3]["stop_reason"] is None
    assert results[0]["result"] == "Hi! I am the stand-in model."
    assert results[1]["permission_denials"] == []
    assert [d["tool_name"] for d in results[2]["permission_denials"]] == ["Bash"]
    # total_cost_usd adds up over the process; usage is per turn
    costs = [r["total_cost_usd"] for r in results]
    assert costs == sorted(costs) and costs[0] > 0
    assert results[1]["num_turns"] == 2  # the tool turn took two model requests
    sid = results[0]["session_id"]
    assert all(m.get("session_id") in (None, sid) for m in main)
    # one system/init per user turn, carrying the session id
    inits = [m for m in main if m["type"] == "system" and m["subtype"] == "init"]
    assert len(inits) == 5 and {m["session_id"] for m in inits} == {sid}
    # the interrupt is acknowledged before the turn's result
    i_ack = next(
        i
        for i, m in enumerate(main)
        if m["type"] == "control_response" and m["response"]["request_id"] == "req_2"
    )
    i_res = main.index(results[3])
    assert i_ack < i_res
    assert main[i_ack]["response"]["subtype"] == "success"
    markers = [m for m in main[i_ack:i_res] if m["type"] == "user"]
    assert markers[-1]["message"]["content"][0]["text"] == "[Request interrupted by user]"
    # the tool result comes back as a user message with the same tool_use_id
    can_use = [m for m in main if m["type"] == "control_request"]
    assert [m["request"]["subtype"] for m in can_use] == ["can_use_tool", "can_use_tool"]
    tool_results = [
        m["message"]["content"][0]
        for m in main
        if m["type"] == "user" and m["message"]["content"][0].get("type") == "tool_result"
    ]
    assert [t["tool_use_id"] for t in tool_results] == [
        m["request"]["tool_use_id"] for m in can_use
    ]
    assert [t["is_error"] for t in tool_results] == [False, True]
    assert tool_results[1]["content"] == "Denied by test"

    # resume keeps the session id
    resumed = [m for m in received(runs["resume"]) if m["type"] == "result"]
    assert [r["session_id"] for r in resumed] == [sid]

    # interrupt while a permission request is outstanding
    pend = received(runs["interrupt_pending_permission"])
    req = next(m for m in pend if m["type"] == "control_request")
    cancel = next(m for m in pend if m["type"] == "control_cancel_request")
    assert cancel["request_id"] == req["request_id"]
    res = [m for m in pend if m["type"] == "result"]
    assert res[0]["subtype"] == "error_during_execution"
    assert res[0]["terminal_reason"] == "aborted_tools"
    assert res[1]["subtype"] == "success"

    # an API error ends the turn with is_error but subtype "success"
    err = next(m for m in received(runs["api_error_400"]) if m["type"] == "result")
    assert (err["subtype"], err["is_error"], err["api_error_status"]) == ("success", True, 400)
    assert err["result"].startswith("API Error: 400")


def test_reference_semantics(reference: dict[str, list[Msg]]) -> None:
    check_semantics(reference)


def test_fake_semantics(fake_runs: dict[str, list[Msg]]) -> None:
    check_semantics(fake_runs)


def test_fake_has_the_keys_every_version_has(fake_runs: dict[str, list[Msg]]) -> None:
    """Keys present in both 2.1.197 and 2.1.332 are in the fake's messages too."""
    newer = load("stream_2.1.332_excerpt.jsonl")
    old = [e for es in by_scenario(load("stream_2.1.197.jsonl")).values() for e in es]

    def top_keys(entries: list[Msg]) -> dict[tuple[str, ...], set[str]]:
        answered = answered_subtypes(entries)
        out: dict[tuple[str, ...], set[str]] = {}
        for m in received(entries):
            k = kind(m, answered)
            out[k] = out.get(k, set(m)) & set(m)
        return out

    common = top_keys(old)
    for k, keys in top_keys(newer).items():
        if k in common:
            common[k] &= keys
    fake = top_keys([e for es in fake_runs.values() for e in es])
    checked = 0
    for k, keys in common.items():
        if k in fake:
            assert keys <= fake[k], f"{k}: fake lacks {sorted(keys - fake[k])}"
            checked += 1
    assert checked >= 15


def test_standin_server_events_match_what_the_cli_forwarded(
    reference: dict[str, list[Msg]],
) -> None:
    """The stand-in's SSE events have the key sets the real CLI re-emitted as stream_event.

    The 2.1.197 capture was made against this stand-in and the CLI forwards the API's
    events verbatim in ``stream_event.event`` (except the ``message_delta`` it builds
    itself after an interrupt, which is not in the main scenario's happy path).
    """
    ref: dict[tuple[str, str], set[frozenset[Any]]] = {}
    for e in reference["main"][:60]:  # the text turn and the allowed tool turn
        m = e["msg"]
        if e["dir"] == "<-" and m.get("type") == "stream_event":
            ev = m["event"]
            k = (ev["type"], ev.get("delta", {}).get("type", ""))
            ref.setdefault(k, set()).add(shape({"type": "stream_event", "event": ev}))
    with AnthropicStandIn([Text("Hi! I am the stand-in model."), ToolUse("touch x")]) as srv:
        got: dict[tuple[str, str], set[frozenset[Any]]] = {}
        for _ in range(2):
            for ev in sse_events(srv.base_url):
                k = (ev["type"], ev.get("delta", {}).get("type", ""))
                got.setdefault(k, set()).add(shape({"type": "stream_event", "event": ev}))
        assert got == ref
        reqs = srv.requests
        assert [r.kind for r in reqs] == ["turn", "turn"]
        assert reqs[0].headers["x-api-key"] == "<redacted>"
        assert reqs[0].query == {"beta": ["true"]}


def sse_events(base_url: str, body: Msg | None = None) -> Iterator[Msg]:
    body = body or {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": True,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    req = urllib.request.Request(
        base_url + "/v1/messages?beta=true",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "x-api-key": "dummy"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.headers["content-type"] == "text/event-stream"
        for line in resp.read().decode().splitlines():
            if line.startswith("data: "):
                yield json.loads(line[6:])


def test_standin_server_other_endpoints() -> None:
    with AnthropicStandIn() as srv:
        head = urllib.request.Request(srv.base_url + "/", method="HEAD")
        with urllib.request.urlopen(head, timeout=10) as resp:
            assert resp.status == 200
        ct = urllib.request.Request(
            srv.base_url + "/v1/messages/count_tokens?beta=true",
            method="POST",
            data=json.dumps({"messages": [{"role": "user", "content": "x" * 400}]}).encode(),
        )
        with urllib.request.urlopen(ct, timeout=10) as resp:
            assert json.loads(resp.read())["input_tokens"] > 50
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(srv.base_url + "/nope", timeout=10)
        assert exc.value.code == 404
        assert json.loads(exc.value.read())["error"]["type"] == "not_found_error"
        # a side request (no tools) does not consume the script
        srv.push("scripted")
        side = {"model": "m", "max_tokens": 10, "stream": True, "messages": []}
        texts = [
            e["delta"]["text"]
            for e in sse_events(srv.base_url, side)
            if "delta" in e and e["delta"].get("type") == "text_delta"
        ]
        assert "".join(texts) == srv.side_text
        assert srv.remaining == 1
        assert [r.kind for r in srv.requests] == ["head", "count_tokens", "other", "side"]


# --------------------------------------------------------------------------- fake behaviours


def test_fake_crash_mid_run(tmp_path: Path) -> None:
    with Fake(
        tmp_path,
        script={"turns": [[{"text": "partial"}, {"crash": {"exit_code": 3, "stderr": "boom"}}]]},
    ) as f:
        f.user("go")
        out = f.rest()
        assert [m["type"] for m in out][-1] == "stream_event"  # no result
        assert f.p.wait(5) == 3
        assert b"boom" in f.wait_stderr()


def test_fake_closes_stdout_but_keeps_running(tmp_path: Path) -> None:
    with Fake(tmp_path, script={"turns": [[{"close_stdout": True}]]}) as f:
        f.user("go")
        f.rest()  # EOF
        assert f.p.poll() is None
        assert f.close() == 0


@pytest.mark.parametrize("mode", ["ignore", "silent"])
def test_fake_ignores_interrupts(tmp_path: Path, mode: str) -> None:
    script = {"interrupt": mode, "turns": [[{"text": "a b c d e f", "delay": 0.05}]]}
    with Fake(tmp_path, script=script) as f:
        f.user("go")
        f.until(is_delta(" b"))
        f.control("i1", "interrupt")
        assert f.close() == 0
        out = f.rest()
        acks = [m for m in out if m["type"] == "control_response"]
        assert len(acks) == (1 if mode == "ignore" else 0)
        assert [m["subtype"] for m in out if m["type"] == "result"] == ["success"]


def test_fake_stray_frames_unknown_controls_and_stderr_flood(tmp_path: Path) -> None:
    script = {
        "turns": [
            [
                {"stray": "assistant"},
                {"stray": "result"},
                {"frame": {"type": "mystery", "x": 1}},
                {"control_request": {"subtype": "frobnicate", "x": 1}, "await": True},
                {"stderr": "noise " * 20, "repeat": 2000},
                {"text": "done"},
            ]
        ]
    }
    with Fake(tmp_path, script=script) as f:
        f.control("u1", "no_such_subtype")
        err = f.until(is_type("control_response"))
        assert err["response"] == {
            "subtype": "error",
            "request_id": "u1",
            "error": "Unsupported control request subtype: no_such_subtype",
        }
        f.user("go")
        req = f.until(lambda m: m.get("type") == "control_request")
        assert req["request"]["subtype"] == "frobnicate"
        f.reply(req, {"ok": True})
        res = f.until(is_type("result"))
        assert res["result"] == "done"
        strays = [
            e["msg"]
            for e in f.log
            if e["dir"] == "<-" and e["msg"].get("session_id") not in (None, res["session_id"])
        ]
        assert {m["type"] for m in strays} == {"assistant", "result"}
        assert any(e["msg"].get("type") == "mystery" for e in f.log)
        assert f.close() == 0
        assert f.wait_stderr().count(b"noise") == 40000


def test_fake_input_errors_and_signals(tmp_path: Path) -> None:
    with Fake(tmp_path) as f:
        assert f.p.stdin is not None
        f.p.stdin.write(b"this is not json\n")
        f.p.stdin.flush()
        assert f.p.wait(5) == 1
    with Fake(tmp_path, "--resume", "00000000-0000-4000-8000-000000000000") as f:
        out = f.rest()
        assert [(m["type"], m["subtype"]) for m in out] == [("result", "error_during_execution")]
        assert f.p.wait(5) == 1
    with Fake(tmp_path, script={"turns": [[{"hang": True}]]}) as f:
        f.user("go")
        f.until(is_type("system", "init"))
        f.p.send_signal(signal.SIGTERM)
        assert f.p.wait(5) == 143


def test_fake_permission_reply_validation(tmp_path: Path) -> None:
    with Fake(tmp_path) as f:
        f.user("TOOL:touch a.txt")
        f.reply(f.until(is_type("control_request")), {"behavior": "allow"})  # no updatedInput
        res = f.until(is_type("result"))
        assert "Tool permission request failed" in res["result"]
        assert not (f.cwd / "a.txt").exists()
        f.user("TOOL:touch b.txt")
        f.until(is_type("control_request"))
        assert f.p.stdin is not None
        f.p.stdin.close()  # nobody will answer
        res = f.until(is_type("result"))
        assert "stream closed before response received" in res["result"]
        assert f.p.wait(5) == 0
