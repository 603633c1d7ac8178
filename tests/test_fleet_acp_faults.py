"""``agent-bridge acp`` on a fleet member whose session runs on another member, attacked:
the member running the turn is SIGKILLed mid-prompt.  The ACP client's ``session/prompt``
must end within the lease and a beat, never hang: with the run's end when another
member continues it (the approval offered again and answered), else a typed, retryable
error.  Real
processes on a real PostgreSQL journal (``test_fleet``, ``test_fleet_acp``); the one
fault injected otherwise is the database's: a trigger that loses a member's answer to a
routed request (the window between a member's start of a run and its answer reaching
the asker is a race no signal hits reliably).
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest
from acp_agent_support import ALLOWED, write_script
from test_fleet import fleet, nodes_of
from test_fleet_acp import Client, acp_member, member_argv

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import RequestError, text_block  # noqa: E402

from agent_bridge.frontends.acp.server import TAKEOVER_WAIT  # noqa: E402

pytestmark = pytest.mark.timeout(300)


#: beta's answer to a routed ``run/start`` is lost: the ``commands`` row keeps ``taken``
#: (a trigger skips its update to ``done``, noting whose answer it dropped in
#: ``lost_answers``: the row goes when beta's owner row is recovered), as when beta dies
#: before the answer is written
_LOSE_BETAS_ANSWER = """
CREATE TABLE lost_answers (owner TEXT NOT NULL);
CREATE FUNCTION lose_betas_answer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'done' AND NEW.method = 'run/start'
            AND NEW.owner IN (SELECT token FROM owners WHERE node = 'beta') THEN
        INSERT INTO lost_answers VALUES (NEW.owner);
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER lose_betas_answer BEFORE UPDATE ON commands
    FOR EACH ROW EXECUTE FUNCTION lose_betas_answer();
"""


@pytest.mark.parametrize(
    "waiting", ["approval", "working", "approval-taken-over", "approval-taken-over-answer-lost"]
)
async def test_the_member_running_a_prompt_dies_and_the_prompt_ends(
    pg_url: str, tmp_path: Path, waiting: str
) -> None:
    """beta runs the session of alpha's ACP prompt and is SIGKILLed while the run waits
    on its ``approval`` (no member can continue it, or gamma does: ``-taken-over``) or
    is ``working``.  ``approval-taken-over-answer-lost``: beta starts the run and asks
    the approval, but its answer to alpha's routed ``run/start`` never arrives (the
    flake of the ``approval-taken-over`` case, 1 run in 11, forced): alpha's routed start ends
    ``session_in_use`` once beta's lease has run out, and is sent again, under the same
    ``commandId``, to gamma, which took the session over and answers it with the same run
    (a duplicate): the prompt ends with that run.  Without the retry the prompt failed
    ``session_in_use`` while gamma ran its turn on."""
    import psycopg

    script = write_script(tmp_path, cancel_while="wait" if waiting == "working" else "approval")
    work = tmp_path / "work"
    work.mkdir()
    extra: dict[str, tuple[str, ...]] = {"beta": ("--node-providers", "scripted")}
    names: tuple[str, ...] = ("beta",)
    if waiting.startswith("approval-taken-over"):
        names = ("beta", "gamma")
        extra["gamma"] = ("--node-providers", "scripted")
    async with fleet(tmp_path, pg_url, names, extra=extra, lease=2.0) as members:
        beta = members["beta"]
        client = Client()
        argv = member_argv(
            tmp_path,
            pg_url,
            script,
            "alpha",
            "--node-providers",
            "claude-code",
            "--lease-seconds",
            "2",
        )
        async with acp_member(tmp_path, "alpha", argv, client) as conn:
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            assert nodes_of(await beta.result("session/list", {}))[sid] == "beta"
            client.decisions = ["allow_once", "allow_once"]
            await conn.prompt(session_id=sid, prompt=[text_block("one")])
            await conn.prompt(session_id=sid, prompt=[text_block("two")])
            client.decisions = [None] if waiting == "approval" else [None, "allow_once"]
            client.asked.clear()
            if waiting == "approval-taken-over-answer-lost":
                with psycopg.connect(pg_url, autocommit=True) as db:
                    db.execute(_LOSE_BETAS_ANSWER)
                    betas = db.execute("SELECT token FROM owners WHERE node = 'beta'").fetchall()
            prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("three")]))
            if waiting.startswith("approval"):
                await asyncio.wait_for(client.asked.wait(), 30)
            else:
                while "working" not in client.texts():
                    await asyncio.sleep(0.05)
            assert beta.proc is not None
            beta.proc.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            outcome: object
            try:
                outcome = await asyncio.wait_for(prompt, 60)
            except RequestError as exc:
                outcome = exc
            took = time.monotonic() - killed
            # the lease, a beat, the wait for a member to continue it, slack: never a hang
            assert took < 2.0 + 1.0 + TAKEOVER_WAIT + 5.0, took
            if waiting.startswith("approval-taken-over"):
                # gamma continued the run; the client answered the approval offered again
                assert not isinstance(outcome, RequestError), outcome.data
                assert getattr(outcome, "stop_reason", None) == "end_turn", outcome
                assert client.texts().endswith(ALLOWED * 3)
                assert nodes_of(await members["gamma"].result("session/list", {}))[sid] == "gamma"
                if waiting == "approval-taken-over-answer-lost":  # it was lost, not late
                    with psycopg.connect(pg_url, autocommit=True) as db:
                        lost = db.execute("SELECT DISTINCT owner FROM lost_answers").fetchall()
                        queued = db.execute(
                            "SELECT count(*) FROM commands WHERE owner = %s", betas[0]
                        ).fetchone()
                    assert lost == betas
                    assert queued == (0,)  # (beta's queue went with its owner row)
                client.release.set()
                return
            assert isinstance(outcome, RequestError), outcome
            assert outcome.data is not None
            # cut off at the approval, kept open for a member that can continue it (none
            # here): retryable; cut off while working: the run failed, bridge_crashed
            expected = "session_in_use" if waiting == "approval" else "bridge_crashed"
            assert outcome.data["code"] == expected, outcome.data
            assert outcome.data["retryable"] is True
            client.release.set()
            # the agent still serves: a new session has nowhere to run now, a typed refusal
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd=str(work), mcp_servers=[])
            assert refused.value.data is not None
            assert refused.value.data["code"] == "provider_unavailable"


async def test_bad_settings_for_a_session_another_member_runs_are_refused_typed(
    pg_url: str, tmp_path: Path
) -> None:
    """An unknown config option, a provider this bridge does not have and an unknown
    mode, set through the member that follows the session (routed to its owner since
    e3841c8): -32602 naming the field; a provider no member serves: its classified
    error, the session created again on its own provider; the session still runs a
    turn."""
    script = write_script(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    extra: dict[str, tuple[str, ...]] = {"beta": ("--node-providers", "scripted")}
    async with fleet(tmp_path, pg_url, ("beta",), extra=extra) as members:
        beta = members["beta"]
        client = Client()
        argv = member_argv(tmp_path, pg_url, script, "alpha", "--node-providers", "claude-code")
        async with acp_member(tmp_path, "alpha", argv, client) as conn:
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            sid = new.session_id
            assert nodes_of(await beta.result("session/list", {}))[sid] == "beta"
            attempts: list[tuple[str, dict[str, str], str]] = [
                ("set_config_option", {"config_id": "no-such", "value": "x"}, "configId"),
                # an unknown provider: as for a session here (its provider can change
                # before the first prompt, to one this bridge has)
                ("set_config_option", {"config_id": "provider", "value": "nope"}, "value"),
                ("set_session_mode", {"mode_id": "no-such-mode"}, "modeId"),
            ]
            for method, kwargs, field in attempts:
                with pytest.raises(RequestError) as refused:
                    await getattr(conn, method)(session_id=sid, **kwargs)
                assert refused.value.code == -32602, (method, kwargs)
                assert refused.value.data is not None
                assert refused.value.data["details"]["field"] == field, refused.value.data
            # a provider this bridge has but no member serves: refused typed, and the
            # session is created again on the provider it had (it was deleted before)
            with pytest.raises(RequestError) as unserved:
                await conn.set_config_option(config_id="provider", session_id=sid, value="gemini")
            assert unserved.value.data is not None
            assert unserved.value.data["code"] == "provider_unavailable", unserved.value.data
            assert nodes_of(await beta.result("session/list", {}))[sid] == "beta"
            # the session goes on: the same provider again is accepted, a turn runs
            await conn.set_config_option(config_id="provider", session_id=sid, value="scripted")
            client.decisions = ["allow_once"]
            reply = await conn.prompt(session_id=sid, prompt=[text_block("one")])
            assert reply.stop_reason == "end_turn"


async def test_a_cancel_while_no_member_runs_the_turn_sticks(pg_url: str, tmp_path: Path) -> None:
    """The member running the turn is SIGKILLed at an approval and no member can take
    over: a ``session/cancel`` then ends the prompt ``cancelled`` at once (it was
    ``session_in_use`` after :data:`TAKEOVER_WAIT`), and when a member started later
    takes the session over and continues the run, the cancel still holds: the run ends
    ``run.interrupted``, not with the approval answered and the turn run to its end."""
    script = write_script(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    extra: dict[str, tuple[str, ...]] = {
        "beta": ("--node-providers", "scripted"),
        "gamma": ("--node-providers", "scripted"),
    }
    async with fleet(tmp_path, pg_url, ("beta",), extra=extra, lease=2.0) as members:
        beta = members["beta"]
        client = Client()
        argv = member_argv(
            tmp_path,
            pg_url,
            script,
            "alpha",
            "--node-providers",
            "claude-code",
            "--lease-seconds",
            "2",
        )
        async with acp_member(tmp_path, "alpha", argv, client) as conn:
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            client.decisions = ["allow_once", "allow_once"]
            await conn.prompt(session_id=sid, prompt=[text_block("one")])
            await conn.prompt(session_id=sid, prompt=[text_block("two")])
            client.decisions = [None]
            client.asked.clear()
            prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("three")]))
            await asyncio.wait_for(client.asked.wait(), 30)
            assert beta.proc is not None
            beta.proc.send_signal(signal.SIGKILL)
            await asyncio.sleep(4.0)  # the lease and a beat: the session is cut
            cancelled = time.monotonic()
            await conn.cancel(session_id=sid)
            reply = await asyncio.wait_for(prompt, 30)
            assert reply.stop_reason == "cancelled", reply
            assert time.monotonic() - cancelled < TAKEOVER_WAIT / 2
            client.release.set()
            # a member that can run the session starts later, a host resumes the session
            # there and the run is continued; nobody answers its approval asked again
            client.decisions = [None]
            client.release = asyncio.Event()
            async with fleet(tmp_path, pg_url, ("gamma",), extra=extra, lease=2.0) as later:
                gamma = later["gamma"]
                await gamma.result("session/resume", {"sessionId": sid})
                kinds: list[str] = []
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    read = await gamma.result("events/read", {"sessionId": sid, "limit": 1000})
                    kinds = [e["payload"]["type"] for e in read["events"]]
                    if kinds.count("session.resumed") and kinds[-1].startswith("run."):
                        break
                    await asyncio.sleep(0.2)
                assert "session.resumed" in kinds, kinds
                assert kinds[-1] == "run.interrupted", kinds
                assert ALLOWED * 3 not in client.texts()
                client.release.set()
