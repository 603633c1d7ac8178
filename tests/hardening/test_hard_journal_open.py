"""Opening a journal after a disk-full episode (issue 30, item 1).

The rule: a refusal to open is certain, says what is wrong, never advises discarding data
that SQLite can read, and a full disk is reported as full.

The case, on a real filesystem filled for real: a run streams, the disk fills, the bridge
shuts down while it is full.  Its last connection's checkpoint is cut short by the full
disk: page 1 of the journal file already says how many pages the journal has, the file
was not extended, and the missing pages sit, committed, in the write-ahead log.  The
bridge used to refuse that journal as "truncated" (and, with advice to restore a backup,
to throw the history away); a restart while the disk was still full called it
"damaged".  Now a restart while full says the disk is full and changes nothing; once
space returns the journal opens with every event the host saw.
"""

from __future__ import annotations

import os
from pathlib import Path

from hardening.test_hard_storage import (
    _assert_one_line_refusal,
    fault_status,
    fill,
    journal_events,
    small_fs,
    streaming_bridge,
    until_streaming,
)
from test_journal_e2e import create, read_all, serve


def _header_pages(path: Path) -> int:
    head = path.read_bytes()[:100]
    return int.from_bytes(head[28:32], "big") * (int.from_bytes(head[16:18], "big") or 65536)


async def test_a_journal_cut_short_by_a_full_disk_opens_once_space_returns() -> None:
    script = {"runs": [{"steps": [{"type": "stream", "count": 100_000, "text": "w" * 40}]}]}
    with small_fs() as mnt:
        state = mnt / "state"
        path = state / "journal.sqlite3"
        async with streaming_bridge(state) as bridge:
            session = await create(bridge, options={"script": script})
            await bridge.result("run/start", {"sessionId": session, "input": {"text": "go"}})
            await until_streaming(bridge, session, 20_000)
            filler = fill(mnt)
            fault_status(
                await bridge.wait_for(lambda m: m.get("method") == "journal/status", timeout=60),
                "disk_full",
            )
            host_saw = journal_events(bridge, session)
        # the shutdown's checkpoint could not finish: the file is shorter than page 1 says
        assert path.stat().st_size < _header_pages(path), "the checkpoint was not cut short"
        assert os.path.getsize(str(path) + "-wal") > 0
        kept = path.read_bytes()

        # still full: refused, saying so, and nothing advised away or changed
        line = _assert_one_line_refusal(serve(state), "full", str(path))
        for wrong in ("damaged", "truncated", "backup", "recover", "delete"):
            assert wrong not in line, line
        assert path.read_bytes() == kept

        filler.unlink()  # space returns: the same journal opens, every event is there
        async with streaming_bridge(state) as again:
            stored = await read_all(again, session)
        assert stored[: len(host_saw)] == host_saw
        assert len(host_saw) >= 20_000
    assert b"Traceback" not in bridge.stderr
