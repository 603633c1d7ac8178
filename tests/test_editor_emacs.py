"""The Emacs package (editors/emacs/agent-bridge.el) in a real ``emacs --batch`` (ERT)
against the real bridge, and its lint.

The ERT scenario (tests/data/editors/emacs_session.el) drives a whole scripted session
through the package's own commands, with asynchronous requests only: a missing bridge is
a `user-error` with the next step; a new session made through the pickers (its script
file given as a further session option) shows its chat before the bridge answers, so a
`p` typed ahead goes to the chat, not the source buffer; text and thinking stream into
the chat buffer (`agent-bridge-chat-mode`), folded blocks toggle; an approval is never
asked on its own, keys typed elsewhere answer nothing, `a` then q, C-g, ESC or another key
in the chat dismiss it (still pending), `a s` answers it (offering the request's modes);
the edit shows in `diff-mode` under a header naming its file; a question is answered; a
run is interrupted; the traffic log has both directions; after the bridge restarts on
the same state directory the session is listed (`tabulated-list-mode`), reopened with no
gap and no duplicate, and runs again.
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
from test_editor_neovim import AFTER, RUN1

DATA = ROOT / "tests" / "data" / "editors"
PACKAGE = ROOT / "editors" / "emacs"
#: package-lint 0.16 (Debian 12's) predates Emacs 28's release and warns that requiring
#: it makes a package uninstallable; every other finding fails the test.
STALE_WARNING = "This makes the package uninstallable in all released Emacs versions."


def run_ert(
    tmp_path: Path,
    scenario: str,
    env: dict[str, str] | None = None,
    *,
    results: int = 1,
    timeout: float = 100,
    **ab: object,
) -> Any:
    """Run the ERT scenario ``tests/data/editors/<scenario>`` in a batch Emacs with the
    package and the real bridge (``AB_PACKAGE``, ``AB_BRIDGE``, ``AB_STATE`` under
    ``tmp_path``, ``AB_OUT``), in ``env`` (default: ours with ``HOME`` at ``tmp_path``) and
    ``AB_<NAME>`` for each of ``ab``; assert that ``results`` tests passed and return the
    outcome the scenario wrote (JSON)."""
    emacs = require_editor("emacs")
    out = tmp_path / "outcome.json"
    full = {
        **(env if env is not None else {**os.environ, "HOME": str(tmp_path)}),
        "AB_PACKAGE": str(PACKAGE),
        "AB_BRIDGE": bridge_command()[0],
        "AB_STATE": str(tmp_path / "state"),
        "AB_OUT": str(out),
        **{f"AB_{name}": str(value) for name, value in ab.items()},
    }
    log = run_editor(
        [emacs, "--batch", "-Q", "-l", str(DATA / scenario), "-f", "ert-run-tests-batch-and-exit"],
        env=full,
        timeout=timeout,
    )
    assert f"{results} results as expected, 0 unexpected" in log, log
    return json.loads(out.read_text())


def test_emacs_package_drives_a_whole_session(tmp_path: Path) -> None:
    o = run_ert(
        tmp_path,
        "emacs_session.el",
        SCRIPT=DATA / "session_script.json",
        FAKE_CLAUDE=ROOT / "tests" / "standins" / "fake_claude.py",
    )
    sid = o["session"]
    run1 = [line.replace(":AgentBridge diff 1", "M-x agent-bridge-diff 1") for line in RUN1]
    assert o["lines"] == [f"# agent-bridge · Fix-the-build · {sid}", "", *run1, *AFTER]
    assert o["headerLine"] == " agent-bridge · scripted · Fix-the-build · idle"
    # The model and mode chosen for a session are in its header line.
    assert o["chosenHeaderLine"] == (
        " agent-bridge · claude-code · model sonnet · permissionMode plan · Chosen · idle"
    )


def _emacs_batch(emacs: str, tmp_path: Path, *args: str) -> str:
    """Run ``emacs --batch -Q ARGS`` with a private HOME; return its output."""
    env = {**os.environ, "HOME": str(tmp_path)}
    return run_editor([emacs, "--batch", "-Q", *args], env=env, timeout=60)


def test_emacs_package_is_package_lint_checkdoc_and_byte_compile_clean(tmp_path: Path) -> None:
    emacs = require_editor("emacs")
    lint_dirs = sorted(Path("/usr/share/emacs/site-lisp/elpa").glob("package-lint-*"))
    if not lint_dirs:
        require_editor("package-lint (Debian elpa-package-lint)")
    work = tmp_path / "pkg"
    work.mkdir()
    source = work / "agent-bridge.el"
    source.write_bytes((PACKAGE / "agent-bridge.el").read_bytes())
    setup = (
        f"(progn (add-to-list 'load-path {json.dumps(str(lint_dirs[-1]))})"
        " (require 'package-lint)"
        " (setq package-lint-batch-fail-on-warnings nil))"
    )
    lint = _emacs_batch(
        emacs, tmp_path, "--eval", setup, "-f", "package-lint-batch-and-exit", str(source)
    )
    findings = [
        line for line in lint.splitlines() if re.search(r":\d+:\d+: (error|warning):", line)
    ]
    assert all(line.endswith(STALE_WARNING) for line in findings), lint
    check = f"(progn (require 'checkdoc) (checkdoc-file {json.dumps(str(source))}))"
    checkdoc = _emacs_batch(emacs, tmp_path, "--eval", check)
    assert "Warning" not in checkdoc, checkdoc
    strict = "(setq byte-compile-error-on-warn t)"
    compiled = _emacs_batch(
        emacs, tmp_path, "-L", str(work), "--eval", strict, "-f", "batch-byte-compile", str(source)
    )
    assert (work / "agent-bridge.elc").exists(), compiled
    # The autoloads: the interactive entry points are autoloaded.
    make = (
        f"(progn (setq generated-autoload-file {json.dumps(str(work / 'ab-autoloads.el'))})"
        f" (update-directory-autoloads {json.dumps(str(work))}))"
    )
    made = _emacs_batch(emacs, tmp_path, "--eval", make)
    text = (work / "ab-autoloads.el").read_text()
    for command in ("agent-bridge-new-session", "agent-bridge-sessions", "agent-bridge-prompt"):
        assert f'(autoload \'{command} "agent-bridge"' in text, (command, made)


def test_emacs_reattaches_through_the_daemon_and_the_pending_approval_comes_back(
    tmp_path: Path,
) -> None:
    emacs = require_editor("emacs")
    state = tmp_path / "state"
    runtime = tempfile.mkdtemp(prefix="abr-", dir="/tmp")  # a short daemon socket path
    base = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_RUNTIME_DIR": runtime,
        "AB_PACKAGE": str(PACKAGE),
        "AB_BRIDGE": bridge_command()[0],
        "AB_STATE": str(state),
    }
    scenario = str(DATA / "emacs_reattach.el")
    outcomes = []
    try:
        for phase in ("1", "2"):
            out = tmp_path / f"phase{phase}.json"
            log = run_editor(
                [emacs, "--batch", "-Q", "-l", scenario, "-f", "ert-run-tests-batch-and-exit"],
                env={**base, "AB_PHASE": phase, "AB_OUT": str(out)},
                timeout=60,
            )
            assert "1 results as expected, 0 unexpected" in log, log
            outcomes.append(json.loads(out.read_text()))
    finally:
        run_editor(
            [bridge_command()[0], "daemon", "--stop", "--state-dir", str(state)],
            env=base,
            timeout=30,
        )
        shutil.rmtree(runtime, ignore_errors=True)
    first, second = outcomes
    asked = [
        f"# agent-bridge · Deploy · {first['session']}",
        "",
        "## You",
        "Deploy it",
        "",
        "## Agent",
        "Ready to deploy.",
        "? approval: Deploy to production",
    ]
    # pending, its answers are buttons under it (gone once it is answered)
    assert first["lines"] == [*asked, "  [Allow once] [Allow for session] [Deny]"]
    assert second["session"] == first["session"]
    assert second["pendingWhenAsked"] == 1
    assert second["listedPending"] == "1"  # the daemon's count, before reattaching
    assert second["lines"] == [
        *asked,
        "→ responded: allow (once)",
        "Deployed after the reattach.",
        "✓ done (end_turn)",
    ]


def test_emacs_shows_subagents_limits_and_forks_from_a_run(tmp_path: Path) -> None:
    """Subagents fold under their call, a limit and the failure on it say when it resets
    (in local time: TZ is two hours east of UTC here), and `f` on a run forks there, `f`
    on an agent message there (the real claude CLI's own fork, its model a loopback
    stand-in)."""
    from provider_clis import require_cli
    from standins.anthropic_server import AnthropicStandIn, Text, ToolUse
    from test_claude_native_e2e import private_env

    require_editor("emacs")  # skips before anything is set up
    claude = require_cli("claude")
    with AnthropicStandIn() as standin:
        standin.push(
            Text("first"),
            Text("second"),
            Text("third"),
            ToolUse("echo fork-probe", text="Let me look at it."),
            Text("All done."),
            Text("I said I would look."),
        )
        env = {
            **os.environ,
            **private_env(tmp_path, standin.base_url),
            "HOME": str(tmp_path),
            "TZ": "XYZ-2",
        }
        o = run_ert(
            tmp_path,
            "emacs_fork_limits.el",
            env,
            timeout=200,
            SCRIPT=DATA / "limits_subagent_script.json",
            CLAUDE=claude,
        )
        asked = [json.dumps(r.body.get("messages")) for r in standin.model_requests()]
    lines = o["limitsLines"]
    assert lines[6:] == [
        # the subagent's call, its own status and usage; the call made inside it is a
        # line of its body (folded with it: the scenario checks)
        "▸ subagent Explore: Find the bug [completed, 1 tool use, 1200 tokens]",
        '  │ input: {"description":"Find the bug","subagent_type":"Explore"}',
        "  │ ↳ tool Read: src/main.c [completed]",
        "  │ The bug is in main.c.",
        # 05:00 UTC in local time (UTC+2), as words
        "! limit claude five_hour 100% exhausted, resets Wed 2 Jan 07:00",
        "✗ failed: provider_rate_limited: the provider is rate limited"
        " — quota exhausted; resets Wed 2 Jan 07:00",
    ]
    # the header line (a mode-line format: % doubled) shows the fullest meter
    assert o["limitsHeader"].endswith(
        " · idle · limit claude five_hour 100%% exhausted, resets Wed 2 Jan 07:00"
    )
    first = ["## You", "ECHO:first", "", "## Agent", "first", "✓ done (end_turn)"]
    second = ["## You", "ECHO:second", "", "## Agent", "second", "✓ done (end_turn)"]
    third = ["## You", "ECHO:third", "", "## Agent", "third", "✓ done (end_turn)"]
    assert o["fork"] != o["original"]
    assert o["originalLines"][2:] == [*first, "", *second]
    # the fork holds the first run only (forked at its end), then its own run
    assert o["forkLines"] == [f"# agent-bridge · Forked · {o['fork']}", "", *first, "", *third]
    # fork from a message (Claude Code: granularity message): `f` on the text of a run
    # that then called Read forks at the text's last delta; the fork's history ends
    # with it, nothing said; at its first delta the agent's history is cut earlier
    look = ["## You", "SAY:Let me look at it.;READ:hello.py", "", "## Agent"]
    assert o["originalLines3"][2:21] == [*first, "", *second, "", *look, "Let me look at it."]
    assert o["originalLines3"][-1] == "✓ done (end_turn)"
    mid = o["messageForkLines"]
    assert mid[2:] == [*first, "", *second, "", *look, "Let me look at it."], mid
    assert o["messageSaid"] == [], o["messageSaid"]
    # the message fork's model saw the text, not the call nor the answer
    at_text = next(m for m in asked if "what did you say?" in m)
    assert "Let me look at it." in at_text and "ECHO:second" in at_text
    assert "tool_use" not in at_text and "All done." not in at_text
    assert len(o["cutSaid"]) == 1, o["cutSaid"]
    assert o["cutSaid"][0].startswith(
        f"the fork shows the history up to event {o['cutAt']}, but the agent remembers it"
        " only up to event "
    ), o["cutSaid"]


def test_emacs_sends_the_region_or_a_file_as_context(tmp_path: Path) -> None:
    """`agent-bridge-send`: a region of a saved file as a `file` block with its lines, the
    whole file attached to the next prompt (the prompt area says so), a modified file and a
    buffer with no file as `resource` blocks with their text — each as the provider got it
    (the scripted provider's `received` step), and the chat shows what each prompt carried.
    """
    require_editor("emacs")  # skips before anything is set up
    script = tmp_path / "script.json"
    emit = {
        "type": "emit",
        "payloads": [
            {"type": "commands.updated", "commands": [{"name": "review"}, {"name": "test"}]}
        ],
    }
    script.write_text(
        json.dumps(
            {
                "commands": [
                    {"name": "review", "description": "Review the current diff", "hint": "<focus>"}
                ],
                "runs": [*[{"steps": [{"type": "received"}]}] * 6, {"steps": [emit]}],
            }
        )
    )
    work = tmp_path / "work"
    work.mkdir()
    src = work / "src.py"
    text = "import os\n\ndef main():\n    print(os.getcwd())\n\nmain()\n"
    src.write_text(text)
    o = run_ert(tmp_path, "emacs_context.el", SCRIPT=script, WORK=work)
    real = str(src.resolve())
    assert o["askedSelection"].startswith("Prompt with @ src.py:2-4 ")
    assert o["selection"] == [
        {"type": "text", "text": "Explain this"},
        {"type": "file", "path": real, "startLine": 2, "endLine": 4},
    ]
    assert o["inputHeader"].startswith(" prompt with @ src.py · RET sends"), o["inputHeader"]
    assert o["wholeFile"] == [
        {"type": "text", "text": "What is it?"},
        {"type": "file", "path": real},
    ]
    assert o["modified"] == [
        {"type": "text", "text": "Changed"},
        {"type": "resource", "text": text + "print('more')\n", "uri": f"file://{real}"},
    ]
    assert o["resource"] == [
        {"type": "text", "text": "Look"},
        {"type": "resource", "text": "x = 1\ny = 2", "uri": "untitled:notes"},
    ]
    assert o["offered"] == ["/review — Review the current diff"]
    assert o["command"] == [{"type": "command", "name": "review", "arguments": "error handling"}]
    assert o["completed"] == "/review "
    assert o["completedCommand"] == [
        {"type": "command", "name": "review", "arguments": "the tests"}
    ]
    assert o["commandsAfter"] == ["review", "test"]
    lines = o["lines"]
    assert "/review error handling" in lines
    for shown in (
        ["Explain this", "@ src.py:2-4"],
        ["What is it?", "@ src.py"],
        ["Changed", f"@ file://{real} (7 lines)"],
        ["Look", "@ untitled:notes (2 lines)"],
    ):
        i = lines.index(shown[0])
        assert lines[i : i + 2] == shown


def test_emacs_sends_an_image_file_as_context(tmp_path: Path) -> None:
    """`agent-bridge-send` from an image file's buffer: an `image` block, by its path inside
    the session's workspace and by its bytes from elsewhere; the provider gets the image
    whole (its size and SHA-256, the scripted provider's `received` step) and the chat shows
    what each prompt carried."""
    import hashlib

    require_editor("emacs")  # skips before anything is set up
    work = tmp_path / "work"
    work.mkdir()
    # a small real PNG (1x1 pixel), in the workspace and elsewhere
    red = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
    (work / "shot.png").write_bytes(red)
    outside = tmp_path / "elsewhere" / "red.png"
    outside.parent.mkdir()
    outside.write_bytes(red)
    o = run_ert(tmp_path, "emacs_image.el", WORK=work, OUTSIDE=outside)
    assert o["askedInside"].startswith("Prompt with @ image shot.png ")
    assert o["inside"] == [
        {"type": "text", "text": "What is on it?"},
        {
            "type": "image",
            "mimeType": "image/png",
            "size": len(red),
            "sha256": hashlib.sha256(red).hexdigest(),
            "path": str((work / "shot.png").resolve()),
        },
    ], o["inside"]
    assert o["askedOutside"].startswith("Prompt with @ image image/png ")
    assert o["outside"] == [  # its bytes: no path
        {"type": "text", "text": "And this one?"},
        {
            "type": "image",
            "mimeType": "image/png",
            "size": len(red),
            "sha256": hashlib.sha256(red).hexdigest(),
        },
    ], o["outside"]
    lines = o["lines"]
    for prompt, shown in (
        ("What is on it?", f"@ image shot.png ({len(red)} bytes)"),
        ("And this one?", f"@ image image/png ({len(red)} bytes)"),
    ):
        i = lines.index(prompt)
        assert lines[i : i + 2] == [prompt, shown], lines


def test_emacs_continues_a_bridge_or_a_native_session_of_the_workspace(tmp_path: Path) -> None:
    """`agent-bridge-continue`: a picker over the workspace's bridge sessions and the
    sessions the real claude CLI made alone (`claude -p`, its model a loopback stand-in);
    the Claude Code one is continued in the bridge (its turn shown, the next request
    carries it), then offered once, as a bridge session; a bridge session reopens."""
    require_editor("emacs")  # skips before anything is set up

    from provider_clis import require_cli
    from standins.anthropic_server import AnthropicStandIn, Text
    from test_claude_native_e2e import private_env, terminal_session

    claude = require_cli("claude")
    with AnthropicStandIn([Text("Noted: pelican.")]) as standin:
        env = {**os.environ, **private_env(tmp_path, standin.base_url)}
        terminal_session(claude, tmp_path, env)
        standin.push(Text("The word was pelican."))
        o = run_ert(
            tmp_path,
            "emacs_continue.el",
            {**env, "AGENT_BRIDGE_CLAUDE_PATH": claude},
            timeout=240,
            WORK=tmp_path / "work",
        )
        requests = standin.model_requests()
    first = o["labels"]
    assert len(first) == 2, first
    # newest first: the bridge session was made after the terminal's
    assert first[0].startswith("Bridge one · scripted, bridge session · ")
    assert first[1].startswith("remember the word pelican · claude-code's own session · ")
    assert o["provider"] == "claude-code"
    assert o["lines"][:7] == [
        "",
        "## You",
        "remember the word pelican",
        "",
        "## Agent",
        "Noted: pelican.",
        "— imported from claude-code's own session (" + o["lines"][6].split("(")[1],
    ]
    assert o["lines"][-6:] == [
        "## You",
        "what was the word?",
        "",
        "## Agent",
        "The word was pelican.",
        "✓ done (end_turn)",
    ]
    # the model was given the earlier conversation, not a summary
    sent = json.dumps(requests[-1].body.get("messages"))
    assert "remember the word pelican" in sent and "Noted: pelican." in sent
    # offered again: two bridge sessions, the continued one no longer as a native one
    again = o["labelsAgain"]
    assert len(again) == 2, again
    assert all("bridge session" in label for label in again), again
    assert any(label.endswith(o["continued"]) for label in again)
    assert any(label.endswith(o["bridgeOne"]) for label in again)


def test_emacs_continues_a_native_codex_session(tmp_path: Path) -> None:
    """`agent-bridge-continue` offers a thread the real codex CLI made alone (`codex exec`,
    its model the loopback Responses stand-in); picked, it is continued in the bridge (its
    turn shown, the next request carries it); afterwards `codex exec resume` in the
    terminal goes on in the same thread and its request carries the turn made in Emacs."""
    require_editor("emacs")  # skips before anything is set up
    import subprocess

    from provider_clis import require_cli
    from standins.responses_server import CODEX_OFFLINE_CONFIG, ResponsesStandIn, reply, text
    from test_codex_native_e2e import private_env

    codex = require_cli("codex")
    env = {**os.environ, **private_env(tmp_path)}
    work = tmp_path / "work"
    sessions = tmp_path / "codex-home" / "sessions"
    with ResponsesStandIn() as server:
        # the stand-in in the CLI's own config: the terminal and the bridge both use it
        (tmp_path / "codex-home" / "config.toml").write_text(
            CODEX_OFFLINE_CONFIG.replace("http://127.0.0.1:9/v1", server.base_url)
        )
        cli_env = {**env, "PATH": "/usr/bin:/bin"}
        server.script(reply(text("Noted: pelican.")))
        made = subprocess.run(
            [codex, "exec", "--skip-git-repo-check", "remember the word pelican"],
            cwd=work,
            env=cli_env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert made.returncode == 0, made.stderr[-2000:]
        (rollout,) = sessions.glob("*/*/*/rollout-*.jsonl")
        server.script(reply(text("The word was pelican.")))
        o = run_ert(
            tmp_path,
            "emacs_continue_codex.el",
            {**env, "AGENT_BRIDGE_CODEX_PATH": codex},
            timeout=240,
            WORK=work,
        )
        emacs_body = json.dumps(server.response_bodies()[-1].get("input") or [])
        # back in the terminal: the same thread, and the model sees the turn made in Emacs
        server.script(reply(text("Still pelican.")))
        resumed = subprocess.run(
            [codex, "exec", "--skip-git-repo-check", "resume", rollout.stem[-36:], "again?"],
            cwd=work,
            env=cli_env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        terminal_body = json.dumps(server.response_bodies()[-1].get("input") or [])
        assert server.errors == []
    (label,) = o["labels"]
    assert label.startswith("remember the word pelican · codex's own session · "), label
    assert label.endswith(rollout.stem[-12:])
    assert o["provider"] == "codex"
    lines = o["lines"]
    assert lines[:6] == [
        "",
        "## You",
        "remember the word pelican",
        "",
        "## Agent",
        "Noted: pelican.",
    ]
    assert lines[6].startswith("— imported from codex's own session ("), lines
    # Codex's warnings from its start (here: no bubblewrap on PATH) are reported in the
    # next run, as a '! warning' line each
    warned = [li for li in lines[7:] if li.startswith("! warning codex_")]
    assert [li for li in lines[7:] if li not in warned][-6:] == [
        "## You",
        "what was the word?",
        "",
        "## Agent",
        "The word was pelican.",
        "✓ done (completed)",
    ], lines
    # the model was given the terminal's conversation, and the terminal then Emacs's turn
    assert "remember the word pelican" in emacs_body and "Noted: pelican." in emacs_body
    assert "what was the word?" in emacs_body
    assert "what was the word?" in terminal_body and "The word was pelican." in terminal_body
    assert list(sessions.glob("*/*/*/rollout-*.jsonl")) == [rollout]


def test_emacs_switches_a_session_s_model_and_mode(tmp_path: Path) -> None:
    """`m` in the chat: the models and modes session/settings offers (each once, the current
    one marked), the one picked set with session/configure; the settings.updated that
    follows is a chat line and the header line's model and mode; a provider that offers
    none says so, asking nothing."""
    o = run_ert(tmp_path, "emacs_settings.el")
    assert o["offered"] == [
        "model small (Small) — current",
        "model large (Large)",
        "mode ask — current",
        "mode auto",
    ]
    assert " · model large · mode auto · Settings · idle" in o["header"], o["header"]
    assert o["none"] == "scripted offers no model or mode to choose"


def test_emacs_answers_free_text_and_a_question_set_by_button(tmp_path: Path) -> None:
    """A question that takes free text has [Other…] after its choices, a question set
    [Answer…]; each asks only when pressed (an empty answer leaves it pending, its buttons
    kept), and the answers reach the provider; answered, the buttons go. In a chat with
    two pending interactions, M-n/M-p step through the answer buttons and C-c C-n/C-c C-p
    through the interactions, both wrapping around; new text in the chat moves a window
    at its end along but leaves point on a button the user moved to."""
    lines = run_ert(tmp_path, "emacs_buttons.el", results=3)["lines"]
    assert lines[5:] == [
        "? question: Which branch?",
        "→ responded: feature-x",
        "Answer: feature-x",
        "? questionSet: Project setup",
        "→ responded: license=apache, name=demo",
        "Answers: license=apache, name=demo",
        "✓ done (end_turn)",
    ], lines
