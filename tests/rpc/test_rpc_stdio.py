"""rpc.stdio over real pipes: waiting for input with the descriptor kept registered, and
writing without waiting (issue 17)."""

from __future__ import annotations

import asyncio
import os

import anyio
import pytest

from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream


async def test_receive_waits_for_input_and_stops_watching_when_nobody_waits() -> None:
    r, w = os.pipe()
    stream = FdReceiveStream(r)
    try:
        async with anyio.create_task_group() as tg:
            got: list[bytes] = []

            async def read_one() -> None:
                got.append(await stream.receive())

            tg.start_soon(read_one)
            await anyio.sleep(0.01)
            assert stream._watching  # waiting: registered with the loop
            os.write(w, b"abc")
        assert got == [b"abc"]
        # Input while nobody waits: the next turn of the loop stops watching (no spinning).
        os.write(w, b"def")
        for _ in range(5):
            await asyncio.sleep(0)
        assert not stream._watching
        assert await stream.receive() == b"def"
        os.close(w)
        w = -1
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
    finally:
        await stream.aclose()
        assert not stream._watching
        os.close(r)
        if w >= 0:
            os.close(w)


async def test_receive_cancelled_while_waiting_leaves_the_stream_usable() -> None:
    r, w = os.pipe()
    stream = FdReceiveStream(r)
    try:
        with anyio.move_on_after(0.02):
            await stream.receive()
        os.write(w, b"x")
        assert await stream.receive() == b"x"
    finally:
        await stream.aclose()
        os.close(r)
        os.close(w)


async def test_send_nowait_writes_what_the_pipe_takes_and_reports_a_gone_reader() -> None:
    r, w = os.pipe()
    stream = FdSendStream(w)
    try:
        data = b"y" * (8 << 20)  # more than any pipe holds
        written = stream.send_nowait(data)
        assert 0 < written < len(data)
        assert stream.send_nowait(b"z") == 0  # full: nothing taken, nothing raised
        os.close(r)
        r = -1
        with pytest.raises(anyio.BrokenResourceError):
            stream.send_nowait(b"z")
    finally:
        await stream.aclose()
        os.close(w)
        if r >= 0:
            os.close(r)


async def test_pump_hands_each_read_to_the_reader_until_it_pauses_then_eof() -> None:
    r, w = os.pipe()
    stream = FdReceiveStream(r, prefix=b"pre")
    got: list[bytes] = []
    try:
        os.write(w, b"one")

        def take(data: bytes) -> bool:
            got.append(data)
            return b"stop" not in data

        async with anyio.create_task_group() as tg:

            async def pump() -> None:
                await stream.pump(take)

            tg.start_soon(pump)
            await anyio.sleep(0.02)
            assert got == [b"pre", b"one"]  # the prefix first, then each read as it came
            assert stream._watching
            os.write(w, b"stop")
        # ``take`` said stop: the pump returned and no longer watches the descriptor.
        assert got == [b"pre", b"one", b"stop"]
        assert not stream._watching
        os.write(w, b"after")
        os.close(w)
        w = -1
        with pytest.raises(anyio.EndOfStream):
            await stream.pump(take)  # goes on where it stopped, then EOF
        assert got[3:] == [b"after"]
        assert not stream._watching
    finally:
        await stream.aclose()
        os.close(r)
        if w >= 0:
            os.close(w)


async def test_pump_raises_what_the_reader_raised_and_cancelling_it_stops_watching() -> None:
    r, w = os.pipe()
    stream = FdReceiveStream(r)

    def boom(data: bytes) -> bool:
        raise ValueError(data.decode())

    try:
        os.write(w, b"bad")
        with pytest.raises(ValueError, match="bad"):
            await stream.pump(boom)
        assert not stream._watching
        with anyio.move_on_after(0.02):
            await stream.pump(boom)  # nothing to read: waits until cancelled
        assert not stream._watching
        os.write(w, b"x")
        assert await stream.receive() == b"x"
    finally:
        await stream.aclose()
        os.close(r)
        os.close(w)


async def test_pump_reads_a_descriptor_the_loop_cannot_watch() -> None:
    # /dev/zero can be polled by our test (a character device) but not registered with
    # epoll: the pump reads it in a loop instead, and still stops when told to.
    fd = os.open("/dev/zero", os.O_RDONLY)
    stream = FdReceiveStream(fd)
    got: list[int] = []
    try:

        def take(data: bytes) -> bool:
            got.append(len(data))
            return len(got) < 3

        with anyio.fail_after(5):
            await stream.pump(take, 1024)
        assert got == [1024, 1024, 1024]
        assert not stream._watching
    finally:
        await stream.aclose()
        os.close(fd)
