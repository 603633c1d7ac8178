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
