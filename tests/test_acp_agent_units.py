"""The pure parts of the ACP agent front-end, and ``agent-bridge acp``'s argument errors."""

from __future__ import annotations

import subprocess
from typing import Any

import msgspec
import pytest
from acp_agent_support import BRIDGE

from agent_bridge.commands.options import parse_options
from agent_bridge.errors import BridgeError
from agent_bridge.frontends.acp.options import apply_choice, config_options, mcp_options
from agent_bridge.frontends.acp.prompt import run_input
from agent_bridge.frontends.acp.server import TITLE_CHARS, acp_error, prompt_title
from agent_bridge.frontends.acp.updates import UpdateMapper, stop_reason
from agent_bridge.registry import ProviderRegistry
from agent_bridge.wire import acp
from agent_bridge.wire.events import (
    ContextUsage,
    CumulativeUsage,
    RunCompleted,
    RunInterrupted,
    ToolActivity,
    Usage,
)
from agent_bridge.wire.inputs import (
    CommandInput,
    FileInput,
    ImageInput,
    InputKind,
    ResourceInput,
    TextInput,
)
from agent_bridge.wire.methods import RunInput


def test_stop_reasons() -> None:
    assert stop_reason(RunCompleted()) == "end_turn"
    assert stop_reason(RunCompleted("max_tokens")) == "max_tokens"
    assert stop_reason(RunCompleted("refusal")) == "refusal"
    assert stop_reason(RunCompleted("max_turns")) == "max_turn_requests"
    assert stop_reason(RunCompleted("tool_use")) == "end_turn"
    assert stop_reason(RunInterrupted("user")) == "cancelled"


def test_tool_output_accumulates_and_usage_maps() -> None:
    mapper = UpdateMapper()
    mapper.updates(ToolActivity("t1", "Bash", "started", input={"command": "ls"}, kind="execute"))
    mapper.updates(ToolActivity("t1", "Bash", "output", output="a\n"))
    (update,) = mapper.updates(ToolActivity("t1", "Bash", "output", output="b\n"))
    assert update["content"][0]["content"]["text"] == "a\nb\n"
    (done,) = mapper.updates(ToolActivity("t1", "Bash", "completed", exit_code=0))
    assert done["status"] == "completed" and done["rawOutput"] == {
        "output": "a\nb\n",
        "exitCode": 0,
    }
    usage = Usage(ContextUsage(10, 100), CumulativeUsage(cost_usd=0.5))
    assert mapper.updates(usage) == [
        {"sessionUpdate": "usage_update", "used": 10, "size": 100,
         "cost": {"amount": 0.5, "currency": "USD"}}
    ]  # fmt: skip
    assert mapper.updates(Usage(cumulative=CumulativeUsage(input_tokens=3))) == []


def test_config_options_of_codex_and_choices() -> None:
    registry = ProviderRegistry.default()
    codex = registry.get("codex").describe()
    options = config_options(codex, {}, ["scripted", "codex"])
    by_id = {o["id"]: o for o in options}
    assert by_id["reasoningEffort"]["category"] == "thought_level"
    assert by_id["approvalPolicy"]["category"] == "mode"
    assert by_id["model"]["currentValue"] == "default"
    assert apply_choice(codex, {}, "reasoningEffort", "high") == {"reasoningEffort": "high"}
    assert apply_choice(codex, {"model": "x"}, "model", "default") == {}
    for config_id, value in (("nope", "x"), ("reasoningEffort", "extreme"), ("model", True)):
        with pytest.raises(BridgeError) as bad:
            apply_choice(codex, {}, config_id, value)
        assert bad.value.error_code == "invalid_params"


def test_boolean_options_are_toggles_only_for_a_client_that_takes_them() -> None:
    codex = ProviderRegistry.default().get("codex").describe()
    assert "strictConfig" not in {o["id"] for o in config_options(codex, {}, ["codex"])}
    with pytest.raises(BridgeError) as unknown:  # not offered to such a client
        apply_choice(codex, {}, "strictConfig", False)
    assert unknown.value.info.details == {"field": "configId"}
    toggles = {
        o["id"]: o
        for o in config_options(codex, {"strictConfig": False}, ["codex"], booleans=True)
        if o["type"] == "boolean"
    }
    assert set(toggles) == {"strictConfig"}
    assert toggles["strictConfig"]["currentValue"] is False
    assert "description" in toggles["strictConfig"]
    (default,) = (
        o for o in config_options(codex, {}, ["codex"], booleans=True) if o["type"] == "boolean"
    )
    assert default["currentValue"] is True  # the provider's declared default
    assert apply_choice(codex, {"model": "m"}, "strictConfig", False, booleans=True) == {
        "model": "m",
        "strictConfig": False,
    }
    for value in ("false", 0, None):
        with pytest.raises(BridgeError) as bad:
            apply_choice(codex, {}, "strictConfig", value, booleans=True)
        assert bad.value.info.details == {"field": "value"}
    with pytest.raises(BridgeError):  # a select still takes a value id only
        apply_choice(codex, {}, "reasoningEffort", True, booleans=True)


def test_a_first_prompt_gives_a_short_one_line_title() -> None:
    assert prompt_title("Fix the build") == "Fix the build"
    assert prompt_title("\n  \n  Fix   the\tbuild  \nthen test") == "Fix the build"
    assert prompt_title("") is None and prompt_title(" \n\t") is None
    words = " ".join(["word"] * 40)
    long = prompt_title(words)
    assert long is not None and long.endswith("…") and len(long) <= TITLE_CHARS
    assert long[:-1] == words[: len(long) - 1] and not long[:-1].endswith(" ")
    unbroken = prompt_title("x" * 200)
    assert unbroken == "x" * (TITLE_CHARS - 1) + "…"


def test_mcp_servers_pass_through() -> None:
    registry = ProviderRegistry.default()
    stdio = {
        "name": "fs",
        "command": "/bin/mcp",
        "args": ["-v"],
        "env": [{"name": "A", "value": "1"}],
    }
    claude = mcp_options(registry.get("claude-code").describe(), [stdio])
    assert claude == {
        "mcpConfig": {
            "mcpServers": {"fs": {"command": "/bin/mcp", "args": ["-v"], "env": {"A": "1"}}}
        }
    }
    assert mcp_options(registry.get("acp").describe(), [stdio]) == {"mcpServers": [stdio]}
    assert mcp_options(registry.get("scripted").describe(), [stdio]) == {}


def _prompt(blocks: list[dict[str, Any]]) -> acp.Prompt:
    return msgspec.convert(blocks, acp.Prompt)


PROMPT: list[dict[str, Any]] = [
    {"type": "text", "text": "look at"},
    {"type": "resource_link", "uri": "file:///w/a%20b.py", "name": "a b.py"},
    {"type": "resource_link", "uri": "https://example.test/x", "name": "x"},
    {"type": "resource", "resource": {"uri": "file:///w/b.py", "text": "print()"}},
]


def test_a_prompt_for_a_text_only_provider_is_text() -> None:
    assert run_input(_prompt(PROMPT), ("text",)) == RunInput(
        text="look at\n@file:///w/a%20b.py\n@https://example.test/x\n"
        "<resource uri=file:///w/b.py>\nprint()\n</resource>"
    )
    image: dict[str, Any] = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    block: dict[str, Any]
    for block in (
        image,
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///w/c.png", "blob": "AA=="}},
        {"type": "resource", "resource": {"uri": "file:///w/c.png"}},
    ):
        with pytest.raises(BridgeError) as caught:
            run_input(_prompt([PROMPT[0], block]), ("text",))
        assert caught.value.error_code == "invalid_params"
        assert caught.value.info.details is not None
        assert caught.value.info.details["field"] == "prompt.1"


def test_a_prompt_for_a_provider_taking_blocks_passes_them_through() -> None:
    image: dict[str, Any] = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    blob: dict[str, Any] = {
        "uri": "file:///w/c.png",
        "blob": "iVBORw0KGgo=",
        "mimeType": "image/png",
    }
    kinds: tuple[InputKind, ...] = ("text", "image", "file", "resource")
    got = run_input(_prompt([*PROMPT, image, {"type": "resource", "resource": blob}]), kinds)
    assert got == RunInput(
        content=(
            TextInput("look at"),
            FileInput("/w/a b.py"),
            TextInput("@https://example.test/x"),
            ResourceInput("print()", "file:///w/b.py"),
            ImageInput(mime_type="image/png", data="iVBORw0KGgo="),
            ImageInput(mime_type="image/png", data="iVBORw0KGgo="),
        )
    )
    assert run_input(_prompt(PROMPT[:1]), kinds) == RunInput(text="look at")


def test_a_slash_command_of_the_session_is_a_command_block() -> None:
    """``/<name> <arguments>`` naming one of the session's commands is that command when
    the provider takes commands (Codex runs a command block as a skill mention, which
    the text would not be); anything else stays text."""
    kinds: tuple[InputKind, ...] = ("text", "file", "command")
    commands = {"greet", "review"}
    slash = [{"type": "text", "text": "/greet the team\nplease"}]
    link = {"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py"}
    assert run_input(_prompt(slash), kinds, commands) == RunInput(
        content=(CommandInput("greet", "the team\nplease"),)
    )
    bare = [{"type": "text", "text": "/review"}, link]
    assert run_input(_prompt(bare), kinds, commands) == RunInput(
        content=(CommandInput("review"), FileInput("/w/a.py"))
    )
    for text in ("/deploy now", "greet", "say /greet", "//greet"):
        prompt = _prompt([{"type": "text", "text": text}])
        assert run_input(prompt, kinds, commands) == RunInput(text=text)
    # a provider that takes no commands gets the text, as before
    assert run_input(_prompt(slash), ("text",), commands) == RunInput(
        text="/greet the team\nplease"
    )


def test_acp_error_codes() -> None:
    assert acp_error(BridgeError("provider_auth_required")).code == -32000
    assert acp_error(BridgeError("session_not_found")).code == -32002
    assert acp_error(BridgeError("invalid_option")).code == -32602
    assert acp_error(BridgeError("unsupported")).code == -32602
    error = acp_error(BridgeError("provider_crashed"))
    assert error.code == -32603 and error.data["code"] == "provider_crashed"


def test_option_parsing() -> None:
    assert parse_options(["model=sonnet", "n=3", "x={\"a\": 1}"]) == {
        "model": "sonnet", "n": 3, "x": {"a": 1}
    }  # fmt: skip
    with pytest.raises(ValueError):
        parse_options(["novalue"])


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--provider", "nope"], 2, "unknown"),
        (["-o", "novalue"], 2, "NAME=VALUE"),
        (["--provider", "scripted", "--login"], 1, "no login command"),
    ],
)
def test_cli_errors(args: list[str], code: int, says: str) -> None:
    done = subprocess.run(
        [BRIDGE, "acp", *args], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == code
    assert done.stdout == b""
    assert says in done.stderr.decode()
