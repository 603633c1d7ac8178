"""Replay the conformance corpus (``tests/conformance/*.jsonl``) against real bridges.

Every file is replayed against a fresh ``python -m agent_bridge serve`` over real pipes, once
per framing (newline-delimited and Content-Length), and again over the two other
transports a host can use: the per-user daemon through ``agent-bridge connect`` (newline
framing) and ``connect`` through a real OpenSSH server on 127.0.0.1 (Content-Length).
Every message of both directions is validated against ``schemas/`` (see
``conformance/replay.py`` and ``conformance/README.md``).  The replays run in a thread
pool (each is a separate process and mostly waits on pipes); each file, transport and
framing is still reported as its own test.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conformance.replay import (
    CORPUS_DIR,
    BridgeProcess,
    Transcript,
    handshake_messages,
    load_corpus_file,
    replay,
)
from transports import STDIO, SshServer, Transport, ssh_available
from wire_validation import WireValidator

FILES = sorted(CORPUS_DIR.glob("*.jsonl"))
#: (transport, framing): stdio in both framings, each daemon transport in one
TRANSPORTS = (
    ("stdio", "newline"),
    ("stdio", "content-length"),
    ("daemon", "newline"),
    ("ssh", "content-length"),
)
CASES = [(path, transport, framing) for path in FILES for transport, framing in TRANSPORTS]

#: The flows the corpus must cover (issue "Publish the wire contract").
REQUIRED = {
    "create_and_run_streaming",
    "approval_allow",
    "approval_deny",
    "approval_auto_deny",
    "question_choice",
    "question_free_text",
    "question_set",
    "interrupt",
    "resume",
    "error_not_initialized",
    "error_unknown_method",
    "error_invalid_params",
    "error_session_not_found",
    "error_run_active",
    "error_interaction_already_settled",
    "error_command_conflict",
}


Case = tuple[Path, str, str]


@pytest.fixture(scope="module")
def outcomes() -> dict[Case, BaseException | None]:
    why = ssh_available()
    ssh = SshServer() if why is None else None
    transports = {"stdio": STDIO, "daemon": Transport("daemon")}
    if ssh is not None:
        transports["ssh"] = Transport("ssh", ssh)

    def run(case: Case) -> BaseException | None:
        path, transport, framing = case
        if transport not in transports:
            return None
        try:
            transcript = load_corpus_file(path)
            replay(transcript, framing, transport=transports[transport])  # type: ignore[arg-type]
        except BaseException as exc:  # reported by the test of this case
            return exc
        return None

    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            return dict(zip(CASES, pool.map(run, CASES), strict=True))
    finally:
        if ssh is not None:
            ssh.close()


@pytest.mark.timeout(900)  # the first case waits for the whole corpus
@pytest.mark.parametrize(
    "case", CASES, ids=[f"{path.stem}-{transport}-{framing}" for path, transport, framing in CASES]
)
def test_replay(case: Case, outcomes: dict[Case, BaseException | None]) -> None:
    if case[1] == "ssh" and (why := ssh_available()) is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the ssh transport: {why}")
        pytest.skip(f"SSH TRANSPORT NOT TESTED: {why}")
    error = outcomes[case]
    if error is not None:
        raise error


def test_corpus_covers_the_main_flows() -> None:
    assert {path.stem for path in FILES} >= REQUIRED, REQUIRED - {path.stem for path in FILES}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_file_is_well_formed(path: Path) -> None:
    transcript: Transcript = load_corpus_file(path)
    lines = path.read_text("utf-8").splitlines()
    first = json.loads(lines[0])
    assert first["dir"] == "meta" and first["description"], "first line: meta with a description"
    assert transcript.steps, "no steps"
    assert transcript.steps[0].dir == "send", "a transcript starts with the host"
    for line in lines:
        assert json.loads(line) is not None
        assert line == json.dumps(json.loads(line), separators=(",", ":"), ensure_ascii=False)


def test_overloaded_reply_carries_error_info() -> None:
    """Past --max-inflight, a request is refused with -32001 whose data is an ErrorInfo."""
    bridge = BridgeProcess("newline", ("--max-inflight", "1"))
    validator = WireValidator()
    try:
        init, initialized = handshake_messages(())
        create = {"jsonrpc": "2.0", "method": "session/create", "params": {"provider": "scripted"}}
        batch = [create | {"id": 1}, create | {"id": 2}]
        for message in (init, initialized, batch):
            validator.check("host->bridge", message)
            bridge.send(message)
        deadline = time.monotonic() + 10
        replies = [bridge.recv(deadline), bridge.recv(deadline)]
        assert isinstance(replies[1], list) and len(replies[1]) == 2, replies
        assert any("error" in r and r["error"]["code"] == -32001 for r in replies[1]), replies
        for reply in replies:
            validator.check("bridge->host", reply)
    finally:
        bridge.finish()
        bridge.kill()
