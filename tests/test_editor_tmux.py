"""Neovim and Emacs driven the way a user drives them: each runs in a terminal (tmux) on the
real bridge and the scripted provider, keys are typed with ``tmux send-keys`` and the
screen is read with ``tmux capture-pane``.

Each session: a new session made from a source file's buffer (in Emacs its options set in
the new session's transient menu) and its first prompt typed (in Emacs typed ahead, before
the bridge has answered: it must reach the chat, not the file); an approval not asked while
the user types in Neovim's prompt area; an approval dismissed (it stays pending, the bar or
header line counts it), then answered by key (Emacs: M-n to its answer buttons, RET);
a question answered by key (Emacs: dismissed, then C-c C-p to its buttons, RET); the
edit opened as a diff (Emacs); a run interrupted by key; a two-line prompt written in the
prompt area below the chat and sent (Emacs). The source file is untouched at the end.
Emacs then sends the file's first line (marked by keys) as context with a prompt (the chat
shows the run carried it), is quit and started again, and continues the session from
``M-x agent-bridge-continue``'s picker: its history is back and it runs again.
In another Emacs, the chat's menu (`?`, a transient) switches the session's model and mode.
Neovim then sends the file's first line (visual mode, `:'<,'>AgentBridge send text`) from a
tab of its own; the chat shows the run carried it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from editor_tools import ROOT, bridge_command, require_editor

SCRIPT = ROOT / "tests" / "data" / "editors" / "session_script.json"
SOURCE = "print('hi')\n"


class Term:
    """One tmux server (its own socket) running one program in a 120x36 window."""

    def __init__(self, tmux: str, sock: Path, env: dict[str, str]) -> None:
        self.tmux, self.sock, self.env = tmux, sock, env

    def run(self, *args: str) -> str:
        proc = subprocess.run(
            [self.tmux, "-S", str(self.sock), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def start(self, command: str) -> None:
        self.run("new-session", "-d", "-s", "t", "-x", "120", "-y", "36", command)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "t", *keys)

    def text(self, *keys: str) -> None:
        """Type ``keys`` literally (no key names)."""
        self.run("send-keys", "-t", "t", "-l", *keys)

    def line(self, text: str) -> None:
        """Type ``text`` literally, then Enter."""
        self.text(text)
        self.keys("Enter")

    def mx(self, command: str) -> None:
        """Emacs: ``M-x command RET``."""
        self.keys("M-x")
        self.line(command)

    def ex(self, command: str) -> None:
        """Neovim: ``:command<CR>``."""
        self.keys(":")
        self.line(command)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "t")

    def wait(self, what: str, *, gone: str | None = None, timeout: float = 30) -> str:
        """Wait until the screen shows ``what`` (and no longer ``gone``); return it."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            if what in s and (gone is None or gone not in s):
                return s
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed {what!r}:\n{s}")
            time.sleep(0.1)

    def wait_exit(self, *, timeout: float = 30) -> None:
        """Wait until the program has exited (and the tmux server with it), answering an
        exit's confirmation ("kill them and exit anyway? (yes or no)") with yes."""
        deadline = time.monotonic() + timeout
        while True:
            proc = subprocess.run(
                [self.tmux, "-S", str(self.sock), "capture-pane", "-p", "-t", "t"],
                capture_output=True,
                text=True,
                env=self.env,
                timeout=30,
            )
            if proc.returncode != 0:
                return
            if "(yes or no)" in proc.stdout:
                self.text("yes")
                self.keys("Enter")
            if time.monotonic() > deadline:
                raise AssertionError(f"the program never exited:\n{proc.stdout}")
            time.sleep(0.2)

    def kill(self) -> None:
        subprocess.run(
            [self.tmux, "-S", str(self.sock), "kill-server"],
            capture_output=True,
            env=self.env,
            timeout=30,
        )


@pytest.fixture
def term(tmp_path: Path) -> Iterator[Term]:
    tmux = require_editor("tmux")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "TERM": "xterm-256color",
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
    }
    t = Term(tmux, tmp_path / "tmux.sock", env)
    try:
        yield t
    finally:
        t.kill()


class Emacs:
    """``emacs -nw`` in ``term`` with the package loaded, on the real bridge, its state
    under ``tmp_path``."""

    def __init__(self, term: Term, tmp_path: Path) -> None:
        self.term, self.program = term, require_editor("emacs")
        self.init = tmp_path / "init.el"
        self.init.write_text(
            f"""(add-to-list 'load-path {json.dumps(str(ROOT / "editors" / "emacs"))})
(require 'agent-bridge)
(setq agent-bridge-command '({json.dumps(bridge_command()[0])})
      agent-bridge-state-directory {json.dumps(str(tmp_path / "state"))}
      inhibit-startup-screen t)
"""
        )

    def start(self, *files: Path, shows: str) -> None:
        """Start Emacs visiting ``files`` and wait until the screen shows ``shows``."""
        self.term.start(
            " ".join([self.program, "-nw", "-Q", "-l", str(self.init), *map(str, files)])
        )
        self.term.wait(shows)

    def new_scripted_session(self, script: Path, title: str) -> None:
        """``M-x agent-bridge-new-session``, ``scripted``; in the new session's menu (a
        transient) x sets one of the provider's options (the script file), t the title,
        each then shown in the menu.  The menu is left open: RET creates the session."""
        term = self.term
        term.mx("agent-bridge-new-session")
        term.wait("agent-bridge provider:")
        term.line("scripted")
        term.wait("New scripted session")
        term.wait("x Other options   none set")
        term.keys("x")
        term.wait("Session option:")
        term.line("scriptFile")
        term.wait("scriptFile (string):")
        term.line(str(script))
        term.wait(f"x Other options   scriptFile={script}")
        term.keys("t")
        term.wait("Title (optional):")
        term.line(title)
        term.wait(f"t Title           {title}")


def test_emacs_typed_in_a_terminal(term: Term, tmp_path: Path) -> None:
    emacs = Emacs(term, tmp_path)
    src = tmp_path / "src.py"
    src.write_text(SOURCE)
    emacs.start(src, shows="src.py")
    emacs.new_scripted_session(SCRIPT, "Fix-the-build")
    # RET, then `p` and the prompt at once: typed ahead of the bridge's answer
    term.keys("Enter", "p")
    term.line("Fix the build")
    screen = term.wait("? approval: Edit Makefile")
    term.wait("1 pending approval")
    term.wait("[Allow once] [Allow for session] [Deny]")
    # `a` asks; C-g dismisses: still pending
    term.keys("a")
    term.wait("o allow once, s allow for session, d deny, C-g/q dismiss")
    term.keys("C-g")
    screen = term.wait("1 pending approval", gone="C-g/q dismiss):")
    assert "→ responded" not in screen
    # M-n: to the next answer button, the echo area naming it (from the chat's end it
    # wraps around to the first and says so; where the chat kept point before the
    # buttons, as it can when the approval's lines arrived after it, it just moves on);
    # M-n again: [Allow for session]; RET presses it
    term.keys("M-n")
    term.wait("[Allow once] (approval: Edit Makefile)")
    term.keys("M-n")
    term.wait("[Allow for session] (approval: Edit Makefile) — RET answers")
    term.keys("Enter")
    term.wait("→ responded: allow (session)")
    term.wait("? question: Run the tests too?")
    term.keys("a")
    term.wait("1 Yes, 2 No")
    term.keys("C-g")
    # its answers are buttons in the chat: C-c C-p to the previous pending interaction's
    # first button ([Yes]), RET presses it
    term.wait("[Yes] [No]", gone="1 Yes, 2 No")
    term.keys("C-c", "C-p")
    term.wait("[Yes] (question: Run the tests too?) — RET answers")
    term.keys("Enter")
    screen = term.wait("✓ done (end_turn)")
    assert "[Yes] [No]" not in screen and "[Allow once]" not in screen
    assert "Tests pass." in screen and "Done." in screen
    # `d`: the edit in diff-mode, headed with the file's name
    term.keys("d")
    screen = term.wait("+++ b/Makefile")
    assert "--- a/Makefile" in screen and "#<buffer" not in screen
    # a run interrupted with C-c C-c
    term.keys("p")
    term.line("Keep going")
    term.wait("Working on it...")
    term.keys("C-c", "C-c")
    term.wait("✗ interrupted (user)")
    # `i`: the prompt area below the chat; a two-line prompt (C-j), sent with RET
    term.keys("i")
    term.wait("RET sends · C-j new line")
    term.text("one")
    term.keys("C-j")
    term.line("two")
    screen = term.wait("You said: one")
    assert "two" in screen
    term.keys("C-x", "o")  # back to the chat
    # the source buffer: unmodified, its text as it was
    term.keys("C-x", "b")
    term.line("src.py")
    screen = term.wait("print('hi')")
    line = next(li for li in screen.splitlines() if "src.py" in li and "(Python" in li)
    assert "**" not in line, line  # the mode line's modified flag
    assert "pprint" not in screen
    assert src.read_text() == SOURCE
    # the region (the file's first line, marked by keys) sent as context with a prompt:
    # the chat shows what the run carried, as the bridge recorded it
    term.keys("M-<", "C-Space", "C-e")
    term.mx("agent-bridge-send")
    term.wait("Prompt with @ src.py:1-1 (empty: attach to the next prompt):")
    term.line("Explain this")
    screen = term.wait("You said: Explain this")
    assert "@ src.py:1-1" in screen
    # Emacs quit (its bridge with it) and started again: M-x agent-bridge-continue offers
    # the session in a picker; picked, its chat comes back with its history and runs again
    term.keys("C-x", "C-c")
    term.wait_exit()
    emacs.start(src, shows="print('hi')")
    term.mx("agent-bridge-continue")
    term.wait("Continue a session:")
    term.text("Fix")
    term.keys("Tab")
    term.wait("Fix-the-build · scripted, bridge session ·")
    term.keys("Enter")
    screen = term.wait("You said: Explain this")
    assert "@ src.py:1-1" in screen and "— session resumed" in screen
    term.keys("p")
    term.line("Still there?")
    term.wait("You said: Still there?")
    assert src.read_text() == SOURCE


def test_emacs_switches_model_and_mode_in_the_chat_menu(term: Term, tmp_path: Path) -> None:
    """`?` in the chat: the session's menu (transient) shows its model and mode
    (session/settings); `m` and `o` there pick another (session/configure), the chat and
    the header line show it, and the menu opened again shows it current."""
    emacs = Emacs(term, tmp_path)
    script = tmp_path / "settings.json"
    script.write_text(
        json.dumps(
            {
                "settings": {
                    "model": {
                        "current": "small",
                        "available": [{"id": "small", "name": "Small"}, {"id": "large"}],
                    },
                    "mode": {"current": "ask", "available": [{"id": "ask"}, {"id": "auto"}]},
                },
                "steps": [{"type": "echo"}],
            }
        )
    )
    emacs.start(shows="*scratch*")
    emacs.new_scripted_session(script, "Menu")
    term.keys("Enter")
    term.wait("· Menu · idle")
    # `?`: the chat's menu, the model and mode as the provider has them
    term.text("?")
    term.wait("Session Menu (scripted)")
    screen = term.wait("m Model           small")
    assert "o Mode            ask" in screen and "p Prompt" in screen
    # `m`: the models offered, the current one marked; `large` picked
    term.keys("m")
    term.wait("Model:")
    term.keys("Tab")
    term.wait("small (Small) — current")
    term.text("lar")
    term.keys("Tab", "Enter")
    term.wait("— model large · mode ask")
    # `? o`: the mode; the menu shows the model now current
    term.text("?")
    term.wait("m Model           large")
    term.keys("o")
    term.wait("Mode:")
    term.line("auto")
    screen = term.wait("— model large · mode auto")
    assert "model large · mode auto · Menu · idle" in screen
    # the next run goes on, the menu quit with q first
    term.text("?")
    term.wait("o Mode            auto")
    term.keys("q")
    term.wait("· Menu · idle", gone="Session Menu (scripted)")
    term.keys("p")
    term.line("hello")
    term.wait("You said: hello")


def test_neovim_typed_in_a_terminal(term: Term, tmp_path: Path) -> None:
    nvim = require_editor("nvim")
    src = tmp_path / "src.py"
    src.write_text(SOURCE)
    init = tmp_path / "init.lua"
    init.write_text(
        f"""vim.opt.rtp:prepend({json.dumps(str(ROOT / "editors" / "neovim"))})
require('agent_bridge').setup({{ cmd = {{ {json.dumps(bridge_command()[0])} }},
  state_dir = {json.dumps(str(tmp_path / "state"))} }})
"""
    )
    # in the source file's directory: the session's workspace, where the file sent is
    term.start(f"cd {tmp_path} && {nvim} -u {init} -i NONE -n {src}")
    term.wait("print('hi')")
    term.ex(f"AgentBridge new scripted scriptFile={SCRIPT} title=Fix-the-build")
    # the cursor is in the prompt area below the chat: type the prompt, send with C-s
    term.wait("<CR> sends")
    term.keys("i")
    term.text("Fix the build")
    term.keys("C-s")
    # the approval is not asked while the user is in the prompt area (keys typed there
    # must not answer it): it waits, counted, with a note saying how to answer it
    screen = term.wait("1 pending approval")
    term.wait("waiting: a, ga or gr in the chat")
    # the prompt area's bar says so too, for as long as it is pending (the message line
    # is soon the mode's again)
    term.wait("<C-c> interrupts · 1 pending: a, ga or gr in the chat")
    assert "2: Allow for this session" not in term.screen()
    # asked by :AgentBridge approvals; an empty answer dismisses it: still pending
    term.ex("AgentBridge approvals")
    term.wait("2: Allow for this session")
    term.keys("Enter")
    screen = term.wait("1 pending approval", gone="2: Allow for this session")
    assert "→ responded" not in screen
    # answered by key: :AgentBridge approvals, 2 (allow for the session)
    term.ex("AgentBridge approvals")
    term.wait("2: Allow for this session")
    term.line("2")
    # the question, asked the same way: 1 (Yes)
    term.wait("? question: Run the tests too?")
    term.ex("AgentBridge approvals")
    term.wait("1: Yes")
    term.line("1")
    screen = term.wait("✓ done (end_turn)")
    assert "→ responded: allow (session)" in screen and "→ responded: yes" in screen
    assert "pending: a, ga or gr" not in screen
    # another prompt, interrupted with C-c in the prompt area
    term.keys("i")
    term.text("Keep going")
    term.keys("C-s")
    term.wait("Working on it...")
    term.keys("C-c")
    term.wait("✗ interrupted (user)")
    assert src.read_text() == SOURCE
    # the file's first line, selected in visual mode in a tab of its own, sent as context
    # with a prompt; back in the chat's tab it shows what the run carried
    term.keys("Escape")
    term.ex(f"tabnew {src}")
    term.wait("print('hi')", gone="✗ interrupted (user)")
    term.keys("V", ":")
    term.wait(":'<,'>")
    term.line("AgentBridge send Explain this")
    term.ex("tabfirst")
    screen = term.wait("You said: Explain this")
    assert "src.py:1-1" in screen, screen
    assert src.read_text() == SOURCE
