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
