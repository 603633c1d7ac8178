"""Placement by workspace roots follows symbolic links (``docs/fleet.md``, Placement).

Real members on one PostgreSQL journal (``test_fleet.fleet``), on one machine's
filesystem: a root declared through a symbolic link, a workspace named through a link
into a served root, a link inside a served root that leads out of it, and ``..`` after
such a link.  Each is judged by its real path: the first two are placed on the member
that serves the folder they really are; the escapes are refused ``workspace_invalid``
(before, the names were compared: the first two were refused and the escapes created
sessions in a folder no member serves).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import BridgeProcess, script_session
from test_fleet import events_until, fleet, nodes_of

pytestmark = pytest.mark.timeout(300)


async def test_workspaces_are_placed_by_their_real_paths(pg_url: str, tmp_path: Path) -> None:
    """alpha serves the scripted provider under ``served`` (declared through the link
    ``served-link``), beta only under ``b``; nobody serves ``outside``."""
    served, b, outside = tmp_path / "served", tmp_path / "b", tmp_path / "outside"
    for folder in (served / "proj", b, outside, tmp_path / "elsewhere"):
        folder.mkdir(parents=True)
    (tmp_path / "served-link").symlink_to(served)  # the root, as alpha declares it
    (tmp_path / "elsewhere" / "ws").symlink_to(served / "proj")  # a link into the root
    (served / "escape").symlink_to(outside)  # a link inside the root, out of it
    (tmp_path / "b-link").symlink_to(b)
    extra: dict[str, tuple[str, ...]] = {
        "alpha": (
            "--node-providers",
            "scripted",
            "--node-workspaces",
            str(tmp_path / "served-link"),
        ),
        "beta": ("--node-workspaces", str(b)),
    }
    steps = [{"type": "text", "text": "here"}]

    def create(workspace: Path | str, node: str | None = None) -> dict[str, Any]:
        params = script_session(steps) | {"workspace": str(workspace)}
        return params if node is None else params | {"node": node}

    async with fleet(tmp_path, pg_url, ("alpha", "beta"), extra=extra) as members:
        alpha, beta = members["alpha"], members["beta"]

        async def created(bridge: BridgeProcess, params: dict[str, Any]) -> tuple[str, str]:
            info = (await bridge.result("session/create", params))["session"]
            return info["sessionId"], info["workspace"]

        async def refused(bridge: BridgeProcess, params: dict[str, Any]) -> dict[str, Any]:
            reply = await bridge.call("session/create", params, check=False)
            assert "error" in reply, reply
            data: dict[str, Any] = reply["error"]["data"]
            assert data["code"] == "workspace_invalid", data
            return data

        placed: dict[str, str] = {}
        # through the root's link (as alpha declared it) and by the root's real name:
        # beta does not serve it, alpha does
        for name in (str(tmp_path / "served-link" / "proj"), str(served / "proj")):
            session, workspace = await created(beta, create(name))
            assert workspace == str(served / "proj")  # the session runs in the real folder
            placed[session] = "alpha"
        # a link from elsewhere into the served root, and ``..`` that stays inside
        for name in (str(tmp_path / "elsewhere" / "ws"), f"{outside}/../served/proj"):
            session, workspace = await created(beta, create(name))
            assert workspace == str(served / "proj")
            placed[session] = "alpha"
        # beta's own folder, named through a link: beta keeps it
        session, workspace = await created(beta, create(tmp_path / "b-link"))
        assert workspace == str(b)
        placed[session] = "beta"
        listed = nodes_of(await alpha.result("session/list", {}))
        assert {s: listed[s] for s in placed} == placed

        # escapes: a link inside the root that leads out of it, ``..`` after such a
        # link, and a name that only looks inside: refused, wherever they are asked
        escapes = [
            str(served / "escape"),
            f"{served}/escape/../outside",
            f"{tmp_path}/served-link/escape",
            f"{served}/escape/..",  # the parent of outside/: tmp_path itself
        ]
        for name in escapes:
            for bridge in (alpha, beta):
                await refused(bridge, create(name))
            named = await refused(beta, create(name, "alpha"))
            assert "alpha" in named["details"]["reason"]
        after = nodes_of(await beta.result("session/list", {}))
        assert set(after) == set(placed)  # nothing was created by the refusals
        assert not any(os.scandir(outside))


async def test_a_takeover_judges_the_workspace_by_its_real_path(
    pg_url: str, tmp_path: Path
) -> None:
    """A session created on alpha in ``elsewhere/ws``, a folder then moved to
    ``served/proj`` with a link left in its place (``elsewhere/ws`` -> ``served/proj``),
    and alpha SIGKILLed: beta finds it dead first (its beat is the fastest) and serves
    the scripted provider under ``elsewhere``, the folder the link is in, but not under
    ``served``; gamma serves ``served`` (declared through another link).  The takeover
    judges the stored workspace as placement does, by its real path on the member that
    judges it: gamma resumes it, and beta does not take it (judged by its name, the
    stored ``elsewhere/ws`` is beta's).  Creation judged the name when the session was
    made, so only a folder that became a link after it tells the two apart."""
    served, elsewhere = tmp_path / "served", tmp_path / "elsewhere"
    served.mkdir()
    (elsewhere / "ws").mkdir(parents=True)
    (tmp_path / "served-other").symlink_to(served)
    scripted = ("--node-providers", "scripted")
    extra: dict[str, tuple[str, ...]] = {
        "alpha": (*scripted, "--node-workspaces", str(elsewhere)),
        "beta": (*scripted, "--node-workspaces", str(elsewhere)),
        "gamma": (*scripted, "--node-workspaces", str(tmp_path / "served-other")),
    }
    leases = {"alpha": 3.0, "beta": 1.0, "gamma": 30.0}
    async with fleet(tmp_path, pg_url, extra=extra, leases=leases) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        steps: list[dict[str, Any]] = [{"type": "text", "text": "here"}]
        params = script_session(steps) | {"workspace": str(elsewhere / "ws"), "node": "alpha"}
        info = (await alpha.result("session/create", params))["session"]
        session = info["sessionId"]
        assert info["workspace"] == str(elsewhere / "ws")
        (elsewhere / "ws").rename(served / "proj")
        (elsewhere / "ws").symlink_to(served / "proj")
        await gamma.result("session/attach", {"sessionId": session})
        assert alpha.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        await events_until(gamma, session, "session.resumed", timeout=30)
        assert nodes_of(await beta.result("session/list", {}))[session] == "gamma"
        run = await beta.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        end = await events_until(gamma, session, "run.completed", timeout=30)
        assert end[-1]["runId"] == run["runId"]
        assert [p.name for p in elsewhere.iterdir()] == ["ws"]  # nothing but the link
        assert not list(served.iterdir())[1:]  # nor anything beside the moved folder


async def test_a_takeover_of_a_workspace_it_cannot_judge_leaves_the_session_closed(
    pg_url: str, tmp_path: Path
) -> None:
    """alpha's session whose stored workspace no member can judge (a relative path: only
    a damaged or foreign row holds one; written here through SQL) and alpha SIGKILLed:
    beta finds it dead (its beat is the faster), closes it ``bridge_crashed`` and does
    not take it over (``workspace_invalid``: logged); it stays closed, and beta serves
    on.  The judgement is inside the takeover's guard: outside it, the error escaped
    :func:`~agent_bridge.runtime.fleet.succeed` (which never raises) and ended beta's
    runtime."""
    import psycopg

    (tmp_path / "ws").mkdir()
    leases = {"alpha": 3.0, "beta": 1.0}
    async with fleet(tmp_path, pg_url, ("alpha", "beta"), leases=leases) as members:
        alpha, beta = members["alpha"], members["beta"]
        params = script_session([{"type": "text", "text": "here"}])
        params["workspace"] = str(tmp_path / "ws")
        session = (await alpha.result("session/create", params))["session"]["sessionId"]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE sessions SET workspace = 'ws' WHERE session_id = %s", (session,))
        assert alpha.proc is not None and beta.proc is not None
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        logged = f"session {session}: not taken over (the workspace path is not".encode()
        with anyio.fail_after(60):  # beta's log line, or its end
            while logged not in beta.stderr:
                assert beta.proc.returncode is None, bytes(beta.stderr[-3000:]).decode()
                await anyio.sleep(0.05)
        listed = {s["sessionId"]: s for s in (await beta.result("session/list", {}))["sessions"]}
        assert listed[session]["state"] == "closed"
        assert listed[session].get("node") is None
        assert b"Traceback" not in beta.stderr
