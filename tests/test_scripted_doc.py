"""docs/scripted.md: every step type of the script language has a section and a JSON
example, and every example decodes as the provider decodes scripts."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import msgspec

from agent_bridge.wire.script import Step, decode_script

DOC = Path(__file__).resolve().parent.parent / "docs" / "scripted.md"


def _examples() -> list[object]:
    text = DOC.read_text("utf-8")
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.S)]


def _step_types() -> set[str]:
    return {str(t.__struct_config__.tag) for t in typing.get_args(Step)}


def test_every_example_decodes() -> None:
    for example in _examples():
        assert isinstance(example, dict)
        if "provider" in example:  # a session/create params example
            example = example["options"]["script"]
        if "type" in example:  # one step
            example = {"steps": [example]}
        decode_script(example)


def test_every_step_type_is_documented_with_an_example() -> None:
    text = DOC.read_text("utf-8")
    shown: set[str] = set()

    def collect(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("type"), str) and "kind" not in value:
                shown.add(value["type"])
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    for example in _examples():
        collect(example)
    types = _step_types()
    assert types <= shown, f"step types without a JSON example: {sorted(types - shown)}"
    for name in types:
        assert f"`{name}`" in text, name


def test_a_bad_step_does_not_decode() -> None:
    try:
        decode_script({"steps": [{"type": "text", "txt": "typo"}]})
    except msgspec.ValidationError:
        return
    raise AssertionError("a misspelt member decoded")


async def test_the_tool_call_with_a_diff_example_reaches_a_host_as_an_edit() -> None:
    from bridge_client import script_session
    from conftest import running_bridge

    text = DOC.read_text("utf-8")
    section = text[text.index("#### A tool call that carries a diff") :]
    step = json.loads(re.findall(r"```json\n(.*?)```", section, re.S)[0])
    async with running_bridge("newline") as bridge:
        created = await bridge.result("session/create", script_session([step]))
        sid = created["session"]["sessionId"]
        await bridge.result("run/start", {"sessionId": sid, "input": {"text": "fix it"}})
        request = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
        answer = {"kind": "approval", "decision": "allow", "mode": "once"}
        await bridge.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed"
        tools = [
            m["params"]["payload"]
            for m in bridge.received
            if m.get("method") == "event" and m["params"]["payload"]["type"] == "tool.activity"
        ]
        assert [t["status"] for t in tools] == ["started", "completed"]
        assert tools[0]["content"] == [
            {
                "type": "edit",
                "path": "Makefile",
                "oldText": "all:\n\tcc -o app main.c\n",
                "newText": "all:\n\tcc -Wall -o app main.c\n",
            }
        ]
