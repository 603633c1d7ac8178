"""``agent-bridge acp`` on a fleet member places its sessions as ``session/create`` does
(``docs/fleet.md``, Placement): driven by the ACP Python SDK's client, an ACP agent
on a member that does not serve its provider creates the session on the member that
does; the prompt turns (an approval answered by the ACP client, a cancel mid-turn) go
through the database, the updates come back through it; a second ACP client on a third
member loads the session (its history replayed, its turn routed to the member that runs
it) and leaves it running; the session ends with the client that created it.  Real
processes, each member in its own network namespace with its own home (``test_fleet``),
on a real PostgreSQL journal; every ACP message is validated against ACP's schema.json
(the tap).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp_agent_support import (
    ALLOWED,
    BRIDGE,
    DENIED,
    FIRST_TEXT,
    TAP,
    agent_argv,
    check_schema,
    write_script,
)
from test_acp_agent_toggles import TOGGLES
from test_fleet import _own_network, fleet, member_env, nodes_of

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import RequestError, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    RequestPermissionResponse,
)

pytestmark = pytest.mark.timeout(300)


class Client:
    """An ACP client: records updates, answers permissions from a queue (``None``:
    never, until the turn is cancelled)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.decisions: list[str | None] = []
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.set()
        decision = self.decisions.pop(0) if self.decisions else None
        if decision is None:
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=decision)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def texts(self) -> str:
        return "".join(
            u.content.text
            for u in self.updates
            if getattr(u, "session_update", None) == "agent_message_chunk"
        )


def member_argv(tmp_path: Path, pg_url: str, script: Path, node: str, *more: str) -> list[str]:
    """Returns the argv of ``agent-bridge acp`` as fleet member ``node``: the test script,
    its state under ``tmp_path/node``, the fleet's journal, its exchange logged to
    ``acp.log`` (``acp2.log`` for any node but alpha), then ``more``."""
    log = tmp_path / ("acp.log" if node == "alpha" else "acp2.log")
    state = tmp_path / node / "state"
    return agent_argv(log, state, script, "--journal", pg_url, "--node", node, *more)


@asynccontextmanager
async def acp_member(
    tmp_path: Path,
    node: str,
    argv: list[str],
    client: Client,
    env: dict[str, str] | None = None,
    capabilities: ClientCapabilities | None = None,
) -> AsyncIterator[Any]:
    """Runs ``argv`` as fleet member ``node`` (its own network namespace and home, plus
    ``env``) with ``client`` as its ACP client; yields the connection once ``initialize``
    (``capabilities``, else none) is answered."""
    member = {**os.environ, **member_env(tmp_path, node), **(env or {})}
    command = [*_own_network(), *argv]
    async with spawn_agent_process(client, command[0], *command[1:], env=member) as (conn, _):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        caps = capabilities if capabilities is not None else ClientCapabilities()
        await conn.initialize(protocol_version=1, client_capabilities=caps)
        yield conn


async def test_acp_session_new_runs_on_a_member_that_serves_the_provider(
    pg_url: str, tmp_path: Path
) -> None:
    script = write_script(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "acp.log"
    extra: dict[str, tuple[str, ...]] = {"beta": ("--node-providers", "scripted")}
    async with fleet(tmp_path, pg_url, ("beta",), extra=extra) as members:
        beta = members["beta"]
        # alpha: the ACP agent, a member that serves claude-code only
        client = Client()
        argv = member_argv(tmp_path, pg_url, script, "alpha", "--node-providers", "claude-code")
        async with acp_member(tmp_path, "alpha", argv, client) as conn:
            session = await conn.new_session(cwd=str(work), mcp_servers=[])
            sid = session.session_id
            # its owner's options, as for a session here
            assert session.config_options is not None
            provider = next(o for o in session.config_options if o.id == "provider")
            assert provider.current_value == "scripted"
            assert nodes_of(await beta.result("session/list", {}))[sid] == "beta"

            # a turn: streamed from beta, its approval answered by this client
            client.decisions = ["allow_once"]
            reply = await conn.prompt(session_id=sid, prompt=[text_block("Greet")])
            assert reply.stop_reason == "end_turn"
            text = client.texts()
            assert text.startswith(FIRST_TEXT) and text.endswith(ALLOWED), text

            # a turn cancelled mid-turn, while its approval is unanswered
            client.decisions = [None]
            prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("Stop")]))
            await asyncio.wait_for(client.asked.wait(), 30)
            await conn.cancel(session_id=sid)
            reply = await asyncio.wait_for(prompt, 30)
            assert reply.stop_reason == "cancelled"
            client.release.set()

            with pytest.raises(RequestError) as refused:
                await conn.set_config_option(config_id="provider", session_id=sid, value="x")
            assert refused.value.code == -32602  # it runs on beta, which keeps its provider

            # another editor, on another member (delta), loads the session beta runs: its
            # history is replayed, it follows it, and its turn goes to beta
            other = Client()
            argv2 = member_argv(
                tmp_path, pg_url, script, "delta", "--node-providers", "claude-code"
            )
            async with acp_member(tmp_path, "delta", argv2, other) as conn2:
                loaded = await conn2.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
                assert loaded is not None and loaded.config_options is not None  # beta's
                users = [
                    u.content.text
                    for u in other.updates
                    if u.session_update == "user_message_chunk"
                ]
                assert users == ["Greet", "Stop"]  # replayed before the reply
                assert other.texts().startswith(FIRST_TEXT + ALLOWED)
                other.updates.clear()
                other.decisions = ["reject_once"]
                client.release.set()  # (the first client, following too, declines)
                reply = await conn2.prompt(session_id=sid, prompt=[text_block("Again")])
                assert reply.stop_reason == "end_turn"
                assert other.texts() == DENIED
            # delta only loaded it: it goes on when delta's client leaves
            assert nodes_of(await beta.result("session/list", {}))[sid] == "beta"

        # the client went away: its session, on beta, ends with it
        with anyio.fail_after(20):
            while nodes_of(await beta.result("session/list", {}))[sid] is not None:
                await anyio.sleep(0.1)
        stored = await beta.result("events/read", {"sessionId": sid, "limit": 1000})
        kinds = [e["payload"]["type"] for e in stored["events"]]
        assert kinds.count("run.started") == 3
        assert "run.completed" in kinds and "run.interrupted" in kinds
        assert kinds[-1] == "session.closed"
    check_schema(log)
    check_schema(tmp_path / "acp2.log")


#: a provider that names its models and modes (``session/settings``) and its commands
SETTINGS: dict[str, Any] = {
    "model": {"current": "small", "available": [{"id": "small"}, {"id": "large"}]},
    "mode": {"current": "ask", "available": [{"id": "ask", "name": "Ask"}, {"id": "auto"}]},
}


async def test_an_acp_session_on_another_member_has_its_owners_modes_options_and_title(
    pg_url: str, tmp_path: Path
) -> None:
    """A session ``session/new`` placed on beta shows the ACP client beta's modes,
    config options and commands; ``session/set_mode`` and ``session/set_config_option``
    are made by beta, once each; a change of beta's settings by another host (a bridge
    protocol host on gamma, routed to beta) reaches the client as
    ``current_mode_update`` / ``config_option_update``; the first prompt titles it (on
    beta, for every member's ``session/list``), and the second does not."""
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "settings": SETTINGS,
                "commands": [{"name": "review", "description": "Review the diff"}],
                "steps": [{"type": "echo"}],
            }
        )
    )
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "acp.log"
    extra: dict[str, tuple[str, ...]] = {"beta": ("--node-providers", "scripted")}
    async with fleet(tmp_path, pg_url, ("beta", "gamma"), extra=extra) as members:
        beta, gamma = members["beta"], members["gamma"]
        client = Client()
        argv = member_argv(tmp_path, pg_url, script, "alpha", "--node-providers", "claude-code")
        async with acp_member(tmp_path, "alpha", argv, client) as conn:
            session = await conn.new_session(cwd=str(work), mcp_servers=[])
            sid = session.session_id
            assert nodes_of(await beta.result("session/list", {}))[sid] == "beta"
            assert session.modes is not None
            assert session.modes.current_mode_id == "ask"
            assert [m.id for m in session.modes.available_modes] == ["ask", "auto"]
            options = {o.id: o for o in session.config_options or []}
            assert options["model"].current_value == "small"
            assert [c.value for c in options["model"].options] == ["small", "large"]

            def updates(kind: str) -> list[Any]:
                return [u for u in client.updates if u.session_update == kind]

            with anyio.fail_after(20):  # its commands, right after the reply
                while not updates("available_commands_update"):
                    await anyio.sleep(0.05)
            names = [c.name for c in updates("available_commands_update")[0].available_commands]
            assert names == ["review"]

            # set here, made by beta (once), told back through its settings.updated
            await conn.set_session_mode(mode_id="auto", session_id=sid)
            with pytest.raises(RequestError) as unknown:
                await conn.set_session_mode(mode_id="huge", session_id=sid)
            assert unknown.value.code == -32602
            changed = await conn.set_config_option(config_id="model", session_id=sid, value="large")
            model = next(o for o in changed.config_options if o.id == "model")
            assert model.current_value == "large"
            assert (await beta.result("session/settings", {"sessionId": sid}))["model"][
                "current"
            ] == "large"
            # another host changes beta's settings (through gamma, routed to beta)
            configured = await gamma.result("session/configure", {"sessionId": sid, "mode": "ask"})
            assert configured["mode"]["current"] == "ask"
            # (as are reads: gamma's hosts get beta's settings and commands)
            read = await gamma.result("session/settings", {"sessionId": sid})
            assert (read["model"]["current"], read["mode"]["current"]) == ("large", "ask")
            listed_commands = await gamma.result("session/commands", {"sessionId": sid})
            assert [c["name"] for c in listed_commands["commands"]] == ["review"]
            with anyio.fail_after(20):
                while len(updates("current_mode_update")) < 3:
                    await anyio.sleep(0.05)
                while not updates("config_option_update"):
                    await anyio.sleep(0.05)
            # (the model's settings.updated names the mode too, as for a session here)
            modes = [u.current_mode_id for u in updates("current_mode_update")]
            assert modes == ["auto", "auto", "ask"]
            last = next(
                o for o in updates("config_option_update")[-1].config_options if o.id == "model"
            )
            assert last.current_value == "large"

            # the first prompt titles it (beta keeps the title), the second does not
            reply = await conn.prompt(
                session_id=sid, prompt=[text_block("Fix the   login page\nthen the tests")]
            )
            assert reply.stop_reason == "end_turn"
            reply = await conn.prompt(session_id=sid, prompt=[text_block("Another")])
            assert reply.stop_reason == "end_turn"
            titles = [u.title for u in updates("session_info_update")]
            assert titles == ["Fix the login page"]
            listed = await gamma.result("session/list", {})
            mine = next(s for s in listed["sessions"] if s["sessionId"] == sid)
            assert mine["title"] == "Fix the login page"

        stored = await beta.result("events/read", {"sessionId": sid, "limit": 1000})
        settled = [
            (e["payload"].get("model"), e["payload"].get("mode"))
            for e in stored["events"]
            if e["payload"]["type"] == "settings.updated"
        ]
        # each change made once: set_mode auto, the model large, gamma's mode ask
        assert settled == [("small", "auto"), ("large", "auto"), ("large", "ask")]
    check_schema(log)


async def test_a_session_option_of_an_acp_session_on_another_member_is_set_by_its_owner(
    pg_url: str, tmp_path: Path
) -> None:
    """The provider is an ACP agent (another ``agent-bridge acp`` on the scripted
    provider, configured as ``inner``) with boolean session options; only beta serves
    it.  The ACP client (on alpha) sees them as toggles, sets one: beta restarts its
    provider session with it (the option changed there, once, the others kept), the
    reply and a later ``session/load`` show it, and the next prompt runs on beta."""
    inner = [BRIDGE, "acp", "--provider", "scripted", "--state-dir", str(tmp_path / "inner")]
    config = tmp_path / "config.toml"
    config.write_text(
        f'[acp.agents.inner]\ndisplayName = "Inner bridge"\ncommand = {json.dumps(inner)}\n'
    )
    env = {"AGENT_BRIDGE_CONFIG": str(config)}
    extra: dict[str, tuple[str, ...]] = {"beta": ("--node-providers", "inner")}
    log = tmp_path / "acp.log"
    async with fleet(tmp_path, pg_url, ("beta",), extra=extra, env=env) as members:
        beta = members["beta"]
        argv = [sys.executable, str(TAP), "--log", str(log), "--", BRIDGE, "acp"]
        argv += ["--provider", "inner", "--state-dir", str(tmp_path / "alpha" / "state")]
        argv += ["--journal", pg_url, "--node", "alpha", "--node-providers", "claude-code"]
        client = Client()
        async with acp_member(tmp_path, "alpha", argv, client, env, TOGGLES) as conn:
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            sid = session.session_id
            assert nodes_of(await beta.result("session/list", {}))[sid] == "beta"
            current = {o.id: o.current_value for o in session.config_options or []}
            assert current["clientFs"] is False and current["clientTerminal"] is False
            changed = await conn.set_config_option(
                config_id="clientFs", session_id=sid, type="boolean", value=True
            )
            after = {o.id: o.current_value for o in changed.config_options}
            assert after["clientFs"] is True and after["clientTerminal"] is False
            with pytest.raises(RequestError) as bad:  # a toggle takes a boolean
                await conn.set_config_option(config_id="clientTerminal", session_id=sid, value="on")
            assert bad.value.code == -32602
            reply = await conn.prompt(session_id=sid, prompt=[text_block("toggled")])
            assert reply.stop_reason == "end_turn"
            assert client.texts() == "You said: toggled"
            loaded = await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            assert loaded is not None
            again = {o.id: o.current_value for o in loaded.config_options or []}
            assert again["clientFs"] is True and again["clientTerminal"] is False
        stored = await beta.result("events/read", {"sessionId": sid, "limit": 1000})
        kinds = [e["payload"]["type"] for e in stored["events"]]
        assert kinds.count("run.started") == 1
    check_schema(log)


async def test_an_acp_member_can_be_placed_on_as_soon_as_it_answered_initialize(
    pg_url: str, tmp_path: Path
) -> None:
    """``agent-bridge acp`` records what its member serves before its first reply too:
    beta's host (beta serves claude-code only) has a scripted session placed on alpha,
    an ACP agent member serving every provider (so it loads them all first), right
    after alpha answered ``initialize``."""
    script = write_script(tmp_path)
    log = tmp_path / "acp.log"
    extra: dict[str, tuple[str, ...]] = {"beta": ("--node-providers", "claude-code")}
    async with fleet(tmp_path, pg_url, ("beta",), extra=extra) as members:
        beta = members["beta"]
        argv = member_argv(tmp_path, pg_url, script, "alpha")
        async with acp_member(tmp_path, "alpha", argv, Client()):
            params = {"provider": "scripted", "options": {"script": {"steps": []}}}
            reply = await beta.call("session/create", params, check=False)
            assert "result" in reply, reply
            sid = reply["result"]["session"]["sessionId"]
            assert nodes_of(await beta.result("session/list", {}))[sid] == "alpha"
    check_schema(log)


async def test_the_provider_of_an_acp_session_on_another_member_switches_across_members(
    pg_url: str, tmp_path: Path
) -> None:
    """Before its first prompt, a session placed on gamma (scripted) is switched by the
    ACP client (on alpha) to ``inner``, an ACP agent provider only beta serves: closed
    on gamma, deleted, created again under its id on beta, followed from alpha; its
    prompt runs there.  After a prompt, the provider is fixed (``-32602``)."""
    inner = [BRIDGE, "acp", "--provider", "scripted", "--state-dir", str(tmp_path / "inner")]
    config = tmp_path / "config.toml"
    config.write_text(
        f'[acp.agents.inner]\ndisplayName = "Inner bridge"\ncommand = {json.dumps(inner)}\n'
    )
    env = {"AGENT_BRIDGE_CONFIG": str(config)}
    extra: dict[str, tuple[str, ...]] = {
        "beta": ("--node-providers", "inner"),
        "gamma": ("--node-providers", "scripted"),
    }
    script = write_script(tmp_path)
    log = tmp_path / "acp.log"
    async with fleet(tmp_path, pg_url, ("beta", "gamma"), extra=extra, env=env) as members:
        beta = members["beta"]
        argv = member_argv(tmp_path, pg_url, script, "alpha", "--node-providers", "claude-code")
        client = Client()
        async with acp_member(tmp_path, "alpha", argv, client, env) as conn:
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            sid = session.session_id
            assert nodes_of(await beta.result("session/list", {}))[sid] == "gamma"
            changed = await conn.set_config_option(
                config_id="provider", session_id=sid, value="inner"
            )
            now = next(o for o in changed.config_options if o.id == "provider")
            assert now.current_value == "inner"
            assert nodes_of(await beta.result("session/list", {}))[sid] == "beta"
            with anyio.fail_after(30):  # (it hung before: old sequence numbers)
                reply = await conn.prompt(session_id=sid, prompt=[text_block("switched")])
            assert reply.stop_reason == "end_turn"
            assert client.texts() == "You said: switched"
            with pytest.raises(RequestError) as fixed:
                await conn.set_config_option(config_id="provider", session_id=sid, value="scripted")
            assert fixed.value.code == -32602
        stored = await beta.result("events/read", {"sessionId": sid, "limit": 1000})
        kinds = [e["payload"]["type"] for e in stored["events"]]
        # the session as created again (nothing of the one gamma closed), closed with
        # the client that placed it
        assert kinds == ["run.started", "text.delta", "run.completed", "session.closed"]
    check_schema(log)
