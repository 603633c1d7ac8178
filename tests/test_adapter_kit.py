"""The adapter kit (adapters/kit/): finish-once runs, supervised tasks, the bounded probe
runner, the NDJSON reader, the resident child, the JSON-RPC child, the tool-call tracker
and the approval helpers — against real tasks and real child processes."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import anyio
import pytest

from agent_bridge.adapters.kit.approvals import approval_modes, approval_verdict, is_allow
from agent_bridge.adapters.kit.ndjson import read_ndjson
from agent_bridge.adapters.kit.probe import run_probe
from agent_bridge.adapters.kit.resident import StopGraces, start_resident
from agent_bridge.adapters.kit.rpc_child import (
    RpcChild,
    RpcChildSpec,
    probe_rpc,
    request_quietly,
    start_rpc_child,
)
from agent_bridge.adapters.kit.runs import RunHandle
from agent_bridge.adapters.kit.tasks import TaskSupervisor
from agent_bridge.adapters.kit.tools import ToolCalls
from agent_bridge.errors import BridgeError, ProviderFailure
from agent_bridge.processes import ProcessSpec, build_child_env
from agent_bridge.rpc.connection import Connection, Method
from agent_bridge.rpc.errors import RpcError
from agent_bridge.rpc.framing import FramingError
from agent_bridge.spi import InteractionOutcome, RunOutcome
from agent_bridge.wire.events import ToolActivity
from agent_bridge.wire.interactions import ApprovalAnswer

LOG = logging.getLogger("test.adapter_kit")


class _Run(RunHandle):
    async def interrupt(self, reason: str) -> None:
        self.finish(RunOutcome.interrupted())


def _env() -> dict[str, str]:
    return build_child_env({}, passthrough=())


# --------------------------------------------------------------------------- runs


async def test_run_handle_first_finish_wins() -> None:
    run = _Run()
    assert not run.finished and run.outcome is None
    assert run.finish(RunOutcome.completed("end_turn")) is True
    assert run.finish(RunOutcome.failed("provider_crashed")) is False
    assert run.finish_with_error(RuntimeError("late")) is False
    await run.interrupt("too late")
    outcome = await run.wait()
    assert outcome.state == "completed" and outcome.stop_reason == "end_turn"
    assert run.finished and run.outcome is outcome


async def test_run_handle_wait_blocks_until_finished_and_can_raise() -> None:
    run = _Run()
    with anyio.move_on_after(0.05) as scope:
        await run.wait()
    assert scope.cancelled_caught
    run.finish_with_error(ProviderFailure("provider_failed", "log only"))
    with pytest.raises(ProviderFailure):
        await run.wait()


# --------------------------------------------------------------------------- tasks


async def test_a_failing_supervised_task_becomes_the_failure_callback_and_does_not_escape(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures: list[tuple[str, str]] = []
    survivor_done = anyio.Event()
    caplog.set_level(logging.DEBUG, logger=LOG.name)

    async def boom() -> None:
        await anyio.sleep(0)
        raise ValueError("token sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123 leaked")

    async def classified() -> None:
        raise ProviderFailure("provider_crashed", "gone")

    async def survivor() -> None:
        await anyio.sleep(0.05)
        survivor_done.set()

    async with anyio.create_task_group() as tg:
        tasks = TaskSupervisor(
            tg, LOG, owner="test session", on_failure=lambda c, d: failures.append((c, d))
        )
        tasks.start(survivor)
        tasks.start(boom, name="reader")
        tasks.start(classified)
    # The task group ended normally: nothing escaped, the other task ran to its end.
    assert survivor_done.is_set()
    assert sorted(code for code, _ in failures) == ["provider_contract", "provider_crashed"]
    assert ("provider_contract", "reader failed (ValueError)") in failures
    assert tasks.active == 0
    text = caplog.text
    assert "reader failed (ValueError)" in text
    assert "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123" not in text  # redacted


async def test_a_failure_callback_that_raises_is_contained() -> None:
    def bad_callback(code: str, detail: str) -> None:
        raise RuntimeError("callback bug")

    async def boom() -> None:
        raise KeyError("x")

    async with anyio.create_task_group() as tg:
        tasks = TaskSupervisor(tg, LOG, owner="t", on_failure=bad_callback)
        tasks.start(boom)


async def test_cancel_all_ends_every_task_and_those_started_later() -> None:
    ended: list[str] = []

    async def forever(name: str) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            ended.append(name)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tasks = TaskSupervisor(tg, LOG, owner="t")
            tasks.start(forever, "a")
            tasks.start(forever, "b")
            await anyio.sleep(0.01)
            assert tasks.active == 2
            tasks.cancel_all()
            tasks.start(forever, "late")
    assert sorted(ended) == ["a", "b", "late"]


# --------------------------------------------------------------------------- probe


async def test_probe_returns_the_output_of_a_real_child() -> None:
    out = await run_probe(
        [sys.executable, "-c", "import sys; print('v1.2.3'); print(sys.stdin.read() == '')"],
        env=_env(),
    )
    assert out == "v1.2.3\nTrue\n"  # stdin was closed: the child read EOF at once


async def test_probe_bounds_the_output() -> None:
    script = "import sys\nwhile True: sys.stdout.write('x' * 65536); sys.stdout.flush()"
    started = time.monotonic()
    out = await run_probe([sys.executable, "-c", script], env=_env(), max_output=1000)
    assert out == "x" * 1000
    assert time.monotonic() - started < 8


async def test_probe_bounds_the_time() -> None:
    started = time.monotonic()
    out = await run_probe(
        [sys.executable, "-c", "import time; print('partial', flush=True); time.sleep(60)"],
        env=_env(),
        timeout=0.5,
    )
    assert out is None
    assert time.monotonic() - started < 6


async def test_probe_of_a_missing_executable_is_none(tmp_path: Any) -> None:
    assert await run_probe([str(tmp_path / "no-such-cli"), "--version"], env=_env()) is None


async def test_probe_never_takes_a_shell_string() -> None:
    with pytest.raises(TypeError):
        await run_probe("echo hi", env=_env())


# --------------------------------------------------------------------------- ndjson + resident


async def test_resident_child_lines_exit_watcher_and_stop() -> None:
    script = (
        "import sys\n"
        "sys.stdout.write('{\"a\": 1}\\n\\n' + 'y' * 5000 + '\\n{\"b\": 2}\\r\\n{\"cut')\n"
        "sys.stdout.flush()\n"
    )
    frames: list[bytes | FramingError] = []
    held_open: list[int] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tasks = TaskSupervisor(tg, LOG, owner="t")
            spec = ProcessSpec((sys.executable, "-c", script), cwd=None, env=_env(), name="kid")
            resident = await start_resident(
                spec, tg, log=LOG, label="kid", missing="python", graces=StopGraces(0.5, 0.5, 1)
            )

            async def handle(frame: bytes | FramingError) -> None:
                frames.append(frame)

            async def reader() -> None:
                try:
                    await read_ndjson(resident.child.stdout, handle, max_line=1024)
                finally:
                    resident.mark_output_ended()

            tasks.start(reader)
            resident.watch_exit(tasks, drain_grace=2.0, on_held_open=held_open.append)
            await resident.output_ended.wait()
            assert await resident.stop() == 0
            assert resident.stopping
    lines = [f for f in frames if isinstance(f, bytes)]
    errors = [f for f in frames if isinstance(f, FramingError)]
    # Blank line skipped, CR dropped, the unterminated last line dropped, the long one
    # reported as too large.
    assert lines == [b'{"a": 1}', b'{"b": 2}']
    assert [e.reason for e in errors] == ["too_large"]
    assert held_open == []


async def test_exit_watcher_ends_output_held_open_by_a_grandchild() -> None:
    # The child exits at once but leaves a grandchild holding its stdout open.
    script = (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
    )
    held_open: list[int] = []
    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tasks = TaskSupervisor(tg, LOG, owner="t")
            spec = ProcessSpec((sys.executable, "-c", script), cwd=None, env=_env(), name="kid")
            resident = await start_resident(spec, tg, log=LOG, label="kid", missing="python")
            resident.watch_exit(tasks, drain_grace=0.2, on_held_open=held_open.append)
            with anyio.move_on_after(5):
                while not held_open:
                    await anyio.sleep(0.05)
            await resident.stop()
    assert held_open == [0]


async def test_start_resident_reports_what_is_missing(tmp_path: Any) -> None:
    spec = ProcessSpec((str(tmp_path / "absent"),), cwd=None, env=_env(), name="absent")
    async with anyio.create_task_group() as tg:
        with pytest.raises(BridgeError) as caught:
            await start_resident(spec, tg, log=LOG, label="absent", missing="absent cli")
    assert caught.value.error_code == "provider_unavailable"
    assert caught.value.info.details == {"missing": "absent cli", "reason": "executable_not_found"}


# --------------------------------------------------------------------------- JSON-RPC child

#: A JSON-RPC peer on stdin/stdout: ``echo`` answers its params, ``fail`` an error,
#: ``ask`` first calls the bridge's ``whoami`` and answers with its result, ``exit``
#: exits with status ``params.code`` without answering, ``hold`` starts a grandchild that
#: keeps stdout open and exits, ``sleep`` never answers.  It speaks as it is spoken to
#: (with the ``"jsonrpc"`` member or without).  Given a path as its argument, it writes
#: there the notifications it receives.
_PEER = """
import json, subprocess, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "method" in msg and "id" not in msg and len(sys.argv) > 1:
        with open(sys.argv[1], "a") as fh:
            fh.write(msg["method"] + "\\n")
    if "method" not in msg or "id" not in msg:
        continue
    m, i, params = msg["method"], msg["id"], msg.get("params")
    v = {"jsonrpc": "2.0"} if "jsonrpc" in msg else {}
    if m == "echo":
        out = {**v, "id": i, "result": params}
    elif m == "fail":
        out = {**v, "id": i, "error": {"code": -32000, "message": "no such thing"}}
    elif m == "ask":
        print(json.dumps({**v, "id": "q", "method": "whoami", "params": {}}), flush=True)
        reply = json.loads(sys.stdin.readline())
        out = {**v, "id": i, "result": reply.get("result")}
    elif m == "exit":
        sys.stderr.write("going away\\n")
        sys.exit(params["code"])
    elif m == "hold":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        sys.exit(0)
    else:
        continue
    print(json.dumps(out), flush=True)
"""


def _rpc_spec(argv: tuple[str, ...] = (sys.executable, "-c", _PEER), **over: Any) -> RpcChildSpec:
    fields: dict[str, Any] = {
        "argv": argv,
        "cwd": None,
        "env": _env(),
        "label": "peer",
        "name": "peer",
        "missing": "python",
        "option": "args",
        "jsonrpc": False,
        "graces": StopGraces(0.5, 0.5, 1.0),
        "drain_grace": 0.2,
    }
    fields.update(over)
    return RpcChildSpec(**fields)


async def test_rpc_child_calls_serves_and_classifies_failures() -> None:
    served: list[RpcChild] = []

    async def serve(child: RpcChild) -> None:
        await child.serve()
        served.append(child)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tasks = TaskSupervisor(tg, LOG, owner="t")
            methods = {"whoami": Method(lambda _p: {"me": "bridge"})}
            child = await start_rpc_child(
                _rpc_spec(), tg, tasks, log=LOG, methods=methods, notifications={}, serve=serve
            )
            assert await child.call("echo", {"x": 1}, timeout=5) == {"x": 1}
            # The child's request is served while ours waits.
            assert await child.call("ask", {}, timeout=5) == {"me": "bridge"}
            with pytest.raises(RpcError) as caught:
                await child.call("fail", {}, timeout=5)
            # The peer's own error is the adapter's to classify.
            assert await child.failure(caught.value, "fail", exit_is_unavailable=True) is None
            with pytest.raises(RpcError) as caught:
                await child.call("sleep", {}, timeout=0.2)
            timeout = await child.failure(caught.value, "sleep", exit_is_unavailable=True)
            assert timeout is not None and timeout.error_code == "provider_timeout"
            # Cancelling the caller settles the request; the connection goes on.
            with anyio.move_on_after(0.1):
                await child.call("sleep", {}, timeout=5)
            assert len(child.conn.ledger) == 0
            assert await child.call("echo", [2], timeout=5) == [2]
            assert not child.closed
            with pytest.raises(RpcError) as caught:
                await child.call("exit", {"code": 3}, timeout=5)
            gone = await child.failure(caught.value, "exit", exit_is_unavailable=True)
            assert gone is not None and gone.error_code == "provider_unavailable"
            again = await child.failure(caught.value, "exit", exit_is_unavailable=False)
            assert again is not None and again.error_code == "provider_crashed"
            with anyio.fail_after(5):
                await child.resident.output_ended.wait()
            assert child.closed
            await child.stop()
            assert child.resident.stopping
    assert served == [child]


async def test_rpc_child_closes_a_connection_held_open_by_a_grandchild() -> None:
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tasks = TaskSupervisor(tg, LOG, owner="t")
            child = await start_rpc_child(
                _rpc_spec(),
                tg,
                tasks,
                log=LOG,
                methods={},
                notifications={},
                serve=lambda c: c.serve(),
            )
            with pytest.raises(RpcError) as caught:
                await child.call("hold", {}, timeout=10)
            crashed = await child.failure(caught.value, "hold", exit_is_unavailable=False)
            assert crashed is not None and crashed.error_code == "provider_crashed"
            with anyio.fail_after(5):
                await child.resident.output_ended.wait()
            assert child.conn.closed
            await child.stop()


async def test_start_rpc_child_classifies_what_cannot_start(tmp_path: Any) -> None:
    async def serve(child: RpcChild) -> None:
        await child.serve()

    async with anyio.create_task_group() as tg:
        tasks = TaskSupervisor(tg, LOG, owner="t")
        with pytest.raises(BridgeError) as caught:
            await start_rpc_child(
                _rpc_spec((sys.executable, "nul\0byte")),
                tg,
                tasks,
                log=LOG,
                methods={},
                notifications={},
                serve=serve,
            )
        assert caught.value.error_code == "invalid_option"
        assert caught.value.info.details == {"option": "args"}
        with pytest.raises(BridgeError) as caught:
            await start_rpc_child(
                _rpc_spec((str(tmp_path / "absent"),)),
                tg,
                tasks,
                log=LOG,
                methods={},
                notifications={},
                serve=serve,
            )
        assert caught.value.error_code == "provider_unavailable"
        assert caught.value.info.details == {"missing": "python", "reason": "executable_not_found"}


async def test_probe_rpc_answers_or_says_none(tmp_path: Any) -> None:
    def spec(*argv: str) -> ProcessSpec:
        return ProcessSpec(argv, cwd=None, env=_env(), name="peer (probe)")

    async def echo(conn: Connection) -> Any:
        return await conn.request("echo", {"ok": True})

    async def sleep(conn: Connection) -> Any:
        return await conn.request("sleep", {})

    async def fail(conn: Connection) -> Any:
        return await conn.request("fail", {})

    peer = spec(sys.executable, "-c", _PEER)
    with anyio.fail_after(20):
        assert await probe_rpc(peer, echo, jsonrpc=True, timeout=5, log=LOG) == {"ok": True}
        started = time.monotonic()
        assert await probe_rpc(peer, sleep, jsonrpc=True, timeout=0.3, log=LOG) is None
        assert time.monotonic() - started < 5
        assert await probe_rpc(peer, fail, jsonrpc=True, timeout=5, log=LOG) is None
        absent = spec(str(tmp_path / "absent"))
        assert await probe_rpc(absent, echo, jsonrpc=True, timeout=5, log=LOG) is None


async def test_a_probe_that_times_out_tells_the_child_nothing(tmp_path: Any) -> None:
    """``request_quietly``: the bridge's ``$/cancelRequest`` is no ACP or Codex method,
    so a probe that gives up stops the child without sending it (a plain request
    would: the control below)."""
    heard = tmp_path / "notifications"

    async def quiet(conn: Connection) -> Any:
        return await request_quietly(conn, "sleep", {})

    async def loud(conn: Connection) -> Any:
        return await conn.request("sleep", {})

    peer = ProcessSpec(
        (sys.executable, "-c", _PEER, str(heard)), cwd=None, env=_env(), name="peer (probe)"
    )
    with anyio.fail_after(20):
        assert await probe_rpc(peer, quiet, jsonrpc=True, timeout=0.3, log=LOG) is None
        assert not heard.exists()
        assert await probe_rpc(peer, loud, jsonrpc=True, timeout=0.3, log=LOG) is None
    assert heard.read_text() == "$/cancelRequest\n"


# --------------------------------------------------------------------------- tool calls


def test_tool_calls_start_once_end_once_and_fail_the_open_ones_in_order() -> None:
    tools = ToolCalls()
    first = tools.start("a", "Bash", detail=["change"])
    assert first is not None and (first.id, first.name, first.detail) == ("a", "Bash", ["change"])
    assert tools.start("a", "Other") is None  # started before: nothing to report again
    assert tools.name("a", "tool") == "Bash" and tools.name("zz", "tool") == "tool"
    assert tools.get("a") is first and tools.get("zz") is None
    assert tools.start("b", "Read") is not None and tools.start("c", "Edit") is not None
    assert "b" in tools and "zz" not in tools and len(tools) == 3
    assert tools.end("b") is True
    assert tools.end("b") is False and tools.end("zz") is False
    assert tools.is_ended("b") and not tools.is_ended("a") and not tools.is_ended("zz")
    assert tools.fail_open() == [
        ToolActivity("a", "Bash", "failed"),
        ToolActivity("c", "Edit", "failed"),
    ]
    assert tools.fail_open() == []
    assert tools.end("a") is False


# --------------------------------------------------------------------------- approvals


def test_approval_verdicts_and_modes() -> None:
    def answered(decision: Any, mode: Any = "once") -> InteractionOutcome:
        return InteractionOutcome("responded", ApprovalAnswer(decision=decision, mode=mode))

    assert approval_verdict(answered("allow")) == "allow_once"
    assert approval_verdict(answered("allow", "session")) == "allow_session"
    assert approval_verdict(answered("allow", "session"), session_ok=False) == "allow_once"
    assert approval_verdict(answered("deny", "session")) == "deny"
    assert approval_verdict(InteractionOutcome("cancelled")) == "cancelled"
    assert approval_verdict(InteractionOutcome("expired")) == "unanswered"
    assert approval_verdict(InteractionOutcome("withdrawn")) == "unanswered"
    assert is_allow("allow_once") and is_allow("allow_session")
    assert not is_allow("deny") and not is_allow("cancelled") and not is_allow("unanswered")
    assert approval_modes(True) == ("once", "session")
    assert approval_modes(False) == ("once",)
