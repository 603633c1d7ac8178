"""What only the PostgreSQL journal has: an address checked for credentials, the bridge
served over it end to end, and fencing (an owner whose lease was taken over never writes
again).  The shared contract is tests/test_journal_contract.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from bridge_client import ROOT, script_session
from conftest import running_bridge

from agent_bridge.dburl import check_url
from agent_bridge.journal import SessionRecord, open_history
from agent_bridge.journal.errors import JournalError
from agent_bridge.journal.postgres import PgJournal, open_pg_journal


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://alice:s3cret-pw@db.example/agents",
        "postgres://alice:s3cret-pw@/agents?host=/run/pg",
        "postgresql://alice@db/agents?sslmode=require&password=s3cret-pw",
        "postgresql:///agents?PASSWORD=s3cret-pw",
        # libpq decodes the name of a parameter as it decodes its value
        # (on a socket that is not there: refused or not, nothing leaves the machine)
        "postgresql://alice@/agents?host=/nonexistent&%70assword=s3cret-pw",
        "postgresql://alice@/agents?host=/nonexistent&pass%77ORD=s3cret-pw",
    ],
)
def test_a_password_in_the_address_is_refused_without_repeating_it(url: str) -> None:
    with pytest.raises(ValueError, match="password file") as err:
        check_url(url)
    assert "s3cret" not in str(err.value)
    proc = subprocess.run(
        [sys.executable, "-m", "agent_bridge", "serve", "--journal", url],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert "--journal" in proc.stderr and "password file" in proc.stderr
    assert "s3cret" not in proc.stderr + proc.stdout


def test_addresses_without_a_password_pass_and_others_are_not_postgresql() -> None:
    for url in (
        "postgresql://alice@db.example:5433/agents?sslmode=verify-full",
        "postgresql:///agents?host=/run/postgresql&service=fleet",
        "postgres://@/agents",
    ):
        assert check_url(url) == url
    with pytest.raises(ValueError, match="postgresql://"):
        check_url("mysql://db/agents")


def test_an_unreachable_database_is_one_line_naming_it_without_its_query(tmp_path: Any) -> None:
    url = f"postgresql://nobody@/nodb?host={tmp_path}&connect_timeout=2"
    with pytest.raises(JournalError) as err:
        open_history(None, journal=url)
    text = str(err.value)
    assert text.startswith("cannot open the journal postgresql://nobody@/nodb:")
    assert "\n" not in text and str(tmp_path) not in text.split(":", 2)[1]


async def test_serve_with_a_postgresql_journal_runs_and_a_second_bridge_reads_it(
    pg_url: str,
) -> None:
    async with running_bridge("newline", "--journal", pg_url, "--node", "alpha") as bridge:
        params = script_session([{"type": "stream", "count": 300, "text": "y"}])
        session = (await bridge.result("session/create", params))["session"]["sessionId"]
        started = await bridge.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        done = await bridge.event("run.completed", timeout=30)
        assert done["runId"] == started["runId"]
    async with running_bridge("newline", "--journal", pg_url) as other:
        listed = await other.result("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [session]
        page = await other.result("events/read", {"sessionId": session, "limit": 1000})
        kinds = [e["payload"]["type"] for e in page["events"]]
        assert kinds == ["run.started"] + ["text.delta"] * 300 + ["run.completed", "session.closed"]
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT count(*) FROM owners").fetchone()
        assert row == (0,)  # both left the fleet on exit


async def test_an_owner_whose_lease_was_taken_over_never_writes_again(pg_url: str) -> None:
    first = open_pg_journal(pg_url, lease=3600, node="alpha")
    second = open_pg_journal(pg_url, lease=3600, node="beta")
    await first.start(lambda: None)
    await second.start(lambda: None)
    try:
        first.add_session(SessionRecord("ses_f", "scripted", "1", None, None, "t", "t"))
        first.append("ses_f", 1, 1, b'{"sequence":1}', 0)
        await first.committed_through(first.mark())
        assert await second.claim("ses_f") == ("in_use", None)  # alpha's lease holds
        with psycopg.connect(pg_url, autocommit=True) as conn:  # alpha's lease runs out
            conn.execute(
                "UPDATE owners SET expires_at = now() - interval '1 second' WHERE token = %s",
                (first.owner_token,),
            )
        status, record = await second.claim("ses_f")
        assert status == "claimed" and record is not None
        assert record.last_sequence == 2  # session.closed bridge_crashed was appended
        # alpha does not know yet: its next write is refused by the database
        first.append("ses_f", 2, 1, b'{"sequence":2,"from":"alpha"}', 0)
        with pytest.raises(JournalError):
            with anyio.fail_after(10):
                await first.committed_through(first.mark())
        assert first.health == "broken"
        events = await second.read_events("ses_f", 1, 10)
        assert len(events) == 2 and b"alpha" not in events[1]
        assert b"bridge_crashed" in events[1]
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_member_on_the_same_node_sees_a_dead_owner_at_once(pg_url: str) -> None:
    """No lease wait on one machine: the owner's process is gone and its advisory lock
    free, so its sessions are recovered when the next bridge opens the journal (the
    cross-machine case waits for the lease: test_an_owner_whose_lease_…)."""
    first = open_pg_journal(pg_url, lease=3600, node="alpha")
    assert isinstance(first, PgJournal)
    await first.start(lambda: None)
    first.add_session(SessionRecord("ses_d", "scripted", "1", None, None, "t", "t"))
    await first.committed_through(first.mark())
    # as if the process had died: its connections drop, its row stays
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE owners SET pid = 2147483646 WHERE token = %s", (first.owner_token,))
    first._beat_stop.set()
    lease_conn: Any = first._lease_conn
    lease_conn.close()
    other = open_pg_journal(pg_url, lease=3600, node="alpha")
    try:
        assert other.recovered == ["ses_d"]
    finally:
        await other.aclose()
        first._writer.halt()
        await first.aclose()


async def test_a_commit_of_many_sessions_notifies_in_payloads_postgresql_accepts(
    pg_url: str,
) -> None:
    """NOTIFY payloads are limited to 8000 bytes; one commit of 600 sessions' events
    names them all (in several notifications) and a follower of the last one wakes."""
    journal = open_pg_journal(pg_url)
    follower = open_pg_journal(pg_url)
    await journal.start(lambda: None)
    await follower.start(lambda: None)
    try:
        ids = [f"ses_{i:04d}_{'x' * 20}" for i in range(600)]
        for sid in ids:
            journal.add_session(SessionRecord(sid, "scripted", "1", None, None, "t", "t"))
        await journal.committed_through(journal.mark())
        async with anyio.create_task_group() as tg:
            tg.start_soon(follower.wait_committed, ids[-1], 0)
            await anyio.sleep(0.5)  # it listens, and finds nothing committed yet
            for sid in ids:
                journal.append(sid, 1, 1, b'{"sequence":1}', 0)
            with anyio.fail_after(20):
                await journal.committed_through(journal.mark())
        assert journal.health == "ok" and journal.committed == 600
    finally:
        await follower.aclose()
        await journal.aclose()


async def test_the_configuration_file_can_name_the_journal(pg_url: str, tmp_path: Any) -> None:
    """``[journal] url/node/lease_seconds/providers/workspaces`` in the configuration
    file, no flag: the member records what it serves (the roots as real paths)."""
    config = tmp_path / "config.toml"
    root = tmp_path / "work"
    (root / "here").mkdir(parents=True)
    config.write_text(
        f'[journal]\nurl = "{pg_url}"\nnode = "from-config"\nlease_seconds = 7\n'
        f'providers = ["scripted", "codex"]\nworkspaces = ["{root}"]\n'
    )
    async with running_bridge("newline", env={"AGENT_BRIDGE_CONFIG": str(config)}) as bridge:
        params = script_session([{"type": "text", "text": "hi"}])
        params["workspace"] = str(root / "here")
        session = (await bridge.result("session/create", params))["session"]["sessionId"]
        with psycopg.connect(pg_url) as conn:
            row = conn.execute(
                "SELECT o.node, s.session_id, o.expires_at - now() < interval '8 seconds', "
                "o.providers, o.roots FROM sessions s JOIN owners o ON o.token = s.owner"
            ).fetchone()
        assert row == ("from-config", session, True, ["scripted", "codex"], [str(root.resolve())])
        # outside the declared folders, and no other member: refused, naming why
        outside = await bridge.call(
            "session/create", script_session([]) | {"workspace": str(tmp_path)}, check=False
        )
        assert outside["error"]["data"]["code"] == "workspace_invalid"
        assert "from-config" in outside["error"]["data"]["details"]["reason"]


async def test_a_bad_list_in_the_configuration_file_is_named(pg_url: str, tmp_path: Any) -> None:
    """``[journal] workspaces`` with a relative folder: the bridge does not start and
    says which key is wrong."""
    config = tmp_path / "config.toml"
    config.write_text(f'[journal]\nurl = "{pg_url}"\nworkspaces = ["relative/dir"]\n')
    env = {**os.environ, "AGENT_BRIDGE_CONFIG": str(config)}
    done = subprocess.run(
        [sys.executable, "-m", "agent_bridge", "serve"],
        env=env,
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert b"[journal] workspaces: must be absolute folders" in done.stderr


def test_a_version_1_database_is_upgraded_and_a_newer_one_refused(pg_url: str) -> None:
    """Schema 2 (Zstandard blocks): a database a version-1 bridge created is marked 2 when
    a bridge of this version opens it (a version-1 bridge then refuses it as newer, never
    taking its blocks for damage); one marked newer than this bridge reads is refused."""
    from agent_bridge.journal.pg_schema import PG_SCHEMA_VERSION, connect_pg, create_schema

    assert PG_SCHEMA_VERSION == 2
    conn = connect_pg(pg_url)
    try:
        create_schema(conn, "db")
        with conn.transaction():
            conn.execute("UPDATE journal_meta SET value = '1' WHERE key = 'schema'")
        create_schema(conn, "db")
        row = conn.execute("SELECT value FROM journal_meta WHERE key = 'schema'").fetchone()
        assert row is not None and row[0] == "2"
        with conn.transaction():
            conn.execute("UPDATE journal_meta SET value = '3' WHERE key = 'schema'")
        with pytest.raises(JournalError, match="newer agent-bridge"):
            create_schema(conn, "db")
    finally:
        conn.close()


def test_a_version_1_database_with_live_older_members_is_not_upgraded(
    pg_url: str, tmp_path: Path
) -> None:
    """A rolling upgrade: members of a version-1 bridge are live on the database (their
    lease holds) when a bridge of this version starts.  Upgrading it under them would
    have them take the first Zstandard block they read for damage and stop serving the
    whole journal (seen with a real 2934ae1 member: history_corrupt for every request,
    "restart the bridge with another --state-dir"); so this bridge refuses to start,
    with one line naming them, and the database stays at 1.  Once their leases are gone
    it is upgraded."""
    from agent_bridge.journal.pg_schema import connect_pg, create_schema

    conn = connect_pg(pg_url)
    try:
        create_schema(conn, "db")
        with conn.transaction():
            conn.execute("UPDATE journal_meta SET value = '1' WHERE key = 'schema'")
            conn.execute(
                "INSERT INTO owners (token, node, pid, started_at, expires_at) VALUES "
                "('old-token', 'old-node', 1, 'x', now() + interval '1 hour')"
            )
    finally:
        conn.close()
    done = subprocess.run(
        [sys.executable, "-m", "agent_bridge", "serve", "--journal", pg_url, "--node", "new"],
        input=b"",
        capture_output=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "older agent-bridge" in lines[0] and "old-node" in lines[0], lines
    assert b"Traceback" not in done.stderr
    conn = connect_pg(pg_url)
    try:
        row = conn.execute("SELECT value FROM journal_meta WHERE key = 'schema'").fetchone()
        assert row is not None and row[0] == "1"
        with conn.transaction():
            conn.execute("UPDATE owners SET expires_at = now() - interval '1 second'")
        create_schema(conn, "db")
        row = conn.execute("SELECT value FROM journal_meta WHERE key = 'schema'").fetchone()
        assert row is not None and row[0] == "2"
    finally:
        conn.close()


#: every table of the journal (what ``pg_dump`` locks ``ACCESS SHARE`` for its whole run)
_JOURNAL_TABLES = (
    "journal_meta",
    "sessions",
    "event_blocks",
    "raw_records",
    "raw_links",
    "runs",
    "interactions",
    "receipts",
    "owners",
    "blobs",
    "blob_refs",
    "commands",
    "native_bindings",
    "fork_points",
    "attachments",
)


async def test_a_member_starting_during_a_backup_stalls_no_member(pg_url: str) -> None:
    """A backup holds ``ACCESS SHARE`` on every table of the journal for its whole run.
    A member that starts meanwhile took ``SHARE`` and queued for ``ACCESS EXCLUSIVE``
    on them (its ``CREATE INDEX``/``ALTER TABLE … IF NOT EXISTS`` lock even when there
    is nothing to do), so every commit of every other member waited behind it until
    the backup ended: a running member's host got no answer to ``run/start`` for 20 s,
    the starting member no answer to ``initialize``.  On a database at this schema
    version a member runs no DDL: both answer at once, the backup still running."""
    async with running_bridge("newline", "--journal", pg_url, "--node", "alpha") as alpha:
        params = script_session([{"type": "stream", "count": 5, "text": "y"}])
        session = (await alpha.result("session/create", params))["session"]["sessionId"]
        backup = psycopg.connect(pg_url)  # its transaction stays open until closed
        try:
            for table in _JOURNAL_TABLES:
                backup.execute(f"SELECT count(*) FROM {table}")
            # running_bridge waits for the new member's initialize answer (10 s at most)
            async with running_bridge("newline", "--journal", pg_url, "--node", "beta"):
                started = await alpha.result(
                    "run/start", {"sessionId": session, "input": {"text": "x"}}
                )
                done = await alpha.event("run.completed", timeout=10)
                assert done["runId"] == started["runId"]
                assert backup.info.transaction_status.name == "INTRANS"  # still running
        finally:
            backup.close()


async def test_a_role_that_may_only_read_and_write_the_tables_can_be_a_member(
    pg_cluster: Any, pg_url: str
) -> None:
    """Give each member a role with just the rights to read and write the journal's
    tables (docs/fleet.md, Trust), once a role that owns them created them: such a
    member was refused at every start ("must be owner of table sessions": the DDL ran
    each time).  A role that may not create missing tables is told so, in one line."""
    async with running_bridge("newline", "--journal", pg_url, "--node", "owner"):
        pass  # the tables, created by the role that owns them
    role, as_member = _member_role(pg_url)
    async with running_bridge("newline", "--journal", as_member, "--node", "m") as bridge:
        params = script_session([{"type": "stream", "count": 3, "text": "y"}])
        session = (await bridge.result("session/create", params))["session"]["sessionId"]
        await bridge.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        await bridge.event("run.completed", timeout=30)
    empty = pg_cluster.new_database()  # where the role may not create tables
    with psycopg.connect(empty, autocommit=True) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    with pytest.raises(JournalError) as err:
        open_pg_journal(empty.replace("postgresql://bridge@", f"postgresql://{role}@"), node="m")
    text = str(err.value)
    assert "\n" not in text and "needs its tables created or upgraded" in text
    assert "owns them" in text


def _member_role(pg_url: str) -> tuple[str, str]:
    """A new role granted only reading and writing the journal's tables (which exist),
    and ``pg_url`` as that role."""
    role = f"member_{os.getpid()}_{os.urandom(3).hex()}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    return role, pg_url.replace("postgresql://bridge@", f"postgresql://{role}@")


async def test_write_rights_taken_back_mid_run_hold_the_run_until_granted_again(
    pg_url: str,
) -> None:
    """An operator takes the member's right to write events back mid-run (a REVOKE, a
    change of owner).  That was taken for a bug (insufficient privilege is a
    ``ProgrammingError``): a traceback in the log, ``journal/status`` ``broken``,
    ``internal`` (not retryable) for new work and the run's end never recorded, even
    once the right was granted again (only a restart helped).  It is the database
    refusing writes, as a file system remounted read-only does: ``failing``
    (``read_only``), new work refused ``journal_failing`` (retryable), and the held
    run goes on, gapless, once the right is back."""
    async with running_bridge("newline", "--journal", pg_url, "--node", "owner"):
        pass  # the tables, created by the role that owns them
    role, as_member = _member_role(pg_url)
    async with running_bridge("newline", "--journal", as_member, "--node", "m") as bridge:
        steps: list[dict[str, Any]] = [
            {"type": "stream", "count": 50, "text": "a"},
            {"type": "waitForInterrupt"},
        ]
        session = (await bridge.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        run = await bridge.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        seen = [await bridge.event("run.started", timeout=30)]
        while len(seen) < 51:
            seen.append(await bridge.event("text.delta", timeout=30))
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"REVOKE INSERT ON event_blocks FROM {role}")
        await bridge.send_request("run/interrupt", {"runId": run["runId"]})
        status = await bridge.wait_for(lambda m: m.get("method") == "journal/status", 30)
        assert status["params"] == {"state": "failing", "reason": "read_only"}
        refused = await bridge.call("session/create", script_session(steps))
        assert refused["error"]["data"]["code"] == "journal_failing"
        assert refused["error"]["data"]["retryable"] is True
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"GRANT INSERT ON event_blocks TO {role}")
        status = await bridge.wait_for(lambda m: m.get("method") == "journal/status", 30)
        assert status["params"] == {"state": "ok"}
        ended = await bridge.event("run.interrupted", timeout=30)
        assert ended["runId"] == run["runId"] and ended["sequence"] == 52
        page = await bridge.result("events/read", {"sessionId": session, "limit": 100})
        assert page["events"] == [*seen, ended]
        again = await bridge.result("session/create", script_session(steps))
        assert again["session"]["state"] == "active"
    assert b"Traceback" not in bridge.stderr
    assert b"read_only: permission denied for table event_blocks" in bridge.stderr


async def test_a_session_deleted_elsewhere_and_created_again_here_is_stored(
    pg_url: str,
) -> None:
    """A member wrote a session; another member deleted it, and the first creates a
    session of that id again (``session/recreate``: an ACP session's provider switched,
    placed back on it).  Its writer still held the old session's key and last sequence:
    the new session's events went under the deleted key, or were skipped as "already
    stored" (acknowledged, and not in the journal).  A new session starts afresh."""
    first = open_pg_journal(pg_url, lease=3600, node="alpha")
    second = open_pg_journal(pg_url, lease=3600, node="beta")
    await first.start(lambda: None)
    await second.start(lambda: None)
    try:
        first.add_session(SessionRecord("ses_r", "scripted", "1", None, None, "t", "t"))
        for seq in (1, 2, 3):
            first.append("ses_r", seq, 1, b'{"old":%d}' % seq, 0)
        await first.committed_through(first.mark())
        with psycopg.connect(pg_url, autocommit=True) as conn:  # closed by alpha
            conn.execute("UPDATE sessions SET owner = NULL WHERE session_id = 'ses_r'")
        assert await second.delete("ses_r") == "deleted"
        first.add_session(SessionRecord("ses_r", "codex", "1", None, None, "t", "t"))
        for seq in (1, 2):
            first.append("ses_r", seq, 1, b'{"new":%d}' % seq, 0)
        await first.committed_through(first.mark())
        assert first.health == "ok"
        assert await second.read_events("ses_r", 1, 10) == [b'{"new":1}', b'{"new":2}']
    finally:
        await first.aclose()
        await second.aclose()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        # the client key's password is a password too (sslpassword: libpq's)
        ("postgresql://alice@/agents?host=/nonexistent&sslpassword=s3cret-pw", "client key"),
        ("postgresql://alice@/agents?host=/nonexistent&SSL%70assword=s3cret-pw", "client key"),
        # a line break split the one-line message naming the database (a forged log line)
        ("postgresql://alice@/agents\nFORGED s3cret-pw?host=/nonexistent", "control character"),
    ],
)
def test_a_key_password_or_a_control_character_in_the_address_is_refused(
    url: str, says: str
) -> None:
    with pytest.raises(ValueError, match=says) as err:
        check_url(url)
    assert "s3cret" not in str(err.value)
    proc = subprocess.run(
        [sys.executable, "-m", "agent_bridge", "serve", "--journal", url],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and says in proc.stderr
    assert "s3cret" not in proc.stderr + proc.stdout
    assert proc.stderr.count("\n") == 1


def test_an_address_libpq_cannot_parse_is_named_without_its_query() -> None:
    """libpq's message for an address it cannot parse repeats it whole, the query
    included (and the time limits the bridge adds); the error names the database
    without it, as every other does."""
    url = "postgresql://alice@[::1/agents?application_name=q-marker"
    with pytest.raises(JournalError) as err:
        open_history(None, journal=url)
    text = str(err.value)
    assert text.startswith("cannot open the journal postgresql://alice@[::1/agents:")
    assert "q-marker" not in text and "keepalives" not in text and "\n" not in text


def _synchronous_standby(pg_url: str, name: str | None) -> None:
    """Make every commit on the cluster wait for the standby ``name`` (which does not
    exist: the commits hang, as when a synchronous standby is gone), or no longer."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        if name is None:
            conn.execute("ALTER SYSTEM RESET synchronous_standby_names")
        else:
            conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{name}'")
        conn.execute("SELECT pg_reload_conf()")


async def test_a_commit_the_database_does_not_answer_is_reported_failing(pg_url: str) -> None:
    """The synchronous standby is gone: every commit waits for it, with no error and no
    end (as with a server that hangs).  The host was told nothing: ``journal/status``
    stayed ``ok``, a new ``session/create`` got no answer at all.  A commit unanswered
    for a lease is the ``io_error`` fault: ``failing``, new work refused
    ``journal_failing`` (retryable); once the commit returns, ``ok`` and the held
    event follows."""
    args = ("--journal", pg_url, "--node", "a", "--lease-seconds", "3")
    async with running_bridge("newline", *args) as bridge:
        steps: list[dict[str, Any]] = [
            {"type": "stream", "count": 3, "text": "k"},
            {"type": "waitForInterrupt"},
        ]
        session = (await bridge.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        run = await bridge.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        await bridge.event("run.started", timeout=30)
        _synchronous_standby(pg_url, "gone_standby")
        try:
            await bridge.send_request("run/interrupt", {"runId": run["runId"]})
            asked = anyio.current_time()
            status = await bridge.wait_for(lambda m: m.get("method") == "journal/status", 15)
            assert status["params"] == {"state": "failing", "reason": "io_error"}
            assert anyio.current_time() - asked < 3 + 3  # a lease, and slack
            refused = await bridge.call("session/create", script_session(steps))
            assert refused["error"]["data"]["code"] == "journal_failing"
            assert refused["error"]["data"]["retryable"] is True
        finally:
            _synchronous_standby(pg_url, None)
        status = await bridge.wait_for(lambda m: m.get("method") == "journal/status", 30)
        assert status["params"] == {"state": "ok"}
        ended = await bridge.event("run.interrupted", timeout=30)
        assert ended["runId"] == run["runId"]
    assert b"a commit has not returned for" in bridge.stderr


async def test_members_sweeping_one_dead_owner_at_once_report_its_sessions_once(
    pg_url: str,
) -> None:
    """(And a dead owner's queue of routed requests goes with it.)  Two members find the
    same expired owner at once.  Each read the owner's sessions
    before recovering it, and the second, finding the owner's row already gone (the
    first recovered it meanwhile), reported them as taken over too: both members then
    resumed (or routed ``session/takeover`` for) the same sessions.  Only the member
    whose recovery closed a session reports it."""
    import threading

    beta = open_pg_journal(pg_url, lease=3600, node="beta")
    await beta.start(lambda: None)
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO owners (token, node, pid, started_at, expires_at) VALUES "
                "('dead', 'gone', 1, 'x', now() - interval '1 minute')"
            )
            conn.execute(
                "INSERT INTO sessions (session_id, provider_id, provider_version, options, "
                "created_at, updated_at, state, owner) VALUES "
                "('ses_d', 'scripted', '1', '\\x7b7d', 't', 't', 'active', 'dead')"
            )
        first = psycopg.connect(pg_url)  # another member's recovery, still in progress
        try:
            first.execute("SELECT 1 FROM owners WHERE token = 'dead' FOR UPDATE")
            first.execute("UPDATE sessions SET owner = NULL, state = 'closed'")
            first.execute("DELETE FROM owners WHERE token = 'dead'")
            taken: list[list[str]] = []
            sweep = threading.Thread(target=lambda: taken.append(beta._sweep()))
            sweep.start()
            await anyio.sleep(1)  # beta found the owner expired and waits for its row
            assert sweep.is_alive()
            first.commit()
            sweep.join(10)
        finally:
            first.close()
        assert taken == [[]]  # the other member closed ses_d: beta took nothing over
        # a request routed to an owner that died is not kept for ever
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO owners (token, node, pid, started_at, expires_at) VALUES "
                "('dead2', 'gone', 1, 'x', now() - interval '1 minute')"
            )
            conn.execute("INSERT INTO commands (owner, method, params) VALUES ('dead2', 'x', '')")
        assert await anyio.to_thread.run_sync(beta._sweep) == []
        with psycopg.connect(pg_url, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM commands").fetchone() == (0,)
    finally:
        await beta.aclose()
