"""A fleet: bridges on one PostgreSQL journal (``docs/fleet.md``), each standing in for a
machine: its own state directory, home, runtime folder and network namespace (``unshare
--net``: no interface but a loopback that is down; the database is reached on its Unix
socket, which a network namespace does not cut), with hosts attached to each.

Tested here with real members: a host on any member follows a session another member
runs, live, gapless and identical to the owner's host (100,000 events, hosts on three
members); every member
lists the fleet's sessions with their owner's node, pending interactions and attached
hosts; requests sent to a member that does not own the session reach the owner once
(``commandId``), an error from it arrives with its details, and an interaction is
offered on every member and settled by the first answer; a new session is placed on a
member that serves its provider and workspace (or the node named); a SIGKILLed or
cut-off owner is taken over within the bound by a member that can run the session,
which resumes it, with nothing any host saw lost and nothing written twice.  Where the
machine cannot make network namespaces (not root, no ``unshare``) the members share the
test's, with a loud warning (and a failure in CI).
"""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import BridgeProcess, Message, script_session
from loopback_netns import CAN_NETNS
from plain_scripted import plain_scripted_env

pytestmark = pytest.mark.timeout(300)

#: each member runs in a network namespace of its own (see the module docstring)
NETNS: tuple[str, ...] = ("unshare", "--net") if CAN_NETNS else ()


def _own_network() -> tuple[str, ...]:
    if not NETNS:
        if os.environ.get("CI") == "true":
            pytest.fail("the fleet's members must each have a network namespace in CI")
        warnings.warn(
            "LOUD: the fleet's members share the test's network namespace "
            "(network namespaces need root and unshare)",
            stacklevel=2,
        )
    return NETNS


def member_env(root: Path, name: str) -> dict[str, str]:
    """A machine of its own: state directory, home and runtime folder."""
    home = root / name
    for sub in ("state", "home", "run"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(home / "run", 0o700)
    return {
        "AGENT_BRIDGE_STATE_DIR": str(home / "state"),
        "HOME": str(home / "home"),
        "XDG_STATE_HOME": str(home / "home" / ".local" / "state"),
        "XDG_RUNTIME_DIR": str(home / "run"),
    }


@asynccontextmanager
async def fleet(
    root: Path,
    url: str,
    names: tuple[str, ...] = ("alpha", "beta", "gamma"),
    lease: float = 3.0,
    urls: dict[str, str] | None = None,
    extra: dict[str, tuple[str, ...]] | None = None,
    leases: dict[str, float] | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[dict[str, BridgeProcess]]:
    """One bridge per name, all on the journal ``url`` (``urls``: another for some),
    each initialized; ``extra`` adds arguments to some, ``leases`` another lease,
    ``env`` more environment to all."""
    async with anyio.create_task_group() as tg:
        try:
            async with AsyncExitStack() as stack:
                members: dict[str, BridgeProcess] = {}
                for name in names:
                    bridge = BridgeProcess(
                        "newline",
                        args=(
                            "--journal",
                            (urls or {}).get(name, url),
                            "--node",
                            name,
                            "--lease-seconds",
                            str((leases or {}).get(name, lease)),
                            *(extra or {}).get(name, ()),
                        ),
                        env=member_env(root, name) | (env or {}),
                        validate=False,  # 100,000s of events: schema checks are elsewhere
                        prefix=_own_network(),
                    )
                    await bridge.start(tg)
                    stack.push_async_callback(_stop, bridge)
                    await bridge.initialize()
                    members[name] = bridge
                yield members
        finally:
            tg.cancel_scope.cancel()


async def _stop(bridge: BridgeProcess) -> None:
    with anyio.CancelScope(shield=True):
        await bridge.stop()


async def events_until(
    bridge: BridgeProcess, session: str, last_type: str, timeout: float = 60
) -> list[Message]:
    """The event params of ``session`` the bridge sends, up to one of type ``last_type``."""
    out: list[Message] = []
    while True:
        message = await bridge.wait_for(
            lambda m: m.get("method") == "event" and m["params"]["sessionId"] == session,
            timeout,
        )
        out.append(message["params"])
        if message["params"]["payload"]["type"] == last_type:
            return out


async def test_a_host_on_any_member_follows_a_session_another_runs_live_and_identical(
    pg_url: str, tmp_path: Path
) -> None:
    count = 100_000
    async with fleet(tmp_path, pg_url) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        if NETNS:  # three machines' networks: none the test's, none another member's
            spaces = {os.readlink(f"/proc/{m.proc.pid}/ns/net") for m in members.values() if m.proc}
            assert len(spaces | {os.readlink("/proc/self/ns/net")}) == 4
        params = script_session([{"type": "stream", "count": count, "text": "z"}])
        session = (await alpha.result("session/create", params))["session"]["sessionId"]
        # beta's host attaches before the run starts (everything it sees is live)
        attached = await beta.result("session/attach", {"sessionId": session})
        assert attached["session"]["sessionId"] == session
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        # gamma's host attaches in the middle of the run (a replay, then live)
        async with anyio.create_task_group() as tg:
            seen: dict[str, list[Message]] = {}

            async def collect(name: str, bridge: BridgeProcess) -> None:
                seen[name] = await events_until(bridge, session, "run.completed")

            tg.start_soon(collect, "alpha", alpha)
            tg.start_soon(collect, "beta", beta)
            await anyio.sleep(0.2)
            await gamma.result("session/attach", {"sessionId": session})
            tg.start_soon(collect, "gamma", gamma)
        owner = seen["alpha"]
        assert [e["sequence"] for e in owner] == list(range(1, count + 3))
        assert seen["beta"] == owner
        assert seen["gamma"] == owner
        # every member lists the fleet's session
        for bridge in (alpha, beta, gamma):
            listed = await bridge.result("session/list", {})
            assert session in [s["sessionId"] for s in listed["sessions"]]


async def test_a_sigkilled_members_session_is_taken_over_and_resumed_within_the_bound(
    pg_url: str, tmp_path: Path
) -> None:
    async with fleet(tmp_path, pg_url, ("alpha", "beta")) as members:
        alpha, beta = members["alpha"], members["beta"]
        steps: list[dict[str, Any]] = [
            {"type": "stream", "count": 500, "text": "k"},
            {"type": "waitForInterrupt"},
        ]
        session = (await alpha.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        await beta.result("session/attach", {"sessionId": session})
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        seen_alpha = await events_until(alpha, session, "text.delta")
        while len(seen_alpha) < 501:
            seen_alpha += await events_until(alpha, session, "text.delta")
        seen_beta: list[Message] = []
        while len(seen_beta) < 501:
            seen_beta += await events_until(beta, session, "text.delta")
        assert alpha.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        killed = anyio.current_time()
        # no request needed: beta's heartbeat finds alpha's lease (3 s) expired, closes its
        # run bridge_crashed and resumes the session here; beta's host, following it, sees
        # the end and the resumption, and goes on from the local stream
        tail = await events_until(beta, session, "session.resumed", timeout=30)
        took = anyio.current_time() - killed
        assert took < 3.0 + 1.0 + 3.0, took  # the lease, a beat, and slack for a loaded machine
        got = seen_beta + tail
        assert [e["sequence"] for e in got] == list(range(1, 505))  # no gap, nothing twice
        assert [e["payload"]["type"] for e in got] == (
            ["run.started"]
            + ["text.delta"] * 500
            + ["run.failed", "session.closed"]
            + ["session.resumed"]
        )
        assert got[501]["payload"]["error"]["code"] == "bridge_crashed"
        assert seen_beta[:501] == seen_alpha[:501]  # what alpha's host saw, beta's saw too
        stored = await beta.result("events/read", {"sessionId": session, "limit": 1000})
        assert stored["events"] == got  # and it is all in the journal
        # the session is beta's now: a new run streams to beta's host from the local stream
        steps_again = await beta.result(
            "run/start", {"sessionId": session, "input": {"text": "again"}}
        )
        more = await events_until(beta, session, "text.delta", timeout=30)
        assert more[0]["payload"]["type"] == "run.started"
        assert more[0]["runId"] == steps_again["runId"] and more[0]["sequence"] == 505


async def test_requests_on_any_member_reach_the_owner_once(pg_url: str, tmp_path: Path) -> None:
    """run/start (with a commandId, retried through a third member), interaction/respond,
    run/interrupt and session/close, each sent to a member that does not own the
    session, are handled by the owner; the asking hosts follow the events."""
    async with fleet(tmp_path, pg_url) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        steps: list[dict[str, Any]] = [
            {"type": "approval", "title": "touch", "onAllow": [{"type": "text", "text": "ok"}]},
            {"type": "waitForInterrupt"},
        ]
        session = (await alpha.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        for bridge in (beta, gamma):
            await bridge.result("session/attach", {"sessionId": session})
        start = {"sessionId": session, "input": {"text": "x"}, "commandId": "fleet-1"}
        first = await beta.result("run/start", start)
        again = await gamma.result("run/start", start)  # a retry through another member
        assert again["runId"] == first["runId"] and again.get("duplicate") is True
        requested = await beta.event("interaction.requested", timeout=30)
        interaction = requested["payload"]["interactionId"]
        answered = await beta.result(
            "interaction/respond",
            {"interactionId": interaction, "answer": {"kind": "approval", "decision": "allow"}},
        )
        assert answered["status"] == "applied"
        late = await gamma.call(
            "interaction/respond",
            {"interactionId": interaction, "answer": {"kind": "approval", "decision": "deny"}},
        )
        assert late["error"]["data"]["code"] in ("interaction_already_settled",)
        settled = await gamma.event("interaction.settled", timeout=30)
        assert settled["payload"]["status"] == "responded"
        assert (await gamma.event("text.delta", timeout=30))["payload"]["text"] == "ok"
        interrupted = await gamma.result("run/interrupt", {"runId": first["runId"]})
        assert interrupted["runId"] == first["runId"]
        ended = await beta.event("run.interrupted", timeout=30)
        assert ended["runId"] == first["runId"]
        closed = await gamma.result("session/close", {"sessionId": session})
        assert closed["session"]["sessionId"] == session
        await beta.event("session.closed", timeout=30)
        events = await alpha.result("events/read", {"sessionId": session, "limit": 1000})
        kinds = [e["payload"]["type"] for e in events["events"]]
        assert kinds.count("run.started") == 1  # the retried run/start ran once
        assert kinds[-1] == "session.closed"


async def test_an_interaction_is_offered_on_every_member_and_the_first_answer_settles_it(
    pg_url: str, tmp_path: Path
) -> None:
    async with fleet(tmp_path, pg_url) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        steps: list[dict[str, Any]] = [
            {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "done"}]}
        ]
        session = (await alpha.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        for bridge in (beta, gamma):
            await bridge.result("session/attach", {"sessionId": session})
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})

        def is_request(m: Message) -> bool:
            return m.get("method") == "interaction/request"

        asked = {name: await b.wait_for(is_request, 30) for name, b in members.items()}
        ids = {m["params"]["interactionId"] for m in asked.values()}
        assert len(ids) == 1  # one interaction, offered on all three members
        # gamma's host answers first (its member does not own the session)
        await gamma.send(
            {
                "jsonrpc": "2.0",
                "id": asked["gamma"]["id"],
                "result": {"kind": "approval", "decision": "allow", "mode": "once"},
            }
        )
        for name in ("alpha", "beta"):  # the others' offers are withdrawn
            bridge = members[name]
            cancel = await bridge.wait_for(lambda m: m.get("method") == "$/cancelRequest", 30)
            assert cancel["params"]["id"] == asked[name]["id"]
        for bridge in (alpha, beta, gamma):
            settled = await bridge.event("interaction.settled", timeout=30)
            assert settled["payload"]["status"] == "responded"
            assert settled["payload"]["answer"]["decision"] == "allow"
            await bridge.event("run.completed", timeout=30)
        stored = await beta.result("events/read", {"sessionId": session, "limit": 100})
        kinds = [e["payload"]["type"] for e in stored["events"]]
        assert kinds.count("interaction.settled") == 1


async def test_a_member_cut_off_from_the_database_is_taken_over_and_never_writes_again(
    pg_cluster: Any, pg_url: str, tmp_path: Path
) -> None:
    """alpha reaches the database through a relay the test cuts: its commits fail (held),
    its lease expires, beta takes the session over; when alpha's path comes back its
    writer finds its lease gone and writes nothing (no event twice, no split brain)."""
    from pgcluster import Relay

    relay = Relay(pg_cluster)
    try:
        urls = {"alpha": relay.url(pg_url)}
        async with fleet(tmp_path, pg_url, ("alpha", "beta"), urls=urls) as members:
            alpha, beta = members["alpha"], members["beta"]
            steps: list[dict[str, Any]] = [
                {"type": "stream", "count": 300, "text": "c"},
                {"type": "waitForInterrupt"},
            ]
            session = (await alpha.result("session/create", script_session(steps)))["session"][
                "sessionId"
            ]
            await beta.result("session/attach", {"sessionId": session})
            started = await alpha.result(
                "run/start", {"sessionId": session, "input": {"text": "x"}}
            )
            seen: list[Message] = []
            while len(seen) < 301:
                seen += await events_until(beta, session, "text.delta")
            relay.cut()
            # alpha's host interrupts: alpha records run.interrupted, which it cannot commit
            await alpha.send_request("run/interrupt", {"runId": started["runId"]})
            tail = await events_until(beta, session, "session.resumed", timeout=30)
            relay.restore()
            await anyio.sleep(3)  # alpha reconnects, and finds its lease taken over
            stored = await beta.result("events/read", {"sessionId": session, "limit": 1000})
            events = stored["events"]
            assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
            kinds = [e["payload"]["type"] for e in events]
            assert kinds == (
                ["run.started"]
                + ["text.delta"] * 300
                + ["run.failed", "session.closed", "session.resumed"]
            )
            assert events == seen + tail  # beta's host saw exactly what is stored
            assert "run.interrupted" not in kinds  # alpha never wrote again
            assert b"taken over" in alpha.stderr
    finally:
        relay.close()


async def test_session_list_on_any_member_shows_the_owners_node(
    pg_url: str, tmp_path: Path
) -> None:
    """Each member lists every session of the fleet with the node of the member that has
    it open (its own, or another's) and its pending interactions (as journaled); a closed
    session names no node."""
    async with fleet(tmp_path, pg_url) as members:
        owned: dict[str, str] = {}
        for name in ("alpha", "beta"):
            params = script_session([{"type": "text", "text": "hi"}])
            created = await members[name].result("session/create", params)
            owned[created["session"]["sessionId"]] = name
        # one of alpha's sessions waits for an approval: counted on every member
        asking = (
            await members["alpha"].result(
                "session/create", script_session([{"type": "approval", "title": "touch"}])
            )
        )["session"]["sessionId"]
        owned[asking] = "alpha"
        await members["alpha"].result("run/start", {"sessionId": asking, "input": {"text": "x"}})
        await members["alpha"].event("interaction.requested", timeout=30)
        closed = (await members["gamma"].result("session/create", script_session([])))["session"][
            "sessionId"
        ]
        await members["gamma"].result("session/close", {"sessionId": closed})
        for name, bridge in members.items():
            listed = await bridge.result("session/list", {})
            nodes = {s["sessionId"]: s.get("node") for s in listed["sessions"]}
            for session, owner in owned.items():
                assert nodes[session] == owner, (name, session)
            pending = {s["sessionId"]: s.get("pendingInteractions", 0) for s in listed["sessions"]}
            assert pending[asking] == 1, name
            assert all(pending[s] == 0 for s in owned if s != asking), name
            assert closed in nodes and nodes[closed] is None, name


async def test_an_interaction_pending_before_a_host_attaches_elsewhere_is_offered_there(
    pg_url: str, tmp_path: Path
) -> None:
    """alpha's run waits for an approval; a host that attaches on beta only then is asked
    it under the same id, and its answer (routed to alpha) settles it everywhere."""
    async with fleet(tmp_path, pg_url, ("alpha", "beta")) as members:
        alpha, beta = members["alpha"], members["beta"]
        steps: list[dict[str, Any]] = [
            {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "done"}]}
        ]
        session = (await alpha.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})

        def is_request(m: Message) -> bool:
            return m.get("method") == "interaction/request"

        first = await alpha.wait_for(is_request, 30)
        await beta.result("session/attach", {"sessionId": session})
        again = await beta.wait_for(is_request, 30)
        assert again["params"]["interactionId"] == first["params"]["interactionId"]
        await beta.send(
            {
                "jsonrpc": "2.0",
                "id": again["id"],
                "result": {"kind": "approval", "decision": "allow", "mode": "once"},
            }
        )
        cancel = await alpha.wait_for(lambda m: m.get("method") == "$/cancelRequest", 30)
        assert cancel["params"]["id"] == first["id"]
        for bridge in (alpha, beta):
            settled = await bridge.event("interaction.settled", timeout=30)
            assert settled["payload"]["answer"]["decision"] == "allow"
            await bridge.event("run.completed", timeout=30)


async def test_an_error_from_the_owner_reaches_the_host_with_its_details(
    pg_url: str, tmp_path: Path
) -> None:
    """A request routed to the owner that fails there answers the host on the asking
    member with the owner's classified error, details included (code, table message,
    retryable, allowlisted details), exactly what the owner's own host is answered."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with fleet(tmp_path, pg_url, ("alpha", "beta")) as members:
        alpha, beta = members["alpha"], members["beta"]
        params = script_session([{"type": "text", "text": "hi"}]) | {"workspace": str(workspace)}
        session = (await alpha.result("session/create", params))["session"]["sessionId"]
        bad = {
            "sessionId": session,
            "input": {"content": [{"type": "file", "path": "/etc/hostname"}]},
        }
        here = await alpha.call("run/start", bad, check=False)
        there = await beta.call("run/start", bad, check=False)
        assert here["error"]["data"]["code"] == "workspace_invalid"
        assert "outside" in here["error"]["data"]["details"]["reason"]
        assert there["error"] == here["error"]


#: the database fails the owner's first write of an answer to a routed ``run/start``,
#: once (a sequence counts: it is not rolled back with the failed statement), as a
#: restart or a failover between the owner's handling and its answer would
_FAIL_THE_FIRST_ANSWER = """
CREATE SEQUENCE answers_written;
CREATE FUNCTION fail_the_first_answer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'done' AND NEW.method = 'run/start'
            AND nextval('answers_written') = 1 THEN
        RAISE EXCEPTION 'terminating connection' USING ERRCODE = '57P01';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER fail_the_first_answer BEFORE UPDATE ON commands
    FOR EACH ROW EXECUTE FUNCTION fail_the_first_answer();
"""


async def test_an_owners_answer_the_database_first_refused_still_reaches_the_asker(
    pg_url: str, tmp_path: Path
) -> None:
    """The owner starts a routed run, then cannot write its answer once (the database
    went away a moment).  The answer was dropped: the asking host got
    ``session_in_use`` (retryable) 30 s later for a run that had started and completed,
    so its retry would have run the prompt twice.  The owner writes it again until the
    database takes it: the host gets the run at once, and the run ran once."""
    import psycopg

    async with fleet(tmp_path, pg_url, ("alpha", "beta")) as members:
        alpha, beta = members["alpha"], members["beta"]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(_FAIL_THE_FIRST_ANSWER)
        params = script_session([{"type": "text", "text": "hi"}])
        session = (await alpha.result("session/create", params))["session"]["sessionId"]
        await beta.result("session/attach", {"sessionId": session})
        asked = anyio.current_time()
        started = await beta.call(
            "run/start", {"sessionId": session, "input": {"text": "x"}}, timeout=40
        )
        assert "result" in started, started
        assert anyio.current_time() - asked < 10
        done = await beta.event("run.completed", timeout=30)
        assert done["runId"] == started["result"]["runId"]
        stored = await beta.result("events/read", {"sessionId": session, "limit": 100})
        kinds = [e["payload"]["type"] for e in stored["events"]]
        assert kinds == ["run.started", "text.delta", "run.completed"]
        assert b"cannot answer a routed run/start yet" in alpha.stderr


async def test_a_session_that_moved_to_another_member_and_back_goes_on(
    pg_url: str, tmp_path: Path
) -> None:
    """A session run and closed on alpha, resumed and run on beta, then resumed on alpha
    again.  alpha's writer still held the session's last sequence from its own time
    with it and took the next event for a gap: an internal error that stopped alpha's
    writer for good (every session of alpha's, ``internal`` for all new work, until a
    restart).  A member that claims a session drops what its writer knew of it."""
    async with fleet(tmp_path, pg_url, ("alpha", "beta")) as members:
        alpha, beta = members["alpha"], members["beta"]
        params = script_session([{"type": "stream", "count": 3, "text": "m"}])
        session = (await alpha.result("session/create", params))["session"]["sessionId"]
        for turn, here in enumerate((alpha, beta, alpha)):
            if turn:  # (created open on alpha)
                await here.result("session/resume", {"sessionId": session})
            await here.result("run/start", {"sessionId": session, "input": {"text": "x"}})
            await here.event("run.completed", timeout=30)
            await here.result("session/close", {"sessionId": session})
        other = await alpha.call("session/create", params)
        assert "result" in other, other  # alpha's journal still takes new work
        stored = await beta.result("events/read", {"sessionId": session, "limit": 100})
        events = stored["events"]
        assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
        assert [e["payload"]["type"] for e in events].count("run.completed") == 3
    assert b"Traceback" not in alpha.stderr


def nodes_of(listed: dict[str, Any]) -> dict[str, str | None]:
    """session/list's sessions as id -> node."""
    return {s["sessionId"]: s.get("node") for s in listed["sessions"]}


async def test_a_new_session_is_placed_on_a_member_that_serves_it(
    pg_url: str, tmp_path: Path
) -> None:
    """alpha serves the scripted provider under a/, beta anything under b/, gamma only
    claude-code: a session is created where it can run (the host's member when it can,
    else one that can), on the node the host names when it names one, and an unknown
    node or one that cannot serve it is a typed error naming why."""
    folders = {name: tmp_path / name for name in ("a", "b", "c")}
    for folder in folders.values():
        folder.mkdir()
    extra: dict[str, tuple[str, ...]] = {
        "alpha": ("--node-providers", "scripted", "--node-workspaces", str(folders["a"])),
        "beta": ("--node-workspaces", str(folders["b"])),
        "gamma": ("--node-providers", "claude-code"),
    }
    async with fleet(tmp_path, pg_url, extra=extra) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        steps = [{"type": "text", "text": "placed"}]

        def create(workspace: str, node: str | None = None) -> dict[str, Any]:
            params = script_session(steps) | {"workspace": str(folders[workspace])}
            return params if node is None else params | {"node": node}

        # gamma does not serve scripted, alpha not in b/: beta creates it
        on_beta = (await gamma.result("session/create", create("b")))["session"]["sessionId"]
        # gamma's host follows it: a run started through gamma streams to it
        await gamma.result("run/start", {"sessionId": on_beta, "input": {"text": "x"}})
        seen = await events_until(gamma, on_beta, "run.completed", timeout=30)
        assert "placed" in [e["payload"].get("text") for e in seen]
        # named: beta's host asks for alpha
        on_alpha = (await beta.result("session/create", create("a", "alpha")))["session"][
            "sessionId"
        ]
        # not named, and the host's member serves it: there
        local = (await beta.result("session/create", create("b")))["session"]["sessionId"]
        listed = nodes_of(await alpha.result("session/list", {}))
        assert listed[on_beta] == "beta"
        assert listed[on_alpha] == "alpha"
        assert listed[local] == "beta"

        async def refused(bridge: BridgeProcess, params: dict[str, Any]) -> dict[str, Any]:
            reply = await bridge.call("session/create", params, check=False)
            assert "error" in reply, reply
            data: dict[str, Any] = reply["error"]["data"]
            return data

        wrong_folder = await refused(gamma, create("b", "alpha"))
        assert wrong_folder["code"] == "workspace_invalid"
        assert "alpha" in wrong_folder["details"]["reason"]
        wrong_provider = await refused(alpha, create("a", "gamma"))
        assert wrong_provider["code"] == "provider_unavailable"
        assert wrong_provider["details"]["provider"] == "scripted"
        assert "gamma" in wrong_provider["details"]["reason"]
        nowhere = await refused(alpha, create("a", "delta"))
        assert nowhere["code"] == "invalid_params"
        assert nowhere["details"]["field"] == "node"
        nobody = await refused(beta, create("c"))  # no member serves scripted in c/
        assert nobody["code"] == "workspace_invalid"
        unknown = await refused(beta, {"provider": "no-such-agent"})
        assert unknown["code"] == "provider_not_found"
        # nothing was created by the refusals
        after = nodes_of(await gamma.result("session/list", {}))
        assert set(after) == {on_beta, on_alpha, local}


async def test_a_member_can_be_placed_on_as_soon_as_it_answered_initialize(
    pg_url: str, tmp_path: Path
) -> None:
    """A member records what it serves before its first reply: alpha serves claude-code
    only; beta (every provider, so it loads them all first) has just answered its
    ``initialize`` when alpha's host creates a scripted session, by placement and by
    naming beta: both run on beta (before, beta had not yet declared itself then:
    ``workspace``-less placement answered alpha's refusal, naming it ``invalid_params``)."""
    extra: dict[str, tuple[str, ...]] = {"alpha": ("--node-providers", "claude-code")}
    steps = [{"type": "text", "text": "placed"}]
    async with fleet(tmp_path, pg_url, ("alpha", "beta"), extra=extra) as members:
        alpha, beta = members["alpha"], members["beta"]  # beta: initialize just answered
        placed = await alpha.call("session/create", script_session(steps), check=False)
        named = await alpha.call(
            "session/create", script_session(steps) | {"node": "beta"}, check=False
        )
        for reply in (placed, named):
            assert "result" in reply, reply
        ids = [r["result"]["session"]["sessionId"] for r in (placed, named)]
        listed = nodes_of(await beta.result("session/list", {}))
        assert [listed[i] for i in ids] == ["beta", "beta"]


async def test_takeover_goes_to_a_member_that_can_run_the_sessions_provider(
    pg_url: str, tmp_path: Path
) -> None:
    """alpha owns a session and is SIGKILLed; beta finds the lease expired first (its
    beat is the fastest) but does not serve the scripted provider, so gamma resumes the
    session; beta's host, following it, sees the end, then session.resumed from gamma."""
    extra: dict[str, tuple[str, ...]] = {"beta": ("--node-providers", "claude-code")}
    leases = {"alpha": 3.0, "beta": 1.0, "gamma": 30.0}
    async with fleet(tmp_path, pg_url, extra=extra, leases=leases) as members:
        alpha, beta = members["alpha"], members["beta"]
        steps: list[dict[str, Any]] = [
            {"type": "stream", "count": 50, "text": "t"},
            {"type": "waitForInterrupt"},
        ]
        created = await alpha.result("session/create", script_session(steps))
        session = created["session"]["sessionId"]
        await beta.result("session/attach", {"sessionId": session})
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        seen: list[Message] = []
        while len(seen) < 51:
            seen += await events_until(beta, session, "text.delta")
        assert alpha.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        tail = await events_until(beta, session, "session.resumed", timeout=30)
        assert [e["payload"]["type"] for e in tail] == [
            "run.failed",
            "session.closed",
            "session.resumed",
        ]
        got = seen + tail
        assert [e["sequence"] for e in got] == list(range(1, len(got) + 1))
        listed = nodes_of(await beta.result("session/list", {}))
        assert listed[session] == "gamma"
        with anyio.fail_after(10):  # logged once gamma's reply is back (the host may be
            while b"taken over by gamma" not in beta.stderr:  # told of the resumption first)
                await anyio.sleep(0.05)
        # the session runs on gamma now: a run started through beta is routed there and
        # beta's host, following it, sees it
        run = await beta.result("run/start", {"sessionId": session, "input": {"text": "y"}})
        more = await events_until(beta, session, "run.started", timeout=30)
        assert more == [more[0]] and more[0]["runId"] == run["runId"]
        assert more[0]["sequence"] == got[-1]["sequence"] + 1


async def test_attached_hosts_counts_the_hosts_of_every_member(pg_url: str, tmp_path: Path) -> None:
    """A session alpha runs, with a host on each of three members: every member lists
    three attached hosts; once gamma is SIGKILLed its host stops counting when its lease
    expires, on every member left."""
    async with fleet(tmp_path, pg_url) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        steps: list[dict[str, Any]] = [{"type": "text", "text": "hi"}]
        session = (await alpha.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        other = (await beta.result("session/create", script_session(steps)))["session"]["sessionId"]
        for bridge in (beta, gamma):
            await bridge.result("session/attach", {"sessionId": session})

        async def hosts(bridge: BridgeProcess) -> dict[str, int]:
            listed = await bridge.result("session/list", {})
            return {s["sessionId"]: s.get("attachedHosts", 0) for s in listed["sessions"]}

        async def until(bridge: BridgeProcess, want: dict[str, int], within: float) -> None:
            with anyio.fail_after(within):
                while True:
                    seen = await hosts(bridge)
                    if all(seen.get(k) == v for k, v in want.items()):
                        return
                    await anyio.sleep(0.1)

        # each member's own attach is written before its own list; another member's
        # within the time its member takes to write it (milliseconds)
        for bridge in (alpha, beta, gamma):
            await until(bridge, {session: 3, other: 1}, 5)
        assert gamma.proc is not None
        gamma.proc.send_signal(signal.SIGKILL)
        await gamma.proc.wait()
        killed = anyio.current_time()
        assert await hosts(alpha) == {session: 3, other: 1}  # gamma's lease still holds
        for bridge in (alpha, beta):
            await until(bridge, {session: 2, other: 1}, 3.0 + 3.0)
        assert anyio.current_time() - killed >= 2.0  # it was the lease, not sooner


def _is_request(m: Message) -> bool:
    return m.get("method") == "interaction/request"


async def test_an_approval_pending_at_the_owners_death_is_offered_again_and_answered(
    pg_url: str, tmp_path: Path
) -> None:
    """The owner SIGKILLed with an approval offered to hosts on the other members
    (docs/fleet.md, "Pending interactions at a takeover"): within the bound a member
    takes the session over and continues the run (the scripted provider has
    ``recovery.resumeTurn``); the approval is offered again once, under its original id,
    to the hosts on both members left; an answer sent before that is refused
    ``session_in_use`` (retryable) or applied, never lost; answered on the member that
    is not the new owner, the run completes under its original id; every event any host
    saw is in the journal, nothing twice, no gap."""
    leases = {"alpha": 3.0, "beta": 1.0, "gamma": 30.0}  # beta takes over
    async with fleet(tmp_path, pg_url, leases=leases) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        steps: list[dict[str, Any]] = [
            {"type": "text", "text": "before"},
            {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "ok"}]},
            {"type": "text", "text": "after"},
        ]
        session = (await alpha.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        for bridge in (beta, gamma):
            await bridge.result("session/attach", {"sessionId": session})
        run = await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        first = {name: await members[name].wait_for(_is_request, 30) for name in members}
        interaction = first["alpha"]["params"]["interactionId"]
        assert {m["params"]["interactionId"] for m in first.values()} == {interaction}
        assert alpha.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        killed = anyio.current_time()
        seen = {
            name: await events_until(members[name], session, "session.resumed", timeout=30)
            for name in ("beta", "gamma")
        }
        assert anyio.current_time() - killed < 3.0 + 1.0 + 3.0  # the lease, a beat, slack
        again = {name: await members[name].wait_for(_is_request, 30) for name in seen}
        for name, offer in again.items():
            assert offer["params"]["interactionId"] == interaction, name
            assert offer["params"]["runId"] == run["runId"]
            assert offer["id"] != first[name]["id"]
            # the offer made for the dead owner was withdrawn before it was made again
            withdrawn = [
                m
                for m in members[name].received
                if m.get("method") == "$/cancelRequest" and m["params"]["id"] == first[name]["id"]
            ]
            assert len(withdrawn) == 1, name
        # answered on gamma, which does not own the session (beta does now)
        listed = nodes_of(await gamma.result("session/list", {}))
        assert listed[session] == "beta"
        await gamma.send(
            {
                "jsonrpc": "2.0",
                "id": again["gamma"]["id"],
                "result": {"kind": "approval", "decision": "allow", "mode": "once"},
            }
        )
        cancel = await beta.wait_for(
            lambda m: (
                m.get("method") == "$/cancelRequest" and m["params"]["id"] == again["beta"]["id"]
            ),
            30,
        )
        assert cancel
        for name in ("beta", "gamma"):
            seen[name] += await events_until(members[name], session, "run.completed", timeout=30)
        assert seen["beta"] == seen["gamma"]
        got = seen["beta"]
        assert [e["sequence"] for e in got] == list(range(1, len(got) + 1))  # no gap, once each
        assert [e["payload"]["type"] for e in got] == [
            "run.started",
            "text.delta",
            "interaction.requested",
            "session.closed",
            "session.resumed",
            "interaction.settled",
            "text.delta",
            "text.delta",
            "run.completed",
        ]
        assert got[3]["payload"]["reason"] == "bridge_crashed"
        assert got[5]["payload"]["interactionId"] == interaction
        assert got[5]["payload"]["status"] == "responded"
        assert {e["runId"] for e in got if e.get("runId")} == {run["runId"]}
        texts = [e["payload"]["text"] for e in got if e["payload"]["type"] == "text.delta"]
        assert texts == ["before", "ok", "after"]
        # offered again once on each member, and only once
        for name in ("beta", "gamma"):
            asks = [m for m in members[name].received if _is_request(m)]
            assert asks == [first[name], again[name]], name
        stored = await gamma.result("events/read", {"sessionId": session, "limit": 100})
        assert stored["events"] == got  # every event any host saw, as it saw it
        late = await beta.call(
            "interaction/respond",
            {"interactionId": interaction, "answer": {"kind": "approval", "decision": "deny"}},
        )
        assert late["error"]["data"]["code"] == "interaction_already_settled"


async def test_an_approval_is_offered_again_once_when_another_member_resumes_it(
    pg_url: str, tmp_path: Path
) -> None:
    """beta finds alpha's lease expired first but does not serve the scripted provider:
    gamma takes the session over and continues the run; beta's host, which follows it on
    from gamma, is offered the approval again once (not once per way it learnt of it),
    and its answer completes the run."""
    extra: dict[str, tuple[str, ...]] = {"beta": ("--node-providers", "claude-code")}
    leases = {"alpha": 3.0, "beta": 1.0, "gamma": 30.0}
    async with fleet(tmp_path, pg_url, extra=extra, leases=leases) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        steps: list[dict[str, Any]] = [
            {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "ok"}]}
        ]
        session = (await alpha.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        for bridge in (beta, gamma):
            await bridge.result("session/attach", {"sessionId": session})
        run = await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        first = {name: await members[name].wait_for(_is_request, 30) for name in ("beta", "gamma")}
        assert alpha.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        for bridge in (beta, gamma):
            await events_until(bridge, session, "session.resumed", timeout=30)
        again = {name: await members[name].wait_for(_is_request, 30) for name in first}
        assert nodes_of(await beta.result("session/list", {}))[session] == "gamma"
        await beta.send(
            {
                "jsonrpc": "2.0",
                "id": again["beta"]["id"],
                "result": {"kind": "approval", "decision": "allow", "mode": "once"},
            }
        )
        for name in first:
            end = await events_until(members[name], session, "run.completed", timeout=30)
            assert end[-1]["runId"] == run["runId"]
            asks = [m for m in members[name].received if _is_request(m)]
            assert asks == [first[name], again[name]], name
            assert again[name]["params"]["interactionId"] == first[name]["params"]["interactionId"]


async def test_an_answer_in_the_takeover_window_is_refused_retryable_then_applied(
    pg_url: str, tmp_path: Path
) -> None:
    """An answer sent through a member after the owner died and before a member has the
    session open again is refused ``session_in_use`` (retryable), nothing settled; the
    same answer retried once the session is taken over is applied."""
    leases = {"alpha": 2.0, "beta": 30.0}
    async with fleet(tmp_path, pg_url, ("alpha", "beta"), leases=leases) as members:
        alpha, beta = members["alpha"], members["beta"]
        steps: list[dict[str, Any]] = [
            {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "ok"}]}
        ]
        session = (await alpha.result("session/create", script_session(steps)))["session"][
            "sessionId"
        ]
        await beta.result("session/attach", {"sessionId": session})
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        offer = await beta.wait_for(_is_request, 30)
        interaction = offer["params"]["interactionId"]
        assert alpha.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        answer = {"interactionId": interaction, "answer": {"kind": "approval", "decision": "allow"}}
        # alpha's lease still holds: routed to it, unanswered, then session_in_use
        refused = await beta.call("interaction/respond", answer, check=False)
        assert refused["error"]["data"]["code"] == "session_in_use"
        assert refused["error"]["data"]["retryable"] is True
        await events_until(beta, session, "session.resumed", timeout=60)
        applied = await beta.result("interaction/respond", answer)
        assert applied["status"] == "applied"
        await events_until(beta, session, "run.completed", timeout=30)


async def test_a_provider_that_cannot_continue_a_turn_has_its_approval_withdrawn(
    pg_url: str, tmp_path: Path
) -> None:
    """A provider without ``recovery.resumeTurn`` (every CLI agent; here the scripted
    provider with it off): the approval pending at the owner's death is withdrawn
    (``$/cancelRequest``, ``interaction.settled`` cancelled), the run fails
    ``bridge_crashed``, the session is resumed elsewhere, and the approval is not offered
    again; a new run asks anew, under a new id."""
    env = plain_scripted_env(tmp_path / "plain")
    async with fleet(tmp_path, pg_url, ("alpha", "beta"), env=env) as members:
        alpha, beta = members["alpha"], members["beta"]
        steps: list[dict[str, Any]] = [
            {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "ok"}]}
        ]
        params = script_session(steps) | {"provider": "scripted-plain"}
        session = (await alpha.result("session/create", params))["session"]["sessionId"]
        await beta.result("session/attach", {"sessionId": session})
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        offer = await beta.wait_for(_is_request, 30)
        interaction = offer["params"]["interactionId"]
        assert alpha.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        seen = await events_until(beta, session, "session.resumed", timeout=30)
        kinds = [e["payload"]["type"] for e in seen]
        tail = seen[kinds.index("interaction.requested") + 1 :]
        assert [e["payload"]["type"] for e in tail] == [
            "interaction.settled",
            "run.failed",
            "session.closed",
            "session.resumed",
        ]
        assert tail[0]["payload"]["interactionId"] == interaction
        assert tail[0]["payload"]["status"] == "cancelled" and tail[0]["payload"]["auto"]
        assert tail[1]["payload"]["error"]["code"] == "bridge_crashed"
        withdrawn = await beta.wait_for(lambda m: m.get("method") == "$/cancelRequest", 10)
        assert withdrawn["params"]["id"] == offer["id"]
        listed = await beta.result("session/list", {})
        (entry,) = [s for s in listed["sessions"] if s["sessionId"] == session]
        assert entry.get("pendingInteractions", 0) == 0 and entry["node"] == "beta"
        # not offered again; the host starts the turn again and is asked anew
        assert [m for m in beta.received if _is_request(m)] == [offer]
        await beta.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        again = await beta.wait_for(_is_request, 30)
        assert again["params"]["interactionId"] != interaction


async def test_a_host_on_a_third_member_follows_a_taken_over_session_on(
    pg_url: str, tmp_path: Path
) -> None:
    """alpha owns a session and is SIGKILLed; beta (the fastest beat) takes it over and
    resumes it; a host following it on gamma (neither the dead owner nor the heir) sees
    the crash's end, then session.resumed and the next run, gapless, from beta."""
    leases = {"alpha": 3.0, "beta": 1.0, "gamma": 30.0}
    async with fleet(tmp_path, pg_url, leases=leases) as members:
        alpha, gamma = members["alpha"], members["gamma"]
        steps: list[dict[str, Any]] = [
            {"type": "stream", "count": 20, "text": "g"},
            {"type": "waitForInterrupt"},
        ]
        created = await alpha.result("session/create", script_session(steps))
        session = created["session"]["sessionId"]
        await gamma.result("session/attach", {"sessionId": session})
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        seen: list[Message] = []
        while len(seen) < 21:
            seen += await events_until(gamma, session, "text.delta")
        assert alpha.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        seen += await events_until(gamma, session, "session.resumed", timeout=30)
        listed = nodes_of(await gamma.result("session/list", {}))
        assert listed[session] == "beta"
        run = await gamma.result("run/start", {"sessionId": session, "input": {"text": "y"}})
        seen += await events_until(gamma, session, "run.started", timeout=30)
        assert seen[-1]["runId"] == run["runId"]
        assert [e["sequence"] for e in seen] == list(range(1, len(seen) + 1))
        kinds = [e["payload"]["type"] for e in seen]
        assert kinds[21:] == ["run.failed", "session.closed", "session.resumed", "run.started"]
