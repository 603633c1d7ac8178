"""Claude Code's CLI writing frames of odd shapes through the fake-claude stand-in, over
real pipes: each is a diagnostic, declined or ignored, never a crash; the run ends on its
own ``result`` and the next run works."""

from __future__ import annotations

from pathlib import Path

from test_claude_adapter import Fake, bridge_with, create, payloads, start_run, text_of


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


async def test_a_line_nested_too_deep_to_decode_is_a_diagnostic(tmp_path: Path) -> None:
    deep = '{"type":"assistant","message":' + _nested(5000) + "}"
    fake = Fake(tmp_path, {"turns": [[{"text": "one"}, {"line": deep}, {"text": "two"}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed", terminal
        assert text_of(bridge, run_id) == "onetwo"
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes == ["provider_unparseable_record"]
        await start_run(bridge, session_id, "again")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"


async def test_a_cli_that_goes_on_in_another_conversation_fails_the_run(tmp_path: Path) -> None:
    """After its first turn the CLI starts each turn (``system``/``init``) naming another
    session id: every frame of the turn is another session's, so none was ever this
    run's and its ``result`` would never come.  The run fails ``provider_contract`` at
    once; the next run starts a new CLI on this session's own conversation (``--resume``
    of the first id).  Before, the run waited for a result forever (until the host
    interrupted it), its output dropped as stray."""
    other = "0f0e0d0c-0b0a-4909-8807-060504030201"
    fake = Fake(
        tmp_path,
        {"turns": [[{"text": "one"}, {"switch_session": other}], "lost"]},
    )
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "first")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        run_id = await start_run(bridge, session_id, "second")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.failed", terminal
        assert terminal["payload"]["error"]["code"] == "provider_contract"
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes == ["provider_session_switched"]
        fake.write_script({"turns": ["three"]})  # what the next CLI process answers
        run_id = await start_run(bridge, session_id, "third")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run_id) == "three"
    starts = fake.starts()
    assert len(starts) == 2
    resumed = [a for a in starts[1]["argv"] if a.startswith("--resume")]
    assert resumed and other not in resumed[0]
