#!/usr/bin/env python3
"""A stand-in for the ``claude`` CLI (Claude Code 2.1.197) in bidirectional stream-json mode.

Run it as ``[sys.executable, "tests/standins/fake_claude.py", <claude flags>...]``. It
speaks what the real CLI speaks on stdin/stdout with::

    --input-format stream-json --output-format stream-json --verbose
    --permission-prompt-tool stdio [--include-partial-messages]
    [--model M] [--resume ID [--fork-session]] [--session-id ID] [--permission-mode M]

NDJSON both ways. Messages it writes, with the key sets of the real 2.1.197 output:
``control_response`` (to ``initialize``, ``interrupt``, ``set_permission_mode``,
``set_model``; unknown subtypes get ``subtype: "error"``), ``system``/``init`` (at the
start of every turn), ``system``/``status``, ``stream_event`` (only with
``--include-partial-messages``), ``assistant``, ``user`` (tool results, interrupt
markers), ``control_request``/``can_use_tool``, ``control_cancel_request`` and
``result``. It never touches the network.

Behaviour is scripted by a JSON object given as ``--fake-script PATH`` (or
``--fake-script '{...}'``) or the environment variable ``FAKE_CLAUDE_SCRIPT`` (a path or
inline JSON; note an adapter that builds the child environment from an allowlist drops
it, so prefer the argument)::

    {
      "turns": [TURN, ...],      # one per user message, in order; a TURN is a list of
                                 # STEPs or a string (one text reply)
      "when_exhausted": "rules", # "rules" (default) | "echo": reply when turns run out
      "interrupt": "normal",     # "normal" | "ignore" (ack, keep going) | "silent"
      "startup": [STEP, ...],    # run before reading stdin (e.g. crash at start)
      "startup_delay": 0.0,      # seconds before reading stdin
      "session_id": null,        # fixed session id for a new session
      "model": "claude-opus-4-8[1m]",
      "record": null             # path: append argv/cwd and every stdin frame as JSONL
    }

STEPs (one JSON object each):

- ``{"text": "...", "chunks": N, "delay": S}``: a model message streamed as N
  ``text_delta`` events (default one a word), S seconds apart (interruptible).
- ``{"bash": "touch f"}`` or ``{"tool": "Bash", "input": {...}}``: a tool call; asks
  ``can_use_tool`` (unless ``--permission-mode bypassPermissions`` or
  ``"ask": false``), then reports a ``tool_result``. An allowed ``touch FILE...`` really
  creates the files (relative to the cwd), so a test can check the effect; other
  commands are not run. ``"cancel_after": S``: with no reply after S seconds the fake
  withdraws the request itself (``control_cancel_request``) and the tool fails. A tool
  step that ends the turn gets an automatic follow-up text ``"Tool finished. Result:
  ..."`` (set ``"followup": false`` to skip). A deny with ``"interrupt": true`` ends the
  turn as interrupted, as the real CLI does.
- ``{"api_error": {"status": 400, "message": "..."}}``: the turn ends as the real CLI
  ends it on an API error (synthetic assistant message, ``result`` with
  ``is_error: true`` and ``api_error_status``).
- ``{"stderr": "line", "repeat": N}``: write to stderr (flooding).
- ``{"crash": {"exit_code": 3, "stderr": "boom"}}``: write stderr and exit at once.
- ``{"close_stdout": true}`` (or ``{"close_stdout": {"exit_after": S}}``): close stdout
  (the reader sees EOF) and keep running until stdin closes (or S seconds).
- ``{"exit": CODE}``: exit at once, no result.
- ``{"sleep": S}``: pause (interruptible).
- ``{"hang": true}``: never finish the turn (an interrupt still ends it, unless ignored).
- ``{"frame": {...}}``: write this object verbatim (unknown types, odd shapes).
- ``{"switch_session": "ID"}``: from the next turn on (its ``init`` first), every frame
  names session ``ID`` (a CLI that went on in another conversation).
- ``{"line": "..."}``: write this text as one stdout line, verbatim (JSON nested deeper
  than ``json.dumps`` writes, a control request with a deep ``input``); with
  ``"await_id": RID`` the line is a control request ``RID``: wait for its reply (at most
  ``cancel_after`` seconds, default 5, then cancel it as the CLI does).
- ``{"stray": "assistant" | "stream_event" | "result" | "control_response"}``: a frame
  that belongs to another turn/session (other session_id, stale ids).
- ``{"control_request": {"subtype": "frobnicate", ...}, "await": true}``: send a
  control request of any subtype; with ``await``, wait for the reply.
- ``{"result": {...}}``: override fields of this turn's ``result`` message.

With no scripted turn left, "rules" answers like the stand-in server's rules: a prompt
``TOOL:<command>`` -> a Bash call of that command, ``SLOW`` -> 20 words 0.5 s apart,
``ECHO:<text>`` -> ``<text>``, ``SAY:<text>;READ:<path>`` -> ``<text>`` then a Read
call of that path (not asked), anything else -> ``"Hi! I am the stand-in model."``.

Sessions are saved (in the fake's own format; not with ``--no-session-persistence``) under
``$CLAUDE_CONFIG_DIR/projects/<cwd with non-alphanumerics as '-'>/<id>.fake.json`` (like
the real CLI, ``$HOME/.claude`` when ``CLAUDE_CONFIG_DIR`` is unset: give it private dirs) so
``--resume ID`` works from the same cwd; an unknown ID fails as the real CLI fails
(stderr ``No conversation found with session ID: ID``, a ``result`` with
``error_during_execution``, exit 1). ``--version`` and ``auth status [--json]`` answer as
the real CLI does (logged in with ``api_key`` when ``ANTHROPIC_API_KEY`` is set). The
``record`` file's first entry carries the fake's ``pid``. Exit codes: 0 on stdin EOF, 1 if
the last turn was interrupted or failed, 1 on a malformed input line, 143 on SIGTERM.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import signal
import sys
import threading
import time
import uuid
from typing import Any

VERSION = "2.1.197"
DEFAULT_MODEL = "claude-opus-4-8[1m]"
GREETING = "Hi! I am the stand-in model."
TOOLS = [
    "Task",
    "AskUserQuestion",
    "Bash",
    "CronCreate",
    "CronDelete",
    "CronList",
    "Edit",
    "EnterPlanMode",
    "EnterWorktree",
    "ExitPlanMode",
    "ExitWorktree",
    "NotebookEdit",
    "Read",
    "ReportFindings",
    "ScheduleWakeup",
    "SendMessage",
    "Skill",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "TaskUpdate",
    "WebFetch",
    "WebSearch",
    "Workflow",
    "Write",
]
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if "
    "it was a file edit, the new_string was NOT written to the file). STOP what you are "
    "doing and wait for the user to tell you how to proceed."
)
PRICE_IN, PRICE_OUT = 5e-6, 25e-6  # USD per token, as the real CLI computes for this model


class Interrupted(Exception):
    pass


def _uuid() -> str:
    return str(uuid.uuid4())


def _now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def parse_args(argv: list[str]) -> dict[str, Any]:
    """A lenient parser of the claude flags the fake understands (others are ignored)."""
    with_value = {
        "--input-format",
        "--output-format",
        "--permission-prompt-tool",
        "--model",
        "--resume",
        "-r",
        "--session-id",
        "--permission-mode",
        "--fake-script",
        "--append-system-prompt",
        "--system-prompt",
        "--max-budget-usd",
        "--effort",
        "--allowedTools",
        "--allowed-tools",
        "--disallowedTools",
        "--disallowed-tools",
        "--settings",
        "--setting-sources",
        "--add-dir",
        "--mcp-config",
        "--tools",
        "--fallback-model",
        "-n",
        "--name",
        "--agent",
        "--agents",
        "--betas",
        "--debug-file",
        "--json-schema",
    }
    opts: dict[str, Any] = {"flags": set(), "prompt": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            opts[k] = v
        elif a in with_value:
            opts[a] = argv[i + 1] if i + 1 < len(argv) else ""
            i += 1
        elif a.startswith("-"):
            opts["flags"].add(a)
        else:
            opts["prompt"] = a
        i += 1
    if "-r" in opts:
        opts["--resume"] = opts["-r"]
    return opts


def load_script(opts: dict[str, Any]) -> dict[str, Any]:
    src = opts.get("--fake-script") or os.environ.get("FAKE_CLAUDE_SCRIPT")
    if not src:
        return {}
    if src.lstrip().startswith("{"):
        text = src
    else:
        with open(src, encoding="utf-8") as f:
            text = f.read()
    cfg = json.loads(text)
    if not isinstance(cfg, dict):
        raise SystemExit("fake_claude: the script must be a JSON object")
    return cfg


class FakeClaude:
    def __init__(self, argv: list[str]) -> None:
        self.argv = list(argv)
        self.opts = parse_args(argv)
        self.cfg = load_script(self.opts)
        self.flags: set[str] = self.opts["flags"]
        self.partial = "--include-partial-messages" in self.flags
        self.ask_stdio = self.opts.get("--permission-prompt-tool") == "stdio"
        self.permission_mode = self.opts.get("--permission-mode") or "default"
        self.model = self.opts.get("--model") or self.cfg.get("model") or DEFAULT_MODEL
        self.api_model = self.model.split("[")[0]
        self.cwd = os.getcwd()
        self.turns: list[Any] = list(self.cfg.get("turns") or [])
        self.interrupt_mode = self.cfg.get("interrupt", "normal")
        self.record_path = self.cfg.get("record") or os.environ.get("FAKE_CLAUDE_RECORD")

        self._out_lock = threading.Lock()
        self._stdout_closed = False
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.busy = threading.Event()
        self.stdin_eof = threading.Event()
        self._turn_lock = threading.Lock()
        self.interrupt_event = threading.Event()
        self.interrupt_request_id: str | None = None
        self._replies: dict[str, queue.Queue[dict[str, Any]]] = {}
        self._ids = 0
        self.total_cost = 0.0
        self.model_usage = {"inputTokens": 0, "outputTokens": 0, "costUSD": 0.0}
        self.last_turn_failed = False

        self.session_id: str = (
            self.cfg.get("session_id") or self.opts.get("--session-id") or _uuid()
        )
        #: set by a "switch_session" step: the session id from the next turn on
        self.next_session_id: str | None = None
        self.history: list[dict[str, Any]] = []
        self.user_turns = 0

    # ------------------------------------------------------------------ output

    def emit(self, msg: dict[str, Any]) -> None:
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self._out_lock:
            if self._stdout_closed:
                return
            try:
                sys.stdout.write(line)
                sys.stdout.flush()
            except (BrokenPipeError, ValueError, OSError):
                self._stdout_closed = True

    def emit_line(self, text: str) -> None:
        """Write ``text`` as one stdout line, verbatim (JSON ``json.dumps`` cannot
        write, such as objects nested thousands deep)."""
        with self._out_lock:
            if self._stdout_closed:
                return
            try:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()
            except (BrokenPipeError, ValueError, OSError):
                self._stdout_closed = True

    def close_stdout(self) -> None:
        with self._out_lock:
            self._stdout_closed = True
            with contextlib.suppress(OSError):
                sys.stdout.flush()
            with contextlib.suppress(OSError):
                os.close(1)

    def record(self, entry: dict[str, Any]) -> None:
        if not self.record_path:
            return
        with open(self.record_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def next_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_fake_{self._ids}"

    # ------------------------------------------------------------------ sessions

    def _session_dir(self) -> str:
        base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(
            os.environ.get("HOME") or self.cwd, ".claude"
        )
        return os.path.join(base, "projects", re.sub(r"[^A-Za-z0-9]", "-", self.cwd))

    def _session_file(self, sid: str) -> str:
        return os.path.join(self._session_dir(), f"{sid}.fake.json")

    def save_session(self) -> None:
        if "--no-session-persistence" in self.flags:
            return
        try:
            os.makedirs(self._session_dir(), exist_ok=True)
            with open(self._session_file(self.session_id), "w", encoding="utf-8") as f:
                json.dump({"session_id": self.session_id, "history": self.history}, f)
        except OSError as e:
            print(f"fake_claude: cannot save session: {e}", file=sys.stderr, flush=True)

    def load_resume(self) -> bool:
        sid = self.opts.get("--resume")
        if not sid:
            return True
        try:
            with open(self._session_file(sid), encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            print(f"No conversation found with session ID: {sid}", file=sys.stderr, flush=True)
            self.session_id = sid
            self.emit(
                self.result_msg(
                    0,
                    0,
                    0,
                    error="error_during_execution",
                    extra={"errors": [f"No conversation found with session ID: {sid}"]},
                )
            )
            return False
        self.history = list(data.get("history") or [])
        self.user_turns = sum(1 for m in self.history if m.get("role") == "user")
        self.session_id = _uuid() if "--fork-session" in self.flags else sid
        return True

    # ------------------------------------------------------------------ message builders

    def envelope(self, **fields: Any) -> dict[str, Any]:
        return {
            **fields,
            "parent_tool_use_id": None,
            "session_id": self.session_id,
            "uuid": _uuid(),
        }

    def init_msg(self) -> dict[str, Any]:
        return {
            "type": "system",
            "subtype": "init",
            "cwd": self.cwd,
            "session_id": self.session_id,
            "tools": TOOLS,
            "mcp_servers": [],
            "model": self.model,
            "permissionMode": self.permission_mode,
            "slash_commands": ["compact", "context", "init", "review"],
            "apiKeySource": "ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else "none",
            "claude_code_version": VERSION,
            "output_style": "default",
            "agents": ["general-purpose"],
            "skills": [],
            "plugins": [],
            "analytics_disabled": True,
            "product_feedback_disabled": True,
            "uuid": _uuid(),
            "memory_paths": {"auto": os.path.join(self._session_dir(), "memory") + "/"},
            "fast_mode_state": "off",
        }

    def status_msg(self) -> dict[str, Any]:
        return {
            "type": "system",
            "subtype": "status",
            "status": "requesting",
            "uuid": _uuid(),
            "session_id": self.session_id,
        }

    def stream(self, event: dict[str, Any], **extra: Any) -> None:
        if self.partial:
            self.emit({"type": "stream_event", "event": event, **self.envelope(**extra)})

    def assistant(self, msg_id: str, content: list[dict[str, Any]], request_id: str) -> None:
        self.emit(
            {
                "type": "assistant",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.api_model,
                    "content": content,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 12,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1,
                    },
                    "context_management": None,
                },
                "parent_tool_use_id": None,
                "session_id": self.session_id,
                "uuid": _uuid(),
                "request_id": request_id,
            }
        )

    def user_msg(self, content: list[dict[str, Any]], **extra: Any) -> None:
        self.emit(
            {
                "type": "user",
                "message": {"role": "user", "content": content},
                "parent_tool_use_id": None,
                "session_id": self.session_id,
                "uuid": _uuid(),
                "timestamp": _now_iso(),
                **extra,
            }
        )

    def tool_error(self, tool_id: str, text: str) -> None:
        self.user_msg(
            [{"type": "tool_result", "content": text, "is_error": True, "tool_use_id": tool_id}],
            tool_use_result=f"Error: {text}",
        )

    def usage(self, n_in: int, n_out: int) -> dict[str, Any]:
        return {
            "input_tokens": n_in,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": n_out,
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
            "service_tier": "standard",
            "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
            "inference_geo": "",
            "iterations": [],
            "speed": "standard",
        }

    def result_msg(
        self,
        n_req: int,
        n_in: int,
        n_out: int,
        *,
        error: str | None = None,
        text: str = "",
        duration_ms: int = 0,
        denials: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        model_usage = (
            {
                self.model: {
                    **self.model_usage,
                    "cacheReadInputTokens": 0,
                    "cacheCreationInputTokens": 0,
                    "webSearchRequests": 0,
                    "contextWindow": 1000000,
                    "maxOutputTokens": 64000,
                }
            }
            if n_req or self.model_usage["inputTokens"]
            else {}
        )
        if error:
            msg: dict[str, Any] = {
                "type": "result",
                "subtype": error,
                "duration_ms": duration_ms,
                "duration_api_ms": duration_ms,
                "is_error": True,
                "num_turns": n_req,
                "stop_reason": None,
                "session_id": self.session_id,
                "total_cost_usd": round(self.total_cost, 9),
                "usage": self.usage(n_in, n_out),
                "modelUsage": model_usage,
                "permission_denials": denials or [],
                "terminal_reason": "aborted_streaming",
                "fast_mode_state": "off",
                "uuid": _uuid(),
                "errors": [
                    "[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"
                ],
            }
        else:
            msg = {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "api_error_status": None,
                "duration_ms": duration_ms,
                "duration_api_ms": duration_ms,
                "ttft_ms": 1,
                "ttft_stream_ms": 1,
                "time_to_request_ms": 1,
                "num_turns": n_req,
                "result": text,
                "stop_reason": "end_turn",
                "session_id": self.session_id,
                "total_cost_usd": round(self.total_cost, 9),
                "usage": self.usage(n_in, n_out),
                "modelUsage": model_usage,
                "permission_denials": denials or [],
                "terminal_reason": "completed",
                "fast_mode_state": "off",
                "uuid": _uuid(),
            }
        msg.update(extra or {})
        return msg

    # ------------------------------------------------------------------ stdin

    def reader(self) -> None:
        for raw in sys.stdin.buffer:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError as e:
                print(
                    f"Error parsing streaming input line: {line}: SyntaxError: {e}",
                    file=sys.stderr,
                    flush=True,
                )
                self.close_stdout()
                os._exit(1)
            self.record({"t": time.time(), "in": msg})
            if not isinstance(msg, dict):
                continue
            kind = msg.get("type")
            if kind == "user":
                self.inbox.put(msg)
            elif kind == "control_request":
                self.on_control_request(msg)
            elif kind == "control_response":
                resp = msg.get("response") or {}
                q = self._replies.get(str(resp.get("request_id")))
                if q is not None:
                    q.put(resp)
            # anything else (keep_alive, unknown types, control_cancel_request): ignored
        self.stdin_eof.set()
        self.inbox.put(None)

    def on_control_request(self, msg: dict[str, Any]) -> None:
        rid = msg.get("request_id")
        req = msg.get("request") or {}
        sub = req.get("subtype")

        def ok(response: dict[str, Any] | None = None) -> None:
            body: dict[str, Any] = {"subtype": "success", "request_id": rid}
            if response is not None:
                body["response"] = response
            self.emit({"type": "control_response", "response": body})

        if sub == "initialize":
            ok(
                {
                    "commands": [
                        {
                            "name": "compact",
                            "description": "Clear conversation history "
                            "but keep a summary in context",
                            "argumentHint": "",
                        }
                    ],
                    "agents": [{"name": "general-purpose", "description": "General-purpose agent"}],
                    "output_style": "default",
                    "available_output_styles": ["default", "Explanatory", "Learning"],
                    "models": [
                        {
                            "value": "default",
                            "resolvedModel": DEFAULT_MODEL,
                            "displayName": "Default (recommended)",
                            "description": "Stand-in model",
                            "supportsEffort": True,
                            "supportedEffortLevels": ["low", "medium", "high", "xhigh", "max"],
                            "supportsAdaptiveThinking": True,
                            "supportsFastMode": True,
                            "supportsAutoMode": True,
                        }
                    ],
                    "account": {
                        "tokenSource": "none",
                        "apiKeySource": "ANTHROPIC_API_KEY",
                        "apiProvider": "firstParty",
                    },
                    "pid": os.getpid(),
                }
            )
        elif sub == "interrupt":
            if self.interrupt_mode == "silent":
                return
            with self._turn_lock:
                if self.busy.is_set() and self.interrupt_mode == "normal":
                    self.interrupt_request_id = rid
                    self.interrupt_event.set()  # the turn answers when it stops
                    return
            ok()
        elif sub == "set_permission_mode":
            self.permission_mode = req.get("mode") or self.permission_mode
            ok({"mode": self.permission_mode})
            self.emit(
                {
                    "type": "system",
                    "subtype": "status",
                    "status": None,
                    "permissionMode": self.permission_mode,
                    "uuid": _uuid(),
                    "session_id": self.session_id,
                }
            )
        elif sub == "set_model":
            self.model = req.get("model") or DEFAULT_MODEL
            self.api_model = self.model.split("[")[0]
            ok()
        else:
            self.emit(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "error",
                        "request_id": rid,
                        "error": f"Unsupported control request subtype: {sub}",
                    },
                }
            )

    def send_request(self, request: dict[str, Any]) -> str:
        """Send a control_request to the client; returns its request_id."""
        rid = _uuid()
        self._replies[rid] = queue.Queue()
        self.emit({"type": "control_request", "request_id": rid, "request": request})
        return rid

    def wait_reply(self, rid: str, cancel_after: float | None = None) -> dict[str, Any]:
        """Wait for the control_response to ``rid``; an interrupt cancels the request, and
        so does ``cancel_after`` seconds without a reply (as the CLI cancels a request it
        no longer needs: ``control_cancel_request``, then the tool fails)."""
        q = self._replies[rid]
        deadline = None if cancel_after is None else time.monotonic() + cancel_after
        try:
            while True:
                if deadline is not None and time.monotonic() >= deadline:
                    self.emit({"type": "control_cancel_request", "request_id": rid})
                    return {"subtype": "error", "request_id": rid, "error": "Request cancelled"}
                if self.interrupt_event.is_set():
                    self.emit({"type": "control_cancel_request", "request_id": rid})
                    raise Interrupted
                if self.stdin_eof.is_set() and q.empty():
                    # as the real CLI: the request fails, the turn goes on
                    return {
                        "subtype": "error",
                        "request_id": rid,
                        "error": "Tool permission stream closed before response received",
                    }
                try:
                    return q.get(timeout=0.02)
                except queue.Empty:
                    continue
        finally:
            self._replies.pop(rid, None)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        return self.wait_reply(self.send_request(request))

    def pause(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            if self.interrupt_event.is_set():
                raise Interrupted
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.02))

    # ------------------------------------------------------------------ turns

    def rules(self, prompt: str) -> list[dict[str, Any]]:
        p = prompt.strip()
        if p.startswith("TOOL:"):
            return [{"bash": p[5:].strip()}]
        if p.startswith("SLOW"):
            return [{"text": " ".join(f"word{i}" for i in range(20)), "delay": 0.5}]
        if p.startswith("ECHO:"):
            return [{"text": p[5:].strip()}]
        if p.startswith("SAY:") and ";READ:" in p:
            said, path = p[4:].split(";READ:", 1)
            read = {"tool": "Read", "input": {"file_path": path.strip()}, "ask": False}
            return [{"text": said.strip()}, read]
        if self.cfg.get("when_exhausted") == "echo":
            return [{"text": p}]
        return [{"text": GREETING}]

    def steps_for(self, prompt: str) -> list[dict[str, Any]]:
        if self.turns:
            turn = self.turns.pop(0)
            if isinstance(turn, str):
                return [{"text": turn}]
            if isinstance(turn, dict):
                return [turn]
            return list(turn)
        return self.rules(prompt)

    def run_turn(self, msg: dict[str, Any]) -> None:
        content = (msg.get("message") or {}).get("content")
        if isinstance(content, list):
            prompt = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        else:
            prompt = str(content or "")
        self.user_turns += 1
        self.history.append({"role": "user", "text": prompt})
        steps = self.steps_for(prompt)
        t0 = time.monotonic()
        state = new_state()
        if self.next_session_id is not None:  # a "switch_session" step of an earlier turn
            self.session_id, self.next_session_id = self.next_session_id, None
        self.emit(self.init_msg())
        with self._turn_lock:
            self.interrupt_event.clear()
            self.busy.set()
        try:
            for i, step in enumerate(steps):
                last = i == len(steps) - 1
                done = self.run_step(step, state, last)
                if done:
                    return
            self.finish_ok(state, t0)
        except Interrupted:
            self.finish_interrupted(state, t0)
        finally:
            with self._turn_lock:
                self.busy.clear()
                self.interrupt_event.clear()
                late, self.interrupt_request_id = self.interrupt_request_id, None
            if late is not None:  # the interrupt came after the last interruptible point
                self.emit(
                    {
                        "type": "control_response",
                        "response": {"subtype": "success", "request_id": late},
                    }
                )
            self.save_session()

    def _charge(self, state: dict[str, Any], n_out: int) -> None:
        state["n_req"] += 1
        state["n_in"] += 12
        state["n_out"] += n_out
        cost = 12 * PRICE_IN + n_out * PRICE_OUT
        self.total_cost += cost
        self.model_usage["inputTokens"] += 12
        self.model_usage["outputTokens"] += n_out
        self.model_usage["costUSD"] = round(self.model_usage["costUSD"] + cost, 9)

    def model_text(
        self, state: dict[str, Any], text: str, chunks: int | None, delay: float
    ) -> None:
        words = [w if j == 0 else " " + w for j, w in enumerate(text.split(" "))] if text else []
        if chunks and 0 < chunks < len(words):
            per = -(-len(words) // chunks)
            pieces = ["".join(words[k : k + per]) for k in range(0, len(words), per)]
        else:
            pieces = words
        self.emit(self.status_msg())
        msg_id, req_id = self.next_id("msg"), self.next_id("req")
        state.update(kind="text", partial="", msg_id=msg_id, request_id=req_id)
        self._charge(state, max(1, len(pieces)))
        self._start_message(msg_id)
        self.stream(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        for j, piece in enumerate(pieces):
            if j and delay:
                self.pause(delay)
            self.stream(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": piece},
                }
            )
            state["partial"] += piece
        self.assistant(msg_id, [{"type": "text", "text": text}], req_id)
        state["kind"] = None
        self._end_message("end_turn", max(1, len(pieces)))
        state["text"] = text
        self.history.append({"role": "assistant", "text": text})

    def model_tool(self, state: dict[str, Any], step: dict[str, Any]) -> str:
        name = step.get("tool", "Bash")
        tool_input = dict(step.get("input") or {})
        if "bash" in step:
            tool_input = {
                "command": step["bash"],
                "description": step.get("description", "scripted"),
            }
        self.emit(self.status_msg())
        msg_id, req_id, tool_id = self.next_id("msg"), self.next_id("req"), self.next_id("toolu")
        self._charge(state, 1)
        self._start_message(msg_id)
        self.stream(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}},
            }
        )
        self.stream(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(tool_input)},
            }
        )
        self.assistant(
            msg_id, [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}], req_id
        )
        self.history.append({"role": "assistant", "tool": name, "input": tool_input})
        needs_ask = (
            step.get("ask", True)
            and self.permission_mode not in ("bypassPermissions",)
            and not (self.permission_mode == "acceptEdits" and _is_touch(tool_input))
        )
        reply: dict[str, Any] | None = None
        decision = "allow"
        if needs_ask and not self.ask_stdio:
            decision = "blocked"
        elif needs_ask:
            state["pending_tool"] = {
                "tool_name": name,
                "tool_use_id": tool_id,
                "tool_input": tool_input,
            }
            request = {
                "subtype": "can_use_tool",
                "tool_name": name,
                "display_name": name,
                "input": tool_input,
                "description": tool_input.get("description", name),
                "permission_suggestions": [
                    {
                        "type": "addRules",
                        "rules": [{"toolName": name, "ruleContent": tool_input.get("command", "")}],
                        "behavior": "allow",
                        "destination": "localSettings",
                    },
                    {"type": "addDirectories", "directories": [self.cwd], "destination": "session"},
                    {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
                ],
                "blocked_path": os.path.join(self.cwd, _first_arg(tool_input)),
                "tool_use_id": tool_id,
            }
            # the real CLI finishes the stream while the request is outstanding
            rid = self.send_request(request)
            self._finish_tool_stream()
            cancel_after = step.get("cancel_after")
            reply = self.wait_reply(rid, None if cancel_after is None else float(cancel_after))
            body = reply.get("response") or {}
            if body.get("behavior") == "deny" and body.get("interrupt") is True:
                # as the real CLI: the tool is rejected and the turn ends as interrupted
                # (aborted_tools), with the pending tool still recorded in the state
                raise Interrupted
            state["pending_tool"] = None
        else:
            self._finish_tool_stream()
        tool_result: dict[str, Any]
        if decision == "blocked":
            text = f"Claude requested permissions to use {name}, but you haven't granted it yet."
            tool_result = {
                "type": "tool_result",
                "content": text,
                "is_error": True,
                "tool_use_id": tool_id,
            }
            state["denials"].append(
                {"tool_name": name, "tool_use_id": tool_id, "tool_input": tool_input}
            )
            self.user_msg([tool_result], tool_use_result=f"Error: {text}")
            return text
        if reply is not None:
            body = reply.get("response") or {}
            if reply.get("subtype") == "error":
                text = f"Tool permission request failed: Error: {reply.get('error', '')}"
                self.tool_error(tool_id, text)
                return text
            if body.get("behavior") == "deny":
                text = str(body.get("message", ""))
                state["denials"].append(
                    {"tool_name": name, "tool_use_id": tool_id, "tool_input": tool_input}
                )
                self.tool_error(tool_id, text)
                return text
            if body.get("behavior") != "allow" or not isinstance(body.get("updatedInput"), dict):
                text = (
                    "Tool permission request failed: ZodError: a reply must be "
                    '{"behavior":"allow","updatedInput":{...}} or '
                    '{"behavior":"deny","message":...}'
                )
                self.tool_error(tool_id, text)
                return text
            tool_input = body["updatedInput"]
        out = _run_tool(name, tool_input, self.cwd)
        self.user_msg(
            [{"tool_use_id": tool_id, "type": "tool_result", "content": out, "is_error": False}],
            tool_use_result={
                "stdout": "",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": True,
            },
        )
        return out

    def _finish_tool_stream(self) -> None:
        self._end_message("tool_use", 1)

    def _start_message(self, msg_id: str) -> None:
        """Stream ``message_start`` of the assistant message ``msg_id`` (its first
        token at 1 ms)."""
        self.stream(
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.api_model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 12,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1,
                    },
                },
            },
            ttft_ms=1,
        )

    def _end_message(self, stop_reason: str, output_tokens: int) -> None:
        """Stream the end of the message's one content block and of the message."""
        self.stream({"type": "content_block_stop", "index": 0})
        self.stream(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            }
        )
        self.stream({"type": "message_stop"})

    def run_step(self, step: dict[str, Any], state: dict[str, Any], last: bool) -> bool:
        """Run one step; True when the step ended the turn itself."""
        if "text" in step:
            self.model_text(
                state, str(step["text"]), step.get("chunks"), float(step.get("delay", 0.0))
            )
        elif "bash" in step or "tool" in step:
            out = self.model_tool(state, step)
            if last and step.get("followup", True):
                self.model_text(state, "Tool finished. Result: " + out, None, 0.0)
        elif "api_error" in step:
            err = step["api_error"] or {}
            status = int(err.get("status", 400))
            text = f"API Error: {status} {err.get('message', 'stand-in error')}"
            self.emit(self.status_msg())
            self.emit(
                {
                    "type": "assistant",
                    "message": {
                        "id": _uuid(),
                        "container": None,
                        "model": "<synthetic>",
                        "role": "assistant",
                        "stop_details": None,
                        "stop_reason": "stop_sequence",
                        "stop_sequence": "",
                        "type": "message",
                        "usage": {
                            **self.usage(0, 0),
                            "service_tier": None,
                            "inference_geo": None,
                            "iterations": None,
                            "speed": None,
                        },
                        "content": [{"type": "text", "text": text}],
                        "context_management": None,
                    },
                    "parent_tool_use_id": None,
                    "session_id": self.session_id,
                    "uuid": _uuid(),
                    "error": "unknown",
                    "request_id": self.next_id("req"),
                }
            )
            res = self.result_msg(0, 0, 0, text=text)
            res.update(
                is_error=True,
                api_error_status=status,
                stop_reason="stop_sequence",
                num_turns=state["n_req"] + 1,
            )
            for k in ("ttft_ms", "ttft_stream_ms", "time_to_request_ms"):
                res.pop(k, None)
            res.update(state["overrides"])
            self.emit(res)
            self.last_turn_failed = True
            return True
        elif "stderr" in step:
            line = str(step["stderr"]).rstrip("\n") + "\n"
            for _ in range(int(step.get("repeat", 1))):
                sys.stderr.write(line)
            sys.stderr.flush()
        elif "crash" in step:
            c = step["crash"] if isinstance(step["crash"], dict) else {}
            sys.stdout.flush()
            sys.stderr.write(str(c.get("stderr", "fake_claude: simulated crash")) + "\n")
            sys.stderr.flush()
            os._exit(int(c.get("exit_code", 1)))
        elif "close_stdout" in step:
            self.close_stdout()
            c = step["close_stdout"] if isinstance(step["close_stdout"], dict) else {}
            if "exit_after" in c:
                time.sleep(float(c["exit_after"]))
                os._exit(int(c.get("exit_code", 0)))
        elif "exit" in step:
            sys.stdout.flush()
            os._exit(int(step["exit"]))
        elif "sleep" in step:
            self.pause(float(step["sleep"]))
        elif "hang" in step:
            while True:
                self.pause(3600)
        elif "frame" in step:
            self.emit(step["frame"])
        elif "line" in step:
            rid = step.get("await_id")
            if isinstance(rid, str):  # the line is a control request: wait for its reply
                self._replies[rid] = queue.Queue()
            self.emit_line(str(step["line"]))
            if isinstance(rid, str):
                reply = self.wait_reply(rid, cancel_after=float(step.get("cancel_after", 5.0)))
                self.record({"t": time.time(), "reply_to_fake_request": reply})
        elif "switch_session" in step:
            self.next_session_id = str(step["switch_session"])
        elif "stray" in step:
            self.emit_stray(str(step["stray"]))
        elif "control_request" in step:
            request = dict(step["control_request"])
            if step.get("await"):
                reply = self.ask(request)
                self.record({"t": time.time(), "reply_to_fake_request": reply})
            else:
                self.emit({"type": "control_request", "request_id": _uuid(), "request": request})
        elif "result" in step:
            state["overrides"].update(step["result"])
        else:
            print(f"fake_claude: unknown step {step!r}", file=sys.stderr, flush=True)
        return False

    def emit_stray(self, kind: str) -> None:
        other = _uuid()
        if kind == "stream_event":
            self.emit(
                {
                    "type": "stream_event",
                    "event": {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": "stray"},
                    },
                    "session_id": other,
                    "parent_tool_use_id": None,
                    "uuid": _uuid(),
                }
            )
        elif kind == "result":
            res = self.result_msg(1, 12, 1, text="stray result from another turn")
            res["session_id"] = other
            self.emit(res)
        elif kind == "control_response":
            self.emit(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": "stray-" + other},
                }
            )
        else:
            self.emit(
                {
                    "type": "assistant",
                    "message": {
                        "id": "msg_stale_0",
                        "type": "message",
                        "role": "assistant",
                        "model": self.api_model,
                        "content": [{"type": "text", "text": "stray"}],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                        "context_management": None,
                    },
                    "parent_tool_use_id": None,
                    "session_id": other,
                    "uuid": _uuid(),
                    "request_id": "req_stale_0",
                }
            )

    def finish_ok(self, state: dict[str, Any], t0: float) -> None:
        res = self.result_msg(
            state["n_req"],
            state["n_in"],
            state["n_out"],
            text=state["text"],
            duration_ms=int((time.monotonic() - t0) * 1000),
            denials=state["denials"],
        )
        res.update(state["overrides"])
        self.last_turn_failed = bool(res.get("is_error"))
        self.emit(res)

    def finish_interrupted(self, state: dict[str, Any], t0: float) -> None:
        rid = self.interrupt_request_id
        self.interrupt_request_id = None
        if rid is not None:
            self.emit(
                {"type": "control_response", "response": {"subtype": "success", "request_id": rid}}
            )
        pending = state.get("pending_tool")
        terminal = "aborted_streaming"
        extra: dict[str, Any] = {}
        if pending is not None:
            terminal = "aborted_tools"
            state["denials"].append(pending)
            self.user_msg(
                [
                    {
                        "type": "tool_result",
                        "content": REJECTED,
                        "is_error": True,
                        "tool_use_id": pending["tool_use_id"],
                    }
                ],
                tool_use_result="User rejected tool use",
            )
            self.user_msg([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
            extra = {
                "stop_reason": "tool_use",
                "errors": [
                    "[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"
                ],
            }
        else:
            if state.get("kind") == "text":
                self.assistant(
                    state["msg_id"],
                    [{"type": "text", "text": state["partial"]}],
                    state["request_id"],
                )
                self.history.append({"role": "assistant", "text": state["partial"]})
            self.user_msg([{"type": "text", "text": "[Request interrupted by user]"}])
            self.history.append({"role": "user", "text": "[Request interrupted by user]"})
        res = self.result_msg(
            state["n_req"],
            0,
            0,
            error="error_during_execution",
            duration_ms=int((time.monotonic() - t0) * 1000),
            denials=state["denials"],
        )
        res["terminal_reason"] = terminal
        res.update(extra)
        res.update(state["overrides"])
        self.last_turn_failed = True
        self.emit(res)

    # ------------------------------------------------------------------ main

    def main(self) -> int:
        if "--version" in self.flags or "-v" in self.flags:
            print(f"{VERSION} (Claude Code)", flush=True)
            return 0
        args = list(self.argv)
        if "--fake-script" in args:  # a test wrapper puts it first
            i = args.index("--fake-script")
            del args[i : i + 2]
        if args[:2] == ["auth", "status"]:
            return self.auth_status()
        if self.opts.get("--output-format") == "stream-json" and "--verbose" not in self.flags:
            print(
                "Error: When using --print, --output-format=stream-json requires --verbose",
                file=sys.stderr,
                flush=True,
            )
            return 1
        self.record(
            {
                "t": time.time(),
                "pid": os.getpid(),
                "argv": sys.argv,
                "cwd": self.cwd,
                "env": sorted(os.environ),
            }
        )
        if self.cfg.get("startup_delay"):
            time.sleep(float(self.cfg["startup_delay"]))
        for step in self.cfg.get("startup") or []:
            self.run_step(step, new_state(), False)
        if not self.load_resume():
            return 1
        if self.opts.get("--input-format") != "stream-json":
            return self.main_print()
        threading.Thread(target=self.reader, daemon=True, name="stdin").start()
        while True:
            msg = self.inbox.get()
            if msg is None:
                break
            self.run_turn(msg)
        sys.stdout.flush()
        return 1 if self.last_turn_failed else 0

    def auth_status(self) -> int:
        """``claude auth status [--json]``, as 2.1.197 answers it for API-key set-ups."""
        status: dict[str, Any] = {
            "loggedIn": False,
            "authMethod": "none",
            "apiProvider": "firstParty",
        }
        if os.environ.get("ANTHROPIC_API_KEY"):
            status.update(loggedIn=True, authMethod="api_key", apiKeySource="ANTHROPIC_API_KEY")
        print(json.dumps(status, indent=2), flush=True)
        return 0 if status["loggedIn"] else 1

    def main_print(self) -> int:
        """``-p PROMPT`` without stream-json input: one turn, then exit."""
        prompt = self.opts.get("prompt")
        if prompt is None:
            prompt = sys.stdin.read()
        fmt = self.opts.get("--output-format") or "text"
        captured: list[dict[str, Any]] = []
        real_emit = self.emit
        if fmt != "stream-json":
            self.emit = captured.append  # type: ignore[method-assign,assignment]
        self.run_turn({"message": {"role": "user", "content": prompt}})
        self.emit = real_emit  # type: ignore[method-assign]
        if fmt == "stream-json":
            return 1 if self.last_turn_failed else 0
        result: dict[str, Any] = next(
            (m for m in reversed(captured) if m.get("type") == "result"), {}
        )
        if fmt == "json":
            self.emit(result)
        else:
            sys.stdout.write(str(result.get("result") or "") + "\n")
        return 1 if self.last_turn_failed else 0


def new_state() -> dict[str, Any]:
    return {
        "n_req": 0,
        "n_in": 0,
        "n_out": 0,
        "text": "",
        "denials": [],
        "overrides": {},
        "kind": None,
        "partial": "",
        "msg_id": None,
        "request_id": None,
        "pending_tool": None,
    }


def _first_arg(tool_input: dict[str, Any]) -> str:
    try:
        parts = shlex.split(str(tool_input.get("command", "")))
    except ValueError:
        return ""
    return parts[1] if len(parts) > 1 else ""


def _is_touch(tool_input: dict[str, Any]) -> bool:
    try:
        parts = shlex.split(str(tool_input.get("command", "")))
    except ValueError:
        return False
    return bool(parts) and parts[0] == "touch"


def _run_tool(name: str, tool_input: dict[str, Any], cwd: str) -> str:
    """Pretend to run a tool. Only ``touch FILE...`` has an effect (it creates the files)."""
    if name == "Bash" and _is_touch(tool_input):
        for f in shlex.split(str(tool_input["command"]))[1:]:
            path = os.path.join(cwd, f)
            with open(path, "a", encoding="utf-8"):
                pass
    return "(Bash completed with no output)" if name == "Bash" else "(done)"


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    return FakeClaude(sys.argv[1:] if argv is None else argv).main()


if __name__ == "__main__":
    sys.exit(main())
