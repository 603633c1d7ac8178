"""The Neovim plugin (editors/neovim) in a real headless Neovim against the real bridge.

The scenario (tests/data/editors/nvim_session.lua) drives a whole scripted session through
the plugin's own :AgentBridge commands: a missing bridge gives a message with the next
step; text and thinking stream into the chat buffer; an approval is answered through
vim.ui.select with the approval's modes (the pending count is 1 while it is asked); an
edit opens in a :diffsplit view; a question is answered; a run is interrupted; the
traffic log shows both directions; after the bridge restarts on the same state directory
the session is listed, reopened with no gap and no duplicate, and runs again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from editor_tools import ROOT, bridge_command, require_editor, run_editor

DATA = ROOT / "tests" / "data" / "editors"


def nvim_scenario(
    tmp_path: Path,
    scenario: str,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 100,
    out_name: str = "outcome.json",
    check: bool = True,
) -> tuple[Any, str]:
    """Run ``tests/data/editors/SCENARIO`` in a real headless Neovim (``-u NONE``) with
    the plugin, the real bridge, a private HOME, XDG directories and state directory, and
    ENV on top; the scenario writes its outcome (JSON) to ``AB_OUT``.

    Returns the outcome and Neovim's output; with ``check`` the outcome must say ``ok``.
    """
    nvim = require_editor("nvim")
    out = tmp_path / out_name
    full = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "AB_PLUGIN": str(ROOT / "editors" / "neovim"),
        "AB_BRIDGE": bridge_command()[0],
        "AB_STATE": str(tmp_path / "state"),
        "AB_OUT": str(out),
        **(env or {}),
    }
    argv = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(DATA / scenario)]
    log = run_editor(argv, env=full, timeout=timeout)
    assert out.exists(), log
    outcome = json.loads(out.read_text())
    if check:
        assert outcome.get("ok") and "error" not in outcome, (outcome, log)
    return outcome, log


RUN1 = [
    "## You",
    "Fix the build",
    "",
    "## Agent",
    "▸ thinking",
    "  │ Let me look at the build.",
    "I will fix the Makefile.",
    "? approval: Edit Makefile",
    "→ responded: allow (session)",
    "▸ tool Edit: Edit Makefile [completed]",
    "  │ edit Makefile (changed) — :AgentBridge diff 1",
    "? question: Run the tests too?",
    "→ responded: yes",
    "Tests pass.",
    "Done.",
    "✓ done (end_turn)",
]
AFTER = [
    "",
    "## You",
    "Keep going",
    "",
    "## Agent",
    "Working on it...",
    "✗ interrupted (user)",
    "— session closed (shutdown)",
    "— session resumed",
    "",
    "## You",
    "again",
    "",
    "## Agent",
    "You said: again",
    "✓ done (end_turn)",
]


def test_neovim_plugin_drives_a_whole_session(tmp_path: Path) -> None:
    o, _ = nvim_scenario(
        tmp_path,
        "nvim_session.lua",
        env={
            "AB_SCRIPT": str(DATA / "session_script.json"),
            "AB_FAKE_CLAUDE": str(ROOT / "tests" / "standins" / "fake_claude.py"),
        },
    )
    sid = o["session"]
    header = f"# agent-bridge · Fix-the-build · {sid}"
    assert o["run1"] == [header, "", *RUN1]
    assert o["final"] == [header, "", *RUN1, *AFTER]
    # The missing bridge is a message with the next step.
    assert "was not found" in o["missing_bridge"]
    # Before a release the next step is one that works: a clone, never the bare name.
    for missing in (o["missing_bridge"], o["missing_on_path"]):
        assert "not on PyPI yet" in missing, missing
        assert "pipx install /path/to/agent-bridge" in missing
        assert ".venv/bin/agent-bridge" in missing
        assert "pipx install agent-bridge" not in missing
        assert "uvx" not in missing
    assert "agent-bridge was not found on PATH" in o["missing_on_path"]
    # The pickers: the provider list says what is unavailable; the model is free text;
    # the mode offers the enum's values; the unavailable provider's next step is shown.
    provider, model, mode = o["pickers"]
    assert provider["prompt"] == "agent-bridge provider"
    assert "Scripted (built-in) (scripted)" in provider["labels"]
    claude = next(label for label in provider["labels"] if "(claude-code)" in label)
    assert "unavailable: the claude executable was not found" in claude
    assert model["prompt"].startswith("Model for claude-code")
    assert mode["labels"] == [
        "(default: default)",
        "default",
        "acceptEdits",
        "plan",
        "bypassPermissions",
        "dontAsk",
        "auto",
    ]
    assert o["unavailable"].startswith("agent-bridge: claude-code is not available: ")
    assert "next step: install Claude Code" in o["unavailable"]
    # The chat's bar names the provider, and the model and mode chosen for the session.
    assert o["chosen_winbar"].startswith(
        " agent-bridge · claude-code · model sonnet · permissionMode plan · Chosen · "
    ), o["chosen_winbar"]
    # The approval offered its modes, with the pending count 1 while asked.
    approval, question, sessions = o["asked"]
    assert approval["labels"] == ["Allow once", "Allow for this session", "Deny"]
    assert approval["pending"] == 1
    assert question["labels"] == ["Yes", "No"]
    assert sessions["labels"] == [f"Fix-the-build · scripted · closed · {sid}"]
    # Thinking and the tool call are closed folds.
    assert [(f["line"], f["closed"]) for f in o["folds"]] == [
        ("▸ thinking", True),
        ("▸ tool Edit: Edit Makefile [completed]", True),
    ]
    # The edit in a diff view: old and new text in two diff windows.
    assert o["diff"]["windows"] == 2
    texts = sorted(b["lines"][1] for b in o["diff"]["buffers"])
    assert texts == ["\tcc -Wall -o app main.c", "\tcc -o app main.c"]
    # The traffic log has both directions, the approval's reply included.
    assert o["log_head"][1].startswith("> initialize ")
    assert o["log_head"][2].startswith("< initialize (reply) ")
    assert o["log_has_approval_reply"] is True


def test_neovim_reattaches_through_the_daemon_and_the_pending_approval_comes_back(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    # The daemon's socket lives under XDG_RUNTIME_DIR: a short path (sun_path is 108 bytes).
    runtime = tempfile.mkdtemp(prefix="abr-", dir="/tmp")
    outcomes = []
    try:
        for phase in ("1", "2"):
            o, _ = nvim_scenario(
                tmp_path,
                "nvim_reattach.lua",
                env={"XDG_RUNTIME_DIR": runtime, "AB_PHASE": phase},
                timeout=60,
                out_name=f"phase{phase}.json",
            )
            outcomes.append(o)
    finally:
        run_editor(
            [bridge_command()[0], "daemon", "--stop", "--state-dir", str(state)],
            env={**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": runtime},
            timeout=30,
        )
        shutil.rmtree(runtime, ignore_errors=True)
    first, second = outcomes
    sid = first["session"]
    asked = [
        "# agent-bridge · Deploy · " + sid,
        "",
        "## You",
        "Deploy it",
        "",
        "## Agent",
        "Ready to deploy.",
        "? approval: Deploy to production",
    ]
    # Phase 1: the prompt was dismissed and the approval stayed pending.
    assert first["pending"] == 1
    assert first["lines"] == asked
    # Phase 2: a fresh Neovim lists the session as active, reattaches: the history is
    # replayed into its chat buffer, the approval is asked again and the run finishes.
    assert second["session"] == sid
    assert second["asked"][0]["labels"] == [f"Deploy · scripted · active · 1 pending · {sid}"]
    assert second["asked"][1]["prompt"] == "agent-bridge approval: Deploy to production"
    assert second["pending_when_reasked"] == 1
    assert second["lines"] == [
        *asked,
        "→ responded: allow (once)",
        "Deployed after the reattach.",
        "✓ done (end_turn)",
    ]


def test_neovim_help_file_has_its_tags(tmp_path: Path) -> None:
    nvim = require_editor("nvim")
    doc = tmp_path / "doc"
    doc.mkdir()
    help_file = ROOT / "editors" / "neovim" / "doc" / "agent-bridge.txt"
    (doc / "agent-bridge.txt").write_bytes(help_file.read_bytes())
    make_tags = ["-c", f"helptags {doc}", "-c", "qall!"]
    out = run_editor(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", *make_tags],
        env={**os.environ, "HOME": str(tmp_path)},
        timeout=30,
    )
    tags = {line.split("\t")[0] for line in (doc / "tags").read_text().splitlines()}
    for tag in ("agent-bridge", ":AgentBridge", ":AgentBridge-diff", "agent_bridge.setup()"):
        assert tag in tags, (tag, out)


def test_neovim_tool_call_header_is_rewritten_in_place(tmp_path: Path) -> None:
    # started (with input) → output → completed (exit code): the header extmark used to
    # move down a line on each rewrite, leaving "[running]" behind and overwriting the
    # "input:" line.
    script = tmp_path / "script.json"
    call = {"type": "tool.activity", "toolCallId": "call_9", "name": "Bash"}
    payloads = [
        {**call, "status": "started", "kind": "execute", "input": {"command": "make"}},
        {**call, "status": "output", "output": "cc -o app main.c\n"},
        {**call, "status": "completed", "exitCode": 0},
    ]
    steps = [{"type": "emit", "payloads": payloads}, {"type": "text", "text": "Built."}]
    script.write_text(json.dumps({"steps": steps}))
    o, _ = nvim_scenario(tmp_path, "nvim_tool_call.lua", env={"AB_SCRIPT": str(script)}, timeout=60)
    assert o["lines"] == [
        f"# agent-bridge · Tools · {o['session']}",
        "",
        "## You",
        "Build it",
        "",
        "## Agent",
        "▸ tool Bash: make [completed, exit 0]",
        '  │ input: {"command":"make"}',
        "  │ cc -o app main.c",
        "Built.",
        "✓ done (end_turn)",
    ]


#: An approval for Claude Code's Edit tool (its input shape): the chat shows the change.
PROPOSED_EDIT = {
    "type": "approval",
    "title": "Edit Makefile",
    "toolName": "Edit",
    "input": {
        "file_path": "Makefile",
        "old_string": "all:\n\tcc -o app main.c\n",
        "new_string": "all:\n\tcc -Wall -o app main.c\n",
    },
    "modes": ["once", "session"],
    "onAllow": [{"type": "text", "text": "Edited."}],
    "onDeny": [{"type": "text", "text": "Left it."}],
}

CHAT_SCRIPT = {
    "runs": [
        {
            "steps": [
                {"type": "thinking", "text": "Which directory?"},
                {
                    "type": "tool",
                    "id": "call_1",
                    "name": "Bash",
                    "input": {"command": "ls"},
                    "output": "Makefile\n",
                    "exitCode": 0,
                },
                {"type": "text", "text": "One file: Makefile."},
            ]
        },
        {"steps": [{"type": "text", "text": "Working on it..."}, {"type": "waitForInterrupt"}]},
        {"steps": [PROPOSED_EDIT]},
        {"steps": [PROPOSED_EDIT]},
    ]
}


def test_neovim_chat_prompt_area_and_keys(tmp_path: Path) -> None:
    """The chat as a user drives it with keys (typed with nvim_feedkeys, as typeahead):
    the prompt area below the transcript (normal <CR> and insert <C-s> send, a multi-line
    prompt), ]] / [[ between the folded blocks, `i` to the prompt area, <C-c> interrupts."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(CHAT_SCRIPT))
    o, _ = nvim_scenario(tmp_path, "nvim_chat.lua", env={"AB_SCRIPT": str(script)})
    assert o["layout"] == {
        "input_is_current": True,
        "input_below_chat": True,
        "same_column": True,
        "input_height": 4,
    }
    assert o["input_after_send"] == [""], "sending clears the prompt area"
    run1 = o["run1"]
    assert run1[1:] == [
        "",
        "## You",
        "List the",
        "files",
        "",
        "## Agent",
        "▸ thinking",
        "  │ Which directory?",
        "▸ tool Bash: ls [completed, exit 0]",
        *[line for line in run1 if line.startswith("  │ ") and line != "  │ Which directory?"],
        "One file: Makefile.",
        "✓ done (end_turn)",
    ], run1
    assert o["visited"] == ["▸ thinking", "▸ tool Bash: ls [completed, exit 0]", "▸ thinking"]
    assert o["folded"] is True
    assert o["i_goes_to_input"] is True
    assert o["mode_after_send"] == "n"
    assert "✗ interrupted (user)" in o["final"]
    assert "Keep going" in o["final"] and "Working on it..." in o["final"]
    # A proposed edit inline under its approval (a folded block: the diff), accepted with
    # ga, then another rejected with gr; the automatic prompt was dismissed each time.
    proposal = [
        "? approval: Edit Makefile",
        "▸ proposed edit Makefile (ga accept, gr reject)",
        "  │ @@ -1,2 +1,2 @@",
        "  │  all:",
        "  │ -\tcc -o app main.c",
        "  │ +\tcc -Wall -o app main.c",
    ]
    accepted = o["accepted"]
    i = accepted.index(proposal[0])
    assert accepted[i : i + len(proposal)] == proposal, accepted[i:]
    assert accepted[-3:] == ["→ responded: allow (once)", "Edited.", "✓ done (end_turn)"]
    assert o["proposal_folded"] is True
    assert o["rejected"][-3:] == ["→ responded: deny", "Left it.", "✓ done (end_turn)"]


def test_neovim_lists_and_reads_a_native_claude_session(tmp_path: Path) -> None:
    """:AgentBridge native: Claude Code's own sessions (a session file the real CLI
    wrote, in a private CLAUDE_CONFIG_DIR) listed through provider/sessions/list, the one
    picked read through provider/sessions/read into a read-only buffer."""
    # the session's working directory, made real here
    work = tmp_path / "work"
    work.mkdir()
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(work))  # Claude Code's project directory name
    project = tmp_path / "config" / "projects" / slug
    project.mkdir(parents=True)
    sid = "28377def-ee38-4b08-ab48-cac0f67ecdff"
    data = ROOT / "tests" / "data" / "claude" / "native_session_2.1.197.jsonl"
    (project / f"{sid}.jsonl").write_text(data.read_text().replace("/workspace/project", str(work)))
    o, _ = nvim_scenario(
        tmp_path, "nvim_native.lua", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}
    )
    assert o["picker"]["prompt"] == "claude-code sessions"
    [label] = o["picker"]["labels"]
    assert label.startswith(f"say hello · {work} · ")
    assert o["name"].endswith(f"agent-bridge://native/claude-code/{slug}/{sid}")
    assert o["lines"] == [
        f"# claude-code session · say hello · {work} (read-only: c continues it in a chat)",
        "",
        "## You",
        "say hello",
        "",
        "## Agent",
        "(stand-in: no scripted reply left)",
    ]
    assert o["modifiable"] is False


def test_neovim_continues_a_native_claude_session(tmp_path: Path) -> None:
    """:AgentBridge native, then `c` in the read-only buffer: a session the real claude CLI
    made alone (`claude -p`, its model a loopback stand-in) is continued in a chat
    (provider/sessions/continue): its earlier turn is shown, and the next prompt's model
    request carries it."""
    require_editor("nvim")
    from provider_clis import require_cli
    from standins.anthropic_server import AnthropicStandIn, Text
    from test_claude_native_e2e import private_env, terminal_session

    claude = require_cli("claude")
    with AnthropicStandIn([Text("Noted: pelican.")]) as standin:
        env = private_env(tmp_path, standin.base_url)
        terminal_session(claude, tmp_path, env)
        standin.push(Text("The word was pelican."))
        env = {**env, "AGENT_BRIDGE_CLAUDE_PATH": claude, "AB_CONTINUE": "1"}
        o, _ = nvim_scenario(tmp_path, "nvim_native.lua", env=env, timeout=240)
        requests = standin.model_requests()
    assert o["lines"][0].endswith("(read-only: c continues it in a chat)")
    assert o["continued_provider"] == "claude-code"
    body = o["chat"]
    i = body.index("remember the word pelican")
    assert body[i : i + 4] == ["remember the word pelican", "", "## Agent", "Noted: pelican."]
    assert body[-6:] == [
        "## You",
        "what was the word?",
        "",
        "## Agent",
        "The word was pelican.",
        "✓ done (end_turn)",
    ], body
    sent = json.dumps(requests[-1].body.get("messages"))
    assert "remember the word pelican" in sent and "Noted: pelican." in sent


def test_neovim_continues_a_bridge_or_a_native_session_of_the_workspace(tmp_path: Path) -> None:
    """:AgentBridge continue: one picker over the working directory's bridge sessions and
    the sessions the real claude CLI made alone there (`claude -p`, its model a loopback
    stand-in); the Claude Code one is continued in a chat (the next request carries its
    turn), then offered once, as a bridge session; a bridge session reopens."""
    require_editor("nvim")
    from provider_clis import require_cli
    from standins.anthropic_server import AnthropicStandIn, Text
    from test_claude_native_e2e import private_env, terminal_session

    claude = require_cli("claude")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"type": "text", "text": "Bridge reply."}]}))
    with AnthropicStandIn([Text("Noted: pelican.")]) as standin:
        env = private_env(tmp_path, standin.base_url)
        terminal_session(claude, tmp_path, env)
        standin.push(Text("The word was pelican."))
        env = {
            **env,
            "AGENT_BRIDGE_CLAUDE_PATH": claude,
            "AB_WORK": str(tmp_path / "work"),
            "AB_SCRIPT": str(script),
        }
        o, _ = nvim_scenario(tmp_path, "nvim_continue.lua", env=env, timeout=240)
        requests = standin.model_requests()
    first, again = o["pickers"]
    assert first["prompt"] == "Continue a session"
    # newest first: the bridge session was made after the terminal's
    assert len(first["labels"]) == 2, first
    assert first["labels"][0].startswith("Bridge-one · scripted, bridge session · ")
    assert first["labels"][1].startswith("remember the word pelican · claude-code's own session · ")
    assert o["provider"] == "claude-code"
    body = o["chat"]
    i = body.index("remember the word pelican")
    assert body[i : i + 4] == ["remember the word pelican", "", "## Agent", "Noted: pelican."]
    assert body[-3:] == ["## Agent", "The word was pelican.", "✓ done (end_turn)"], body
    sent = json.dumps(requests[-1].body.get("messages"))
    assert "remember the word pelican" in sent and "Noted: pelican." in sent
    # offered again: two bridge sessions, the continued one no longer as a native one
    assert len(again["labels"]) == 2, again
    assert all("bridge session" in label for label in again["labels"]), again
    assert any(label.endswith(o["continued"]) for label in again["labels"])
    assert any(label.endswith(o["bridge_one"]) for label in again["labels"])


def test_neovim_switches_a_session_s_model_and_mode(tmp_path: Path) -> None:
    """`gm` in the chat (and :AgentBridge model): the models and modes session/settings
    offers, the current ones marked; the one picked set with session/configure; the
    settings.updated that follows is a chat line and the bar's model and mode; a provider
    offering none says so, asking nothing."""
    settings = {
        "model": {
            "current": "small",
            "available": [{"id": "small", "name": "Small"}, {"id": "large", "name": "Large"}],
        },
        "mode": {"current": "ask", "available": [{"id": "ask"}, {"id": "auto"}]},
    }
    script = tmp_path / "script.json"
    steps = [{"type": "text", "text": "Done."}]
    script.write_text(json.dumps({"settings": settings, "steps": steps}))
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"steps": steps}))
    o, _ = nvim_scenario(
        tmp_path, "nvim_settings.lua", env={"AB_SCRIPT": str(script), "AB_PLAIN": str(plain)}
    )
    offered = [
        "model small (Small) — current",
        "model large (Large)",
        "mode ask — current",
        "mode auto",
    ]
    assert o["pickers"][0] == offered
    assert o["pickers"][1] == ["model small (Small)", "model large (Large) — current", *offered[2:]]
    assert " · model large · mode auto · Settings · idle" in o["bar"], o["bar"]
    assert o["none"] == "agent-bridge: scripted offers no model or mode to choose", o["none"]
    assert o["asked_for_none"] is False


def test_neovim_checkhealth(tmp_path: Path) -> None:
    """:checkhealth agent_bridge: the bridge found and its version, each provider as
    `agent-bridge doctor` sees it (an unavailable one with its next step), the state
    directory; with a bridge command that names nothing, an error with the next step."""

    def health(bridge: str) -> str:
        env = {"PATH": "/usr/bin:/bin", "AB_BRIDGE": bridge}
        report, _ = nvim_scenario(
            tmp_path, "nvim_health.lua", env=env, timeout=120, out_name="health.json", check=False
        )
        return "\n".join(report)

    report = health(bridge_command()[0])
    assert "OK the bridge command: " + bridge_command()[0] in report, report
    assert "OK agent-bridge " in report
    assert "OK Scripted (built-in) (scripted): available" in report
    assert "WARNING Claude Code (claude-code): unavailable: the claude executable" in report
    assert "install Claude Code" in report  # its next step, as advice
    assert "OK state directory " in report
    assert "ERROR" not in report, report
    missing = health("/nonexistent/agent-bridge")
    assert "ERROR" in missing and "not on PyPI yet" in missing, missing


CONTEXT_SCRIPT = {
    "commands": [{"name": "review", "description": "Review the current diff", "hint": "<focus>"}],
    "runs": [
        *[{"steps": [{"type": "received"}]} for _ in range(4)],
        {
            "steps": [
                {
                    "type": "emit",
                    "payloads": [
                        {
                            "type": "commands.updated",
                            "commands": [{"name": "review"}, {"name": "test"}],
                        }
                    ],
                }
            ]
        },
    ],
}


def test_neovim_sends_an_image_file_as_context(tmp_path: Path) -> None:
    """:AgentBridge send from an image file's buffer: an `image` block, by its path inside
    the workspace and by its bytes from elsewhere; the provider gets the image whole (its
    size and SHA-256, the scripted provider's `received` step), the chat shows each."""
    import hashlib

    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"type": "received"}]}))
    work = tmp_path / "work"
    work.mkdir()
    # a small real PNG (1x1 pixel), in the workspace and elsewhere
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
    (work / "shot.png").write_bytes(png)
    outside = tmp_path / "elsewhere" / "red.png"
    outside.parent.mkdir()
    outside.write_bytes(png)
    o, _ = nvim_scenario(
        tmp_path,
        "nvim_image.lua",
        env={"AB_SCRIPT": str(script), "AB_WORK": str(work), "AB_OUTSIDE": str(outside)},
    )
    image = {"type": "image", "mimeType": "image/png", "size": len(png)}
    image["sha256"] = hashlib.sha256(png).hexdigest()
    assert o["inside"] == [
        {"type": "text", "text": "What is on it?"},
        {**image, "path": str((work / "shot.png").resolve())},
    ], o["inside"]
    assert o["outside"] == [{"type": "text", "text": "And this one?"}, image], o["outside"]
    lines = o["lines"]
    for prompt, shown in (
        ("What is on it?", f"@ image shot.png ({len(png)} bytes)"),
        ("And this one?", f"@ image image/png ({len(png)} bytes)"),
    ):
        i = lines.index(prompt)
        assert lines[i : i + 2] == [prompt, shown], lines


def test_neovim_sends_context_and_slash_commands(tmp_path: Path) -> None:
    """:'<,'>AgentBridge send: the selection as a `file` block with its line range; the
    whole file attached to the prompt area's next prompt; an unsaved buffer as a
    `resource`; `/name` completed in the prompt area from session/commands (and from a
    commands.updated event) and sent as a `command` block — each as the provider got it."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(CONTEXT_SCRIPT))
    work = tmp_path / "work"
    work.mkdir()
    src = work / "src.py"
    src.write_text("import os\n\ndef main():\n    print(os.getcwd())\n\nmain()\n")
    o, _ = nvim_scenario(
        tmp_path, "nvim_context.lua", env={"AB_SCRIPT": str(script), "AB_WORK": str(work)}
    )
    real = str(src.resolve())
    assert o["selection"] == [
        {"type": "text", "text": "Explain this"},
        {"type": "file", "path": real, "startLine": 2, "endLine": 4},
    ]
    assert o["attached_in_input"] is True
    assert o["bar"].startswith("prompt with @ src.py · <CR> sends"), o["bar"]
    assert o["whole_file"] == [
        {"type": "text", "text": "What is it?"},
        {"type": "file", "path": real},
    ]
    assert "with" not in o["bar_after"], "sent context is no longer attached"
    assert o["resource"] == [
        {"type": "text", "text": "Look"},
        {"type": "resource", "text": "x = 1\ny = 2", "uri": f"untitled:{o['scratch']}"},
    ]
    assert o["completed"] == ["/review "]
    assert o["command"] == [{"type": "command", "name": "review", "arguments": "error handling"}]
    assert o["completed_after_update"] == ["/test "]
    assert [(i["abbr"], i.get("menu")) for i in o["items"]] == [("/review", None), ("/test", None)]
    # The chat shows what was attached to each prompt, and the command invoked.
    lines = o["lines"]
    for shown in (["Explain this", "@ src.py:2-4"], ["What is it?", "@ src.py"]):
        i = lines.index(shown[0])
        assert lines[i : i + 2] == shown
    i = lines.index("Look")
    assert lines[i + 1] == f"@ untitled:{o['scratch']} (2 lines)"
    assert "/review error handling" in lines


LIMITS_SCRIPT = {
    "runs": [
        {
            "steps": [
                {
                    "type": "emit",
                    "payloads": [
                        {
                            "type": "limits.updated",
                            "meters": [
                                {
                                    "pool": "codex",
                                    "meter": "primary",
                                    "percent": 85.4,
                                    "resetsAt": "2026-12-02T05:00:00Z",
                                    "status": "warning",
                                },
                                {"pool": "codex", "meter": "secondary", "percent": 41.5},
                            ],
                        }
                    ],
                },
                {"type": "text", "text": "Done."},
            ]
        },
        {
            "steps": [
                {
                    "type": "emit",
                    "payloads": [
                        {
                            "type": "limits.updated",
                            "meters": [
                                {
                                    "pool": "codex",
                                    "meter": "primary",
                                    "percent": 100,
                                    "resetsAt": "2026-12-02T05:00:00Z",
                                    "status": "exhausted",
                                }
                            ],
                        }
                    ],
                },
                {
                    "type": "fail",
                    "code": "provider_rate_limited",
                    "details": {"cause": "quota_exhausted", "resetsAt": "2026-12-02T05:00:00Z"},
                },
            ]
        },
    ]
}


def test_neovim_shows_limits_and_when_they_reset(tmp_path: Path) -> None:
    """limits.updated meters in the chat's bar (percent, status, reset time; an update
    replaces only the meters it names); a run.failed for a spent quota says its cause and
    when it resets; a new session of the provider in an editor that forgot them shows the
    bridge's latest figures (provider/limits)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(LIMITS_SCRIPT))
    o, _ = nvim_scenario(tmp_path, "nvim_limits.lua", env={"AB_SCRIPT": str(script)}, timeout=60)
    assert "limits" not in o["bar_before"]
    assert o["bar1"].endswith(
        " · limits: primary 85% warning, resets 12-02 05:00 UTC; secondary 42%"
    ), o["bar1"]
    assert o["bar2"].endswith(
        " · limits: primary 100% exhausted, resets 12-02 05:00 UTC; secondary 42%"
    ), o["bar2"]
    failed = [line for line in o["lines"] if line.startswith("✗ failed: ")]
    assert len(failed) == 1, o["lines"]
    assert failed[0].startswith("✗ failed: provider_rate_limited: "), failed
    assert failed[0].endswith(" (quota_exhausted, resets 12-02 05:00 UTC)"), failed
    # A new session of the provider, the editor's own figures forgotten: provider/limits.
    assert " · limits: " in o["bar3"], o["bar3"]
    assert "primary 100% exhausted, resets 12-02 05:00 UTC" in o["bar3"]
    assert "secondary 42%" in o["bar3"]


def test_neovim_forks_a_claude_session_from_a_run(tmp_path: Path) -> None:
    """`gf` on a run's reply in the chat: session/fork at that run's last event (the real
    claude CLI's own fork, its model a loopback stand-in), the fork opened in its own chat
    with the history up to there; a prompt in it carries the first run, not the second.
    A provider without capabilities.fork (scripted) is refused with a message."""
    require_editor("nvim")
    from provider_clis import require_cli
    from standins.anthropic_server import AnthropicStandIn, Text, ToolUse
    from test_claude_native_e2e import private_env

    claude = require_cli("claude")
    with AnthropicStandIn() as standin:
        standin.push(
            Text("Alpha noted."),
            Text("Beta noted."),
            Text("Only alpha."),
            ToolUse("echo fork-probe", text="Let me look at it."),
            Text("All done."),
            Text("I said I would look."),
        )
        env = {
            **private_env(tmp_path, standin.base_url),
            "AGENT_BRIDGE_CLAUDE_PATH": claude,
            "AB_WORK": str(tmp_path / "work"),
        }
        o, _ = nvim_scenario(tmp_path, "nvim_fork.lua", env=env, timeout=240)
        requests = standin.model_requests()
    assert o["refused"] == "agent-bridge: scripted cannot fork a session", o["notes"]
    assert o["fork"] != o["original"]
    assert o["fork_shown"] is True
    body = o["fork_lines"][1:]
    assert body == [
        "",
        "## You",
        "remember alpha",
        "",
        "## Agent",
        "Alpha noted.",
        "✓ done (end_turn)",
        "",
        "## You",
        "which words do you know?",
        "",
        "## Agent",
        "Only alpha.",
        "✓ done (end_turn)",
    ], o["fork_lines"]
    assert "Beta noted." in o["original_lines"] and "Only alpha." not in o["original_lines"]
    # The model saw the fork's conversation: the first run, not the second.
    asked = [json.dumps(r.body.get("messages")) for r in requests]
    sent = next(m for m in asked if "which words" in m)
    assert "remember alpha" in sent and "which words" in sent
    assert "remember beta" not in sent
    # Fork from a message (granularity message): `gf` on the text of a run that then
    # called a tool forks at the text's last event: the fork's chat ends with it (not
    # the call, not the answer), exact (nothing said), and its model saw the text only.
    assert "All done." in o["original_lines"]
    mlines = o["message_fork_lines"]
    assert mlines[-6:] == ["", "## You", "look around", "", "## Agent", "Let me look at it."], (
        mlines
    )
    assert "All done." not in mlines and not any("Bash" in line for line in mlines), mlines
    assert o["message_notes"] == [], o["message_notes"]
    at_text = next(m for m in asked if "what did you say?" in m)
    assert "Let me look at it." in at_text and "look around" in at_text
    assert "tool_use" not in at_text and "All done." not in at_text
    # at the text's first event: the provider is cut before that message, and says so
    assert o["cut_at"] < o["text_last"]
    assert len(o["cut_notes"]) == 1, o["cut_notes"]
    assert o["cut_notes"][0].startswith(
        f"agent-bridge: the fork shows the history up to event {o['cut_at']}, but the agent"
        " remembers it only up to event "
    ), o["cut_notes"]


def test_neovim_folds_a_subagent_s_tool_calls_under_it(tmp_path: Path) -> None:
    """A tool call running a subagent (`subagent`) is a block headed by the agent's type,
    description, status and usage; the calls made inside it (`parentToolCallId`) are
    blocks nested in it (their output under them, their headers rewritten in place), one
    fold level deeper; the run's own reply follows the agent's block."""
    script = tmp_path / "script.json"
    task = {"type": "tool.activity", "toolCallId": "call_task", "name": "Task"}
    read = {"type": "tool.activity", "toolCallId": "call_r", "name": "Read"}
    grep = {"type": "tool.activity", "toolCallId": "call_g", "name": "Grep"}
    inside = {"parentToolCallId": "call_task"}
    usage = {"toolUses": 2, "totalTokens": 1200, "durationMs": 1500}
    payloads = [
        {
            **task,
            "status": "started",
            "subagent": {
                "agentType": "Explore",
                "description": "Find the build files",
                "status": "running",
            },
        },
        {**read, **inside, "status": "started", "input": {"file_path": "Makefile"}},
        {**grep, **inside, "status": "started", "input": {"pattern": "cc"}},
        {**read, **inside, "status": "completed"},
        {**grep, **inside, "status": "output", "output": "Makefile:2\n"},
        {**grep, **inside, "status": "completed"},
        {**task, "status": "output", "subagent": {"status": "completed", "usage": usage}},
        {**task, "status": "completed", "output": "The Makefile builds app.\n"},
    ]
    steps = [{"type": "emit", "payloads": payloads}, {"type": "text", "text": "Found it."}]
    script.write_text(json.dumps({"steps": steps}))
    o, _ = nvim_scenario(tmp_path, "nvim_subagent.lua", env={"AB_SCRIPT": str(script)}, timeout=60)
    body = [
        "",
        "## You",
        "Find the build",
        "",
        "## Agent",
        "▸ agent Explore: Find the build files [completed, 2 tool uses, 1200 tokens, 1.5 s]",
        "  │ ▸ tool Read: Makefile [completed]",
        '  │   │ input: {"file_path":"Makefile"}',
        "  │ ▸ tool Grep [completed]",
        '  │   │ input: {"pattern":"cc"}',
        "  │   │ Makefile:2",
        "  │ The Makefile builds app.",
        "Found it.",
        "✓ done (end_turn)",
    ]
    assert o["lines"] == [f"# agent-bridge · Agents · {o['session']}", *body], o["lines"]
    assert o["levels"][6:14] == [1, 2, 2, 2, 2, 2, 1, 0], o["levels"]
    assert o["agent_closed"] is True
    assert o["agent_fold_end"] == 13, "the agent's block folds all its calls and answer"


def test_neovim_shows_a_real_claude_subagent_and_its_approval(tmp_path: Path) -> None:
    """The real claude CLI (its model a loopback stand-in) delegates to a subagent through
    its Task tool; the subagent asks to run a command: the chat's approval line names the
    subagent, and its Bash call is nested under the agent's block; the main reply follows."""
    require_editor("nvim")
    from provider_clis import require_cli
    from standins.anthropic_server import AnthropicStandIn, Text, ToolUse
    from test_claude_native_e2e import private_env

    claude = require_cli("claude")
    task = {
        "description": "look around",
        "prompt": "make a file",
        "subagent_type": "general-purpose",
    }
    with AnthropicStandIn() as standin:
        standin.push(
            ToolUse(name="Task", input=task, tool_use_id="toolu_task"),
            ToolUse("touch by-subagent.txt", tool_use_id="toolu_sub_bash"),
            Text("sub done"),
            Text("all done"),
        )
        env = {
            **private_env(tmp_path, standin.base_url),
            "AGENT_BRIDGE_CLAUDE_PATH": claude,
            "AB_WORK": str(tmp_path / "work"),
        }
        o, _ = nvim_scenario(tmp_path, "nvim_subagent_claude.lua", env=env, timeout=180)
    lines = o["lines"]
    asked = [line for line in lines if line.startswith("? approval: ")]
    assert len(asked) == 1 and asked[0].endswith(" (in agent general-purpose)"), lines
    agent = next(i for i, line in enumerate(lines) if line.startswith("▸ agent general-purpose"))
    assert re.match(
        r"▸ agent general-purpose: look around \[completed, 1 tool uses, \d+ tokens, [\d.]+ s\]$",
        lines[agent],
    ), lines[agent]
    assert lines[agent + 1].startswith("  │ input: "), lines  # the Task call's own input
    assert lines[agent + 2] == "  │ ▸ tool Bash: touch by-subagent.txt [completed]", lines
    assert lines[agent + 3].startswith("  │   │ input: "), lines
    # the subagent's answer is the Task call's output, in its block; the reply after it
    assert any(line.startswith("  │ sub done") for line in lines), lines
    assert lines[-2:] == ["all done", "✓ done (end_turn)"], lines
    assert (tmp_path / "work" / "by-subagent.txt").exists()
