"""A session's tasks run in the runtime's task group (:mod:`agent_bridge.runtime.session_tasks`):
an idle session has no task of its own, its tasks end when it closes, and ``finished``
says when the last one has."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import anyio.abc
import pytest

from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Runtime
from agent_bridge.runtime.flag import Flag
from agent_bridge.runtime.session_tasks import SessionTasks

_IDLE: dict[str, Any] = {"script": {"steps": []}}


async def test_idle_sessions_add_no_task() -> None:
    async with Runtime(ProviderRegistry.default()) as runtime:
        await runtime.create_session("scripted", options=_IDLE)
        before = len(asyncio.all_tasks())
        for _ in range(20):
            await runtime.create_session("scripted", options=_IDLE)
        await anyio.sleep(0)
        assert len(asyncio.all_tasks()) == before


async def test_tasks_end_when_cancelled_and_finished_says_so() -> None:
    ended: list[str] = []
    async with anyio.create_task_group() as group:
        finished = Flag()
        tasks = SessionTasks(group, finished)

        async def forever(name: str) -> None:
            try:
                await anyio.sleep_forever()
            finally:
                ended.append(name)

        async def ready(*, task_status: anyio.abc.TaskStatus[str]) -> None:
            task_status.started("up")
            await forever("started")

        tasks.start_soon(forever, "soon")
        assert await tasks.start(ready) == "up"
        tasks.create_task(forever("created"))
        await anyio.sleep(0)
        assert not finished.is_set()
        tasks.cancel()
        with anyio.fail_after(5):
            await finished.wait()
        assert sorted(ended) == ["created", "soon", "started"]
        # a task started after cancel is cancelled as it starts
        tasks.start_soon(forever, "late")
        await anyio.sleep(0.01)
        assert "late" in ended
        assert finished.is_set()


async def test_cancel_before_the_task_runs_still_waits_for_it() -> None:
    ran: list[bool] = []
    async with anyio.create_task_group() as group:
        finished = Flag()
        tasks = SessionTasks(group, finished)

        async def body() -> None:
            ran.append(True)
            await anyio.sleep_forever()

        tasks.start_soon(body)
        tasks.cancel()  # the task has not started yet
        assert not finished.is_set()
        with anyio.fail_after(5):
            await finished.wait()
    assert ran in ([], [True])


async def test_no_tasks_finished_at_once() -> None:
    async with anyio.create_task_group() as group:
        finished = Flag()
        SessionTasks(group, finished).cancel()
        assert finished.is_set()


async def test_a_failing_task_ends_the_runtime_group_as_before() -> None:
    async def boom() -> None:
        raise RuntimeError("boom")

    with pytest.raises(BaseExceptionGroup) as caught:
        async with anyio.create_task_group() as group:
            SessionTasks(group, Flag()).start_soon(boom)
            await anyio.sleep_forever()
    assert isinstance(caught.value.exceptions[0], RuntimeError)


async def test_not_a_context_manager_and_no_common_scope() -> None:
    async with anyio.create_task_group() as group:
        tasks: Any = SessionTasks(group, Flag())
        with pytest.raises(RuntimeError):
            async with tasks:
                pass
        with pytest.raises(AttributeError):
            _ = tasks.cancel_scope


async def test_closing_a_session_ends_its_provider_tasks() -> None:
    async with Runtime(ProviderRegistry.default()) as runtime:
        info = await runtime.create_session("scripted", options=_IDLE)
        session = runtime.sessions[info.session_id]
        assert session.tg is not None
        stopped = anyio.Event()

        async def provider_task() -> None:
            try:
                await anyio.sleep_forever()
            finally:
                stopped.set()

        session.tg.start_soon(provider_task)
        await anyio.sleep(0)
        await runtime.close_session(info.session_id)
        assert stopped.is_set()
        assert session.finished.is_set()


async def test_a_task_the_ended_group_refuses_is_not_counted() -> None:
    async with anyio.create_task_group() as group:
        finished = Flag()
        tasks = SessionTasks(group, finished)

    async def body() -> None:
        await anyio.sleep(0)

    coro = body()
    with pytest.raises(RuntimeError):
        tasks.create_task(coro)
    coro.close()
    tasks.cancel()
    assert finished.is_set()
