#!/usr/bin/env python3
"""A stand-in for `codex app-server` (0.171.0): the same newline-delimited JSON-RPC
over stdio, without a "jsonrpc" member, with the message shapes and orderings
captured from the real binary (tests/data/codex/*.jsonl; the test
tests/test_fake_codex_matches_transcript.py keeps the two in step).

Run it the way the real CLI is run, with the fake in front::

    [sys.executable, "tests/standins/fake_codex.py", "app-server", "-c", "k=v", ...]

Arguments other than ``--script PATH`` are accepted and ignored (so the adapter's
argv works unchanged); ``--version`` prints a version line.

What it does (the real server's behaviour, see docs/providers/codex.md):

- ``initialize`` -> ``{userAgent, codexHome, platformFamily, platformOs}``, then
  (without waiting for the ``initialized`` notification) ``configWarning`` and
  ``remoteControl/status/changed``. Requests before ``initialize`` get
  ``-32600 "Not initialized"``; a second ``initialize`` ``"Already initialized"``.
- ``thread/start`` -> ``{thread, model, ..., approvalPolicy, sandbox, ...}`` then
  ``thread/started``. Threads are remembered in ``$CODEX_HOME/fake_codex_threads.json``
  (or ``state_dir`` in the script) so a fresh process can ``thread/resume`` them.
- ``turn/start`` -> ``{turn}`` (status ``inProgress``), then ``thread/status/changed``,
  ``turn/started``, the user message as ``item/started``/``item/completed``, the
  reply, ``thread/tokenUsage/updated``, ``account/rateLimits/updated``,
  ``thread/status/changed`` idle and ``turn/completed``. A ``turn/start`` while a
  turn is running returns the running turn and feeds the input into it.
- The reply comes from the script's ``replies`` (one list of steps per turn) or,
  when none is left, from the prompt (the same rules as
  tests/standins/responses_server.py): ``TOOL:<cmd>`` runs an ``exec_command``
  step (approval asked when the thread's approvalPolicy is ``untrusted``),
  ``FAIL:<message>`` fails the turn (``error`` notification, status ``failed``), a
  prompt containing ``SLOW`` streams ``word0 word1 ...`` slowly, anything else
  gets ``Hi! I am the stand-in model.``.
- Approvals are server->client requests ``item/commandExecution/requestApproval``
  with ids 0, 1, ... Reply ``{decision: accept|acceptForSession|decline|cancel|
  {acceptWithExecpolicyAmendment: ...}}``; the fake then sends
  ``serverRequest/resolved {threadId, requestId}``. ``cancel`` ends the turn
  ``interrupted``; an error reply or an unknown decision fails the command
  (item status ``failed``) and the turn goes on, as the real server does.
- ``turn/interrupt {threadId, turnId}`` -> ``{}``, ``turn/completed`` status
  ``interrupted`` (a pending approval is resolved after that with
  ``serverRequest/resolved``); no active turn -> ``-32600 "no active turn to
  interrupt"``. ``turn/steer {threadId, expectedTurnId, input}`` -> ``{turnId}``.
- Unknown methods: ``-32600 "Invalid request: unknown variant ..."``. A line that
  is not JSON is logged on stderr and skipped. stdin EOF: exit 0.

The script: a JSON object, from ``--script PATH`` or the env var
``FAKE_CODEX_SCRIPT`` (JSON text, or ``@PATH``). Every key is optional::

    {
      "replies": [[STEP, ...], ...],  # one entry per turn/start, then prompt rules
      "delta_delay": 0.0,             # seconds between deltas of a text step
      "slow_delay": 0.5,              # the same for SLOW prompts
      "latency": 0.02,                # pause before each step (the model's think time)
      "steer_latency": 0.2,           # pause before answering input that joined a turn
      "model_warning": true,          # the "Model metadata ... not found" warning
      "startup_stderr": true,         # the bubblewrap ERROR line on stderr
      "log": "PATH",                  # append every message received, one JSON a line
      "state_dir": "PATH",            # where threads are kept (default $CODEX_HOME)
      "rate_limits": {SNAPSHOT},      # account/rateLimits/read's answer (a RateLimitSnapshot);
                                      # without it the read is refused as without a login
      "faults": {FAULT: ...}
    }

STEP is one of::

    {"text": "Hello there", "deltas": 2, "delay": 0.0}
    {"command": "touch x.txt", "approval": true|false|null, "exit_code": 0, "output": "",
     "decisions": [...],    # availableDecisions of the approval request (default as real)
     "self_resolve": 0.2}   # the server resolves the approval itself after 0.2 s
    {"error": "message", "codexErrorInfo": "other"}     # the turn fails
    {"server_request": {"method": "...", "params": {...}}}  # waits for the reply
        # ("$threadId" / "$turnId" in params are replaced as for "notify")
    {"reasoning": "summary text", "deltas": 2}          # a reasoning item (summary deltas)
    {"plan": [{"step": "Read", "status": "completed"}, ...]}  # turn/plan/updated
    {"file_change": [{"path": "a.txt", "kind": "add", "diff": "hi\n"}],
     "approval": true|false}  # a fileChange item; with approval, the server asks
        # item/fileChange/requestApproval and (accepted) writes each "add" file's diff
        # as its content under the thread's cwd
    {"notify": {"method": "...", "params": {...}}}       # any notification; the strings
        # "$threadId" / "$turnId" in params are replaced by the current ids
    {"stderr": "a line", "repeat": 1}
    {"sleep": 1.5}

FAULT keys (each optional)::

    "exit_at_start": {"code": 1, "stderr": "..."}   # die before reading anything
    "startup_delay": 2.0                             # sleep before reading stdin
    "crash": {"after": METHOD, "count": 1, "code": 101, "stderr": "panicked ..."}
        # exit(code) right after sending the count-th message with that method;
        # with "once": PATH only the first process that gets there does (crash, eof)
    "eof": {"after": METHOD, "count": 1, "exit": true}
        # close stdout after that message; exit 0 (or with "exit": false keep
        # running with stdout closed until stdin closes)
    "hang": {"on": METHOD}            # never answer requests with that method
    "ignore_interrupt": true          # answer turn/interrupt {} but finish the turn
    "drop_interrupt": true            # never answer turn/interrupt at all
    "stray": true                     # each turn starts with frames for another
                                      # thread and another turn (deltas, items,
                                      # turn/completed)
    "unknown_server_request": {"method": "made/up", "params": {}}
                                      # sent at each turn start; the turn waits
                                      # for the client's reply
    "stderr_flood": {"lines": 5000, "bytes": 200, "when": "start"|"turn"}
    "garbage_stdout": true            # a non-JSON line on stdout at each turn start
    "thread_result": {FIELD: VALUE}   # fields of every thread/start and thread/resume
                                      # result replaced (settings Codex reports)
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

VERSION = "0.171.0"
STUB_MODEL = "stub-model"
BWRAP_WARNING = (
    "Codex could not find bubblewrap on PATH. Install bubblewrap with your OS package "
    "manager. See the sandbox prerequisites: "
    "https://developers.openai.com/codex/concepts/sandboxing#prerequisites. "
    "Codex will use the bundled bubblewrap in the meantime."
)
MODEL_WARNING = (
    "Model metadata for `stub-model` not found. Defaulting to fallback metadata; "
    "this can degrade performance and cause issues."
)
HELLO = "Hi! I am the stand-in model."
KNOWN_METHODS = (
    "initialize",
    "thread/start",
    "thread/resume",
    "turn/start",
    "turn/steer",
    "turn/interrupt",
    "account/read",
    "account/rateLimits/read",
)
APPROVING = ("accept", "acceptForSession")


def now_ms() -> int:
    return int(time.time() * 1000)


def new_id() -> str:
    return str(uuid.uuid4())


def log_line(level: str, target: str, message: str) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{now_ms() % 1000:03d}000Z"
    return f"{stamp} {level} {target}: {message}"


def split_words(text: str, deltas: int | None = None) -> list[str]:
    words = [w if i == 0 else " " + w for i, w in enumerate(text.split(" "))]
    if deltas is None or deltas >= len(words):
        return words
    per = -(-len(words) // max(1, deltas))
    return ["".join(words[i : i + per]) for i in range(0, len(words), per)]


def substitute(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [substitute(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, ids) for k, v in value.items()}
    return value


def input_text(items: Any) -> str:
    parts = []
    for item in items or []:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
    return "".join(parts)


def load_script(argv: list[str]) -> dict[str, Any]:
    text = None
    if "--script" in argv:
        text = Path(argv[argv.index("--script") + 1]).read_text()
    else:
        env = os.environ.get("FAKE_CODEX_SCRIPT")
        if env:
            text = Path(env[1:]).read_text() if env.startswith("@") else env
    script = json.loads(text) if text else {}
    if not isinstance(script, dict):
        raise SystemExit("fake_codex: the script must be a JSON object")
    return script


class Interrupted(Exception):
    """The turn was interrupted (turn/interrupt or an approval `cancel`)."""


class Steered(Exception):
    """New input arrived for the running turn (turn/steer or turn/start)."""


class Failed(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message"))
        self.error = error


class Turn:
    def __init__(self, thread: ThreadState, turn_id: str) -> None:
        self.thread = thread
        self.id = turn_id
        self.started_at = int(time.time())
        self.t0 = time.monotonic()
        self.wake = threading.Event()
        self.interrupt_ids: list[Any] = []
        self.steers: list[str] = []
        self.pending_request: Any = None
        self.items: list[dict[str, Any]] = []

    def as_json(self, status: str = "inProgress", started: bool = True) -> dict[str, Any]:
        done = status != "inProgress"
        return {
            "id": self.id,
            "rootTurnId": self.id,
            "items": [i for i in self.items if i["type"] == "agentMessage"] if done else [],
            "itemsView": "summary" if done and status == "completed" else "notLoaded",
            "status": status,
            "error": None,
            "startedAt": self.started_at if started else None,
            "completedAt": int(time.time()) if done else None,
            "durationMs": int((time.monotonic() - self.t0) * 1000) if done else None,
        }


class ThreadState:
    def __init__(self, thread_id: str, cwd: str, approval: str, sandbox: str) -> None:
        self.id = thread_id
        self.cwd = cwd
        self.approval = approval
        self.sandbox = sandbox
        self.preview = ""
        self.turns: list[dict[str, Any]] = []
        self.created = int(time.time())
        self.active: Turn | None = None
        self.session_approved: set[str] = set()
        self.usage = {"input": 0, "output": 0}


class FakeCodex:
    def __init__(self, script: dict[str, Any]) -> None:
        self.script = script
        self.faults: dict[str, Any] = dict(script.get("faults") or {})
        self.replies: list[list[dict[str, Any]]] = list(script.get("replies") or [])
        self.codex_home = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
        self.state_dir = Path(script.get("state_dir") or self.codex_home)
        self.out_lock = threading.Lock()
        self.state_lock = threading.RLock()
        self.server_ids = itertools.count(0)
        self.item_ids = itertools.count(2)
        self.pending: dict[Any, dict[str, Any]] = {}
        self.threads: dict[str, ThreadState] = {}
        self.initialized = False
        self.client_name = "unknown"
        self.sent_counts: dict[str, int] = {}
        self.stdout_closed = False
        self.log_path = script.get("log") or os.environ.get("FAKE_CODEX_LOG")

    # -- output ------------------------------------------------------------

    def send(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        with self.out_lock:
            if self.stdout_closed:
                return
            try:
                sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):
                self.stdout_closed = True
                return
            if method:
                self.sent_counts[method] = self.sent_counts.get(method, 0) + 1
                self._fault_after_send(method, self.sent_counts[method])

    @staticmethod
    def _first_time(fault: dict[str, Any]) -> bool:
        """A fault with "once": PATH fires only while PATH does not exist (then creates
        it), so a restarted process behaves."""
        marker = fault.get("once")
        if not marker:
            return True
        try:
            with open(marker, "x"):
                return True
        except OSError:
            return False

    def _fault_after_send(self, method: str, count: int) -> None:
        crash = self.faults.get("crash")
        if (
            crash
            and crash.get("after") == method
            and count == int(crash.get("count", 1))
            and self._first_time(crash)
        ):
            self.stderr(crash.get("stderr") or "thread 'main' panicked: fake crash")
            os._exit(int(crash.get("code", 101)))
        eof = self.faults.get("eof")
        if (
            eof
            and eof.get("after") == method
            and count == int(eof.get("count", 1))
            and self._first_time(eof)
        ):
            self.stdout_closed = True
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
                os.close(sys.stdout.fileno())  # sys.stdout.close() keeps fd 1 open
            if eof.get("exit", True):
                os._exit(0)

    def notify(self, method: str, params: dict[str, Any], stamp: bool = True) -> None:
        msg: dict[str, Any] = {"method": method, "params": params}
        if stamp:
            msg["emittedAtMs"] = now_ms()
        self.send(msg)

    def respond(self, req_id: Any, result: Any) -> None:
        self.send({"id": req_id, "result": result})

    def error(self, req_id: Any, message: str, code: int = -32600) -> None:
        self.send({"error": {"code": code, "message": message}, "id": req_id})

    def stderr(self, line: str) -> None:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (BrokenPipeError, ValueError):
            pass

    def flood_stderr(self) -> None:
        flood = self.faults.get("stderr_flood") or {}
        line = "x" * max(1, int(flood.get("bytes", 200)) - 1)
        for n in range(int(flood.get("lines", 5000))):
            self.stderr(f"{n} {line}")

    # -- state -------------------------------------------------------------

    def _state_file(self) -> Path:
        return self.state_dir / "fake_codex_threads.json"

    def _load_threads(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self._state_file().read_text())
            return data
        except (OSError, ValueError):
            return {}

    def _save_thread(self, th: ThreadState) -> None:
        with self.state_lock:
            data = self._load_threads()
            data[th.id] = {
                "cwd": th.cwd,
                "approval": th.approval,
                "sandbox": th.sandbox,
                "preview": th.preview,
                "turns": th.turns,
                "created": th.created,
                "usage": th.usage,
            }
            try:
                self.state_dir.mkdir(parents=True, exist_ok=True)
                tmp = self._state_file().with_suffix(".tmp")
                tmp.write_text(json.dumps(data))
                tmp.replace(self._state_file())
            except OSError as e:
                self.stderr(log_line("WARN", "fake_codex", f"cannot save threads: {e}"))

    def thread_json(
        self, th: ThreadState, turns: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        return {
            "id": th.id,
            "environments": [
                {"environmentId": "local", "cwd": th.cwd, "runtimeWorkspaceRoots": [th.cwd]}
            ],
            "extra": None,
            "sessionId": th.id,
            "forkedFromId": None,
            "attachedToThreadId": None,
            "parentThreadId": None,
            "preview": th.preview,
            "ephemeral": False,
            "section": None,
            "sectionEnteredAt": None,
            "projectId": None,
            "historyMode": "paginated",
            "modelProvider": "stub",
            "model": STUB_MODEL,
            "reasoningEffort": None,
            "createdAt": th.created,
            "updatedAt": int(time.time()),
            "recencyAt": int(time.time()),
            "status": {"type": "active" if th.active else "idle"},
            "path": f"{self.codex_home}/sessions/fake/rollout-{th.id}.jsonl",
            "cwd": th.cwd,
            "cliVersion": VERSION,
            "originator": self.client_name,
            "source": "vscode",
            "canAcceptDirectInput": True,
            "threadSource": None,
            "agentNickname": None,
            "agentRole": None,
            "gitInfo": None,
            "name": None,
            "daybreakEnabled": None,
            "turns": turns if turns is not None else [],
        }

    def sandbox_json(self, mode: str) -> dict[str, Any]:
        if mode == "workspace-write":
            return {
                "type": "workspaceWrite",
                "writableRoots": [],
                "networkAccess": False,
                "excludeTmpdirEnvVar": False,
                "excludeSlashTmp": False,
            }
        if mode == "danger-full-access":
            return {"type": "dangerFullAccess"}
        return {"type": "readOnly", "networkAccess": False}

    def thread_result(self, th: ThreadState, turns: list[dict[str, Any]] | None) -> dict[str, Any]:
        result = {
            "thread": self.thread_json(th, turns),
            "model": STUB_MODEL,
            "modelProvider": "stub",
            "serviceTier": None,
            "disabledPluginIds": [],
            "cwd": th.cwd,
            "runtimeWorkspaceRoots": [th.cwd],
            "instructionSources": [],
            "approvalPolicy": th.approval,
            "approvalsReviewer": "user",
            "sandbox": self.sandbox_json(th.sandbox),
            "activePermissionProfile": None
            if th.sandbox == "workspace-write"
            else {"id": ":read-only", "extends": None},
            "reasoningEffort": None,
            "multiAgentMode": "explicitRequestOnly",
        }
        result.update(self.faults.get("thread_result") or {})
        return result

    # -- input -------------------------------------------------------------

    def run(self) -> int:
        fault = self.faults.get("exit_at_start")
        if fault:
            self.stderr(fault.get("stderr") or "Error: fake startup failure")
            return int(fault.get("code", 1))
        if self.script.get("startup_stderr", True):
            self.stderr(log_line("ERROR", "codex_app_server", BWRAP_WARNING))
        if (self.faults.get("stderr_flood") or {}).get("when", "start") == "start" and (
            "stderr_flood" in self.faults
        ):
            self.flood_stderr()
        time.sleep(float(self.faults.get("startup_delay", 0)))
        for raw in sys.stdin.buffer:
            line = raw.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
                if not isinstance(msg, dict):
                    raise ValueError("not an object")
            except ValueError as e:
                self.stderr(
                    log_line(
                        "ERROR",
                        "codex_app_server_transport::transport",
                        f"Failed to deserialize JSONRPCMessage: {e}",
                    )
                )
                continue
            self._log(msg)
            try:
                self.dispatch(msg)
            except Exception as e:  # keep serving, like the real server
                self.stderr(log_line("ERROR", "fake_codex", f"internal error: {e!r}"))
                if "id" in msg and "method" in msg:
                    self.error(msg["id"], f"internal error: {e}", -32603)
        # stdin closed: stop. Turns still running are abandoned.
        return 0

    def _log(self, msg: dict[str, Any]) -> None:
        if not self.log_path:
            return
        with self.out_lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(msg) + "\n")

    def dispatch(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method is None:
            self.on_client_response(msg)
            return
        if "id" not in msg:
            return  # `initialized` and any other client notification: nothing to do
        req_id = msg["id"]
        params = msg.get("params") or {}
        hang = self.faults.get("hang") or {}
        if hang.get("on") == method:
            return
        if method == "initialize":
            if self.initialized:
                self.error(req_id, "Already initialized")
                return
            info = params.get("clientInfo") or {}
            self.client_name = str(info.get("name", "unknown"))
            self.initialized = True
            self.respond(
                req_id,
                {
                    "userAgent": f"{self.client_name}/{VERSION} (fake; x86_64) unknown "
                    f"({self.client_name}; {info.get('version', '')})",
                    "codexHome": self.codex_home,
                    "platformFamily": "unix",
                    "platformOs": "linux",
                },
            )
            # The real server sends these right after the initialize result,
            # without waiting for `initialized`.
            self.notify("configWarning", {"summary": BWRAP_WARNING, "details": None})
            self.notify(
                "remoteControl/status/changed",
                {
                    "status": "disabled",
                    "serverName": "fake",
                    "installationId": new_id(),
                    "environmentId": None,
                },
            )
            return
        if not self.initialized:
            self.error(req_id, "Not initialized")
            return
        handler = {
            "thread/start": self.on_thread_start,
            "thread/resume": self.on_thread_resume,
            "turn/start": self.on_turn_start,
            "turn/steer": self.on_turn_steer,
            "turn/interrupt": self.on_turn_interrupt,
            "account/read": self.on_account_read,
            "account/rateLimits/read": self.on_rate_limits_read,
        }.get(method)
        if handler is None:
            self.error(
                req_id,
                f"Invalid request: unknown variant `{method}`, expected one of "
                + ", ".join(f"`{m}`" for m in KNOWN_METHODS),
            )
            return
        handler(req_id, params)

    def on_client_response(self, msg: dict[str, Any]) -> None:
        with self.state_lock:
            slot = self.pending.get(msg.get("id"))
        if slot is None:
            return  # the real server ignores replies it is not waiting for
        slot["reply"] = msg
        slot["event"].set()
        turn = slot.get("turn")
        if turn is not None:
            turn.wake.set()

    # -- requests ----------------------------------------------------------

    def on_rate_limits_read(self, req_id: Any, params: dict[str, Any]) -> None:
        """The script's ``rate_limits`` snapshot; without one, the refusal the real server
        gives without a ChatGPT login (API key, another model provider)."""
        snapshot = self.script.get("rate_limits")
        if snapshot is None:
            self.error(
                req_id,
                "codex account authentication required to read rate limits",
                code=-32600,
            )
            return
        self.respond(req_id, {"rateLimits": snapshot, "rateLimitsByLimitId": None})

    def on_account_read(self, req_id: Any, params: dict[str, Any]) -> None:
        self.respond(
            req_id,
            {
                "account": None,
                "userId": None,
                "requiresOpenaiAuth": False,
                "workspaceRouting": None,
            },
        )

    def on_thread_start(self, req_id: Any, params: dict[str, Any]) -> None:
        th = ThreadState(
            new_id(),
            str(params.get("cwd") or os.getcwd()),
            str(params.get("approvalPolicy") or "on-request"),
            str(params.get("sandbox") or "read-only"),
        )
        with self.state_lock:
            self.threads[th.id] = th
        self._save_thread(th)
        self.respond(req_id, self.thread_result(th, []))
        self.notify("thread/started", {"thread": self.thread_json(th, [])}, stamp=True)

    def on_thread_resume(self, req_id: Any, params: dict[str, Any]) -> None:
        thread_id = str(params.get("threadId", ""))
        try:
            uuid.UUID(thread_id)
        except ValueError:
            self.error(req_id, f"invalid session id: {thread_id!r} is not a UUID")
            return
        with self.state_lock:
            th = self.threads.get(thread_id)
            if th is None:
                saved = self._load_threads().get(thread_id)
                if saved is None:
                    self.error(req_id, f"no rollout found for thread id {thread_id}")
                    return
                th = ThreadState(thread_id, saved["cwd"], saved["approval"], "read-only")
                th.preview = saved.get("preview", "")
                th.turns = list(saved.get("turns", []))
                th.created = saved.get("created", th.created)
                th.usage = saved.get("usage", th.usage)
                self.threads[thread_id] = th
        # Like the real server: settings not passed again fall back to defaults
        # (the sandbox to read-only), so callers must resend them.
        if params.get("cwd"):
            th.cwd = str(params["cwd"])
        if params.get("approvalPolicy"):
            th.approval = str(params["approvalPolicy"])
        th.sandbox = str(params.get("sandbox") or "read-only")
        self.notify("thread/status/changed", {"threadId": th.id, "status": {"type": "idle"}})
        result = self.thread_result(th, [] if params.get("excludeTurns") else th.turns)
        result.update(
            {
                "collaborationMode": {
                    "mode": "default",
                    "settings": {
                        "model": STUB_MODEL,
                        "reasoning_effort": None,
                        "developer_instructions": None,
                    },
                },
                "initialTurnsPage": None,
                "turnsBackwardsCursor": None,
                "itemsBackwardsCursor": None,
            }
        )
        self.respond(req_id, result)
        if th.usage["input"] and th.turns:  # the usage so far, under the last turn's id
            self.notify(
                "thread/tokenUsage/updated",
                {
                    "threadId": th.id,
                    "turnId": th.turns[-1]["id"],
                    "tokenUsage": self.usage_json(th, 0, 0),
                },
            )

    def on_turn_start(self, req_id: Any, params: dict[str, Any]) -> None:
        thread_id = params.get("threadId")
        if not isinstance(thread_id, str):
            self.error(req_id, f"Invalid request: invalid type: {thread_id!r}, expected a string")
            return
        with self.state_lock:
            th = self.threads.get(thread_id)
            if th is None:
                self.error(req_id, f"thread not found: {thread_id}")
                return
            text = input_text(params.get("input"))
            if params.get("approvalPolicy"):
                th.approval = str(params["approvalPolicy"])
            active = th.active
            if active is not None:
                # The real server folds the input into the running turn.
                self.respond(req_id, {"turn": active.as_json(started=False)})
                active.steers.append(text)
                active.wake.set()
                return
            turn = Turn(th, new_id())
            th.active = turn
            if not th.preview:
                th.preview = text
        if self.script.get("model_warning", True):
            self.notify("warning", {"threadId": th.id, "message": MODEL_WARNING})
        self.respond(req_id, {"turn": turn.as_json(started=False)})
        threading.Thread(target=self.run_turn, args=(turn, text), daemon=True).start()

    def on_turn_steer(self, req_id: Any, params: dict[str, Any]) -> None:
        with self.state_lock:
            th = self.threads.get(str(params.get("threadId")))
            if th is None:
                self.error(req_id, f"thread not found: {params.get('threadId')}")
                return
            turn = th.active
            if turn is None:
                self.error(req_id, "no active turn to steer")
                return
            expected = params.get("expectedTurnId")
            if expected != turn.id:
                self.error(req_id, f"expected active turn id `{expected}` but found `{turn.id}`")
                return
            self.respond(req_id, {"turnId": turn.id})
            turn.steers.append(input_text(params.get("input")))
            turn.wake.set()

    def on_turn_interrupt(self, req_id: Any, params: dict[str, Any]) -> None:
        if self.faults.get("drop_interrupt"):
            return
        with self.state_lock:
            th = self.threads.get(str(params.get("threadId")))
            turn = th.active if th else None
            if turn is None or turn.id != params.get("turnId"):
                self.error(req_id, "no active turn to interrupt")
                return
            if self.faults.get("ignore_interrupt"):
                self.respond(req_id, {})
                return
            turn.interrupt_ids.append(req_id)
            turn.wake.set()

    # -- the turn ----------------------------------------------------------

    def usage_json(self, th: ThreadState, inp: int, out: int) -> dict[str, Any]:
        th.usage["input"] += inp
        th.usage["output"] += out

        def block(i: int, o: int) -> dict[str, int]:
            return {
                "totalTokens": i + o,
                "inputTokens": i,
                "cachedInputTokens": 0,
                "cacheWriteInputTokens": 0,
                "outputTokens": o,
                "reasoningOutputTokens": 0,
            }

        return {
            "total": block(th.usage["input"], th.usage["output"]),
            "last": block(12, 7),
            "modelContextWindow": 258400,
        }

    def emit_usage(self, turn: Turn) -> None:
        th = turn.thread
        self.notify(
            "thread/tokenUsage/updated",
            {"threadId": th.id, "turnId": turn.id, "tokenUsage": self.usage_json(th, 12, 7)},
        )
        self.notify(
            "account/rateLimits/updated",
            {
                "rateLimits": {
                    "limitId": "codex",
                    "limitName": None,
                    "normalModelSlug": None,
                    "primary": None,
                    "secondary": None,
                    "credits": None,
                    "individualLimit": None,
                    "spendControlReached": None,
                    "planType": None,
                    "rateLimitReachedType": None,
                }
            },
        )

    def status(self, turn: Turn, status: dict[str, Any]) -> None:
        self.notify("thread/status/changed", {"threadId": turn.thread.id, "status": status})

    def item_started(self, turn: Turn, item: dict[str, Any]) -> None:
        self.notify(
            "item/started",
            {
                "item": item,
                "threadId": turn.thread.id,
                "turnId": turn.id,
                "startedAtMs": item["startedAtMs"],
            },
        )

    def item_completed(self, turn: Turn, item: dict[str, Any]) -> None:
        turn.items.append(item)
        self.notify(
            "item/completed",
            {
                "item": item,
                "threadId": turn.thread.id,
                "turnId": turn.id,
                "contentTokenCount": None,
                "completedAtMs": item["completedAtMs"],
            },
        )

    def user_message(self, turn: Turn, text: str) -> None:
        item = {
            "type": "userMessage",
            "id": new_id(),
            "clientId": None,
            "content": [{"type": "text", "text": text, "text_elements": []}],
            "startedAtMs": now_ms(),
            "completedAtMs": None,
        }
        self.item_started(turn, item)
        self.item_completed(turn, {**item, "completedAtMs": now_ms()})

    def checkpoint(self, turn: Turn, timeout: float = 0.0) -> None:
        """Wait up to `timeout` for something to happen to the turn; raise if
        it was interrupted or steered."""
        if timeout > 0:
            turn.wake.wait(timeout)
            turn.wake.clear()  # the lists below are the truth; the event only wakes
        if turn.interrupt_ids:
            raise Interrupted
        if turn.steers:
            raise Steered

    def run_turn(self, turn: Turn, text: str) -> None:
        th = turn.thread
        self.status(turn, {"type": "active", "activeFlags": []})
        self.notify("turn/started", {"threadId": th.id, "turn": turn.as_json()})
        self.user_message(turn, text)
        status = "completed"
        error: dict[str, Any] | None = None
        try:
            self.turn_faults(turn)
            steps = self.replies.pop(0) if self.replies else self.rules(text)
            while True:
                try:
                    self.run_steps(turn, steps)
                    break
                except Steered:
                    self.emit_usage(turn)
                    with self.state_lock:
                        inputs, turn.steers = turn.steers, []
                    for steer in inputs:
                        self.user_message(turn, steer)
                    # A new model request: long enough for a client's next message
                    # (say a turn/interrupt sent right after) to arrive first.
                    pause = {"sleep": float(self.script.get("steer_latency", 0.2))}
                    steps = [pause, *self.rules(inputs[-1])]
        except Interrupted:
            status = "interrupted"
        except Failed as f:
            status, error = "failed", f.error
        except Exception as e:  # a bad script step: fail the turn, keep serving
            self.stderr(log_line("ERROR", "fake_codex", f"turn failed: {e!r}"))
            status = "failed"
            error = {
                "message": f"fake_codex: {e!r}",
                "codexErrorInfo": "other",
                "additionalDetails": None,
                "misalignment": None,
            }
        self.finish(turn, status, error)

    def finish(self, turn: Turn, status: str, error: dict[str, Any] | None) -> None:
        th = turn.thread
        with self.state_lock:
            interrupt_ids, turn.interrupt_ids = turn.interrupt_ids, []
            pending = turn.pending_request
        if status == "interrupted" and interrupt_ids:
            self.emit_usage(turn)
            with self.state_lock:
                steers, turn.steers = turn.steers, []
            for steer in steers:  # input that joined the turn is kept, as the real one does
                self.user_message(turn, steer)
        for req_id in interrupt_ids:  # also one that came too late to stop the turn
            self.respond(req_id, {})
        if status != "failed":
            self.status(turn, {"type": "idle"})
        summary = turn.as_json(status)
        summary["error"] = error
        with self.state_lock:
            th.active = None
            th.turns.append(summary)
        self.notify("turn/completed", {"threadId": th.id, "turn": summary})
        if pending is not None:
            with self.state_lock:
                self.pending.pop(pending, None)
            self.notify("serverRequest/resolved", {"threadId": th.id, "requestId": pending})
        self._save_thread(th)

    def rules(self, text: str) -> list[dict[str, Any]]:
        prompt = text.strip()
        if prompt.startswith("TOOL:"):
            return [{"command": prompt[len("TOOL:") :].strip()}]
        if prompt.startswith("FAIL:"):
            return [{"error": prompt[len("FAIL:") :].strip() or "stand-in failure"}]
        if "SLOW" in prompt:
            words = " ".join(f"word{i}" for i in range(40))
            return [{"text": words, "delay": float(self.script.get("slow_delay", 0.5))}]
        return [{"text": HELLO}]

    def turn_faults(self, turn: Turn) -> None:
        if self.faults.get("garbage_stdout"):
            with self.out_lock:
                sys.stdout.write("this is not JSON {\n")
                sys.stdout.flush()
        if (self.faults.get("stderr_flood") or {}).get("when") == "turn":
            self.flood_stderr()
        if self.faults.get("stray"):
            other_thread, other_turn = new_id(), new_id()
            for thread_id, turn_id in ((other_thread, turn.id), (turn.thread.id, other_turn)):
                item = {
                    "type": "agentMessage",
                    "moderation": None,
                    "id": f"msg_stray_{next(self.item_ids)}",
                    "text": "",
                    "phase": None,
                    "memoryCitation": None,
                    "delivery": None,
                    "questions": None,
                    "startedAtMs": now_ms(),
                    "completedAtMs": None,
                }
                self.notify(
                    "item/started",
                    {"item": item, "threadId": thread_id, "turnId": turn_id, "startedAtMs": 0},
                )
                self.notify(
                    "item/agentMessage/delta",
                    {
                        "threadId": thread_id,
                        "turnId": turn_id,
                        "itemId": item["id"],
                        "delta": "stray",
                    },
                )
                self.notify(
                    "turn/completed",
                    {
                        "threadId": thread_id,
                        "turn": {**turn.as_json("completed"), "id": turn_id, "rootTurnId": turn_id},
                    },
                )
        unknown = self.faults.get("unknown_server_request")
        if unknown:
            self.server_request(
                turn, unknown.get("method", "made/up"), unknown.get("params") or {}, cancel=False
            )

    def run_steps(self, turn: Turn, steps: list[dict[str, Any]]) -> None:
        last_output: str | None = None
        latency = float(self.script.get("latency", 0.02))
        for step in steps:
            self.checkpoint(turn, latency)  # the model's think time; interruptible
            if "text" in step:
                self.text_step(turn, step)
            elif "command" in step:
                last_output = self.command_step(turn, step)
                follow = f"Tool finished. Output was: {last_output}"
                if last_output is not None and not any("text" in s for s in steps):
                    self.text_step(turn, {"text": follow})
            elif "error" in step:
                self.status(turn, {"type": "systemError"})
                error = {
                    "message": step["error"],
                    "codexErrorInfo": step.get("codexErrorInfo", "other"),
                    "additionalDetails": None,
                    "misalignment": None,
                }
                self.notify(
                    "error",
                    {
                        "error": error,
                        "willRetry": False,
                        "threadId": turn.thread.id,
                        "turnId": turn.id,
                    },
                )
                raise Failed(error)
            elif "server_request" in step:
                req = step["server_request"]
                ids = {"$threadId": turn.thread.id, "$turnId": turn.id}
                params = substitute(req.get("params") or {}, ids)
                self.server_request(turn, req.get("method", "made/up"), params)
            elif "stderr" in step:
                for _ in range(int(step.get("repeat", 1))):
                    self.stderr(str(step["stderr"]))
            elif "sleep" in step:
                self.checkpoint(turn, float(step["sleep"]))
            elif "reasoning" in step:
                self.reasoning_step(turn, step)
            elif "plan" in step:
                self.notify(
                    "turn/plan/updated",
                    {
                        "threadId": turn.thread.id,
                        "turnId": turn.id,
                        "explanation": step.get("explanation"),
                        "plan": step["plan"],
                    },
                )
            elif "file_change" in step:
                self.file_change_step(turn, step)
            elif "notify" in step:
                note = step["notify"]
                ids = {"$threadId": turn.thread.id, "$turnId": turn.id}
                self.notify(str(note["method"]), substitute(note.get("params") or {}, ids))
        self.checkpoint(turn)

    def text_step(self, turn: Turn, step: dict[str, Any]) -> None:
        delay = float(step.get("delay", self.script.get("delta_delay", 0.0)))
        item_id = f"msg_{next(self.item_ids)}"
        item = {
            "type": "agentMessage",
            "moderation": None,
            "id": item_id,
            "text": "",
            "phase": None,
            "memoryCitation": None,
            "delivery": None,
            "questions": None,
            "startedAtMs": now_ms(),
            "completedAtMs": None,
        }
        self.item_started(turn, item)
        chunks = split_words(str(step["text"]), step.get("deltas"))
        for n, chunk in enumerate(chunks):
            if n:
                self.checkpoint(turn, delay)
            else:
                self.checkpoint(turn)
            self.notify(
                "item/agentMessage/delta",
                {"threadId": turn.thread.id, "turnId": turn.id, "itemId": item_id, "delta": chunk},
            )
        self.item_completed(turn, {**item, "text": "".join(chunks), "completedAtMs": now_ms()})
        self.emit_usage(turn)

    def reasoning_step(self, turn: Turn, step: dict[str, Any]) -> None:
        item_id = f"rs_{next(self.item_ids)}"
        item = {"type": "reasoning", "id": item_id, "summary": [], "content": []}
        self.notify(
            "item/started",
            {"item": item, "threadId": turn.thread.id, "turnId": turn.id, "startedAtMs": now_ms()},
        )
        chunks = split_words(str(step["reasoning"]), step.get("deltas"))
        for chunk in chunks:
            self.checkpoint(turn)
            self.notify(
                "item/reasoning/summaryTextDelta",
                {
                    "threadId": turn.thread.id,
                    "turnId": turn.id,
                    "itemId": item_id,
                    "delta": chunk,
                    "summaryIndex": 0,
                },
            )
        done = {**item, "summary": ["".join(chunks)]}
        self.notify(
            "item/completed",
            {
                "item": done,
                "threadId": turn.thread.id,
                "turnId": turn.id,
                "contentTokenCount": None,
                "completedAtMs": now_ms(),
            },
        )

    def file_change_step(self, turn: Turn, step: dict[str, Any]) -> None:
        th = turn.thread
        item_id = f"call_{next(self.item_ids)}"
        changes = [
            {
                "path": str(c["path"]),
                "kind": {"type": c.get("kind", "add")},
                "diff": c.get("diff", ""),
            }
            for c in step["file_change"]
        ]
        item = {"type": "fileChange", "id": item_id, "changes": changes, "status": "inProgress"}
        self.notify(
            "item/started",
            {"item": item, "threadId": th.id, "turnId": turn.id, "startedAtMs": now_ms()},
        )
        decision: Any = "accept"
        if step.get("approval", True):
            reply = self.server_request(
                turn,
                "item/fileChange/requestApproval",
                {
                    "threadId": th.id,
                    "turnId": turn.id,
                    "itemId": item_id,
                    "startedAtMs": now_ms(),
                    "reason": step.get("reason"),
                    "grantRoot": None,
                },
            )
            result = (reply or {}).get("result")
            decision = result.get("decision") if isinstance(result, dict) else None
        if decision in APPROVING:
            for change in step["file_change"]:
                if change.get("kind", "add") == "add":
                    target = Path(th.cwd) / str(change["path"])
                    with contextlib.suppress(OSError):
                        target.write_text(str(change.get("diff", "")))
            status = "completed"
        else:
            status = "declined" if decision in ("decline", "cancel") else "failed"
        self.notify(
            "item/completed",
            {
                "item": {**item, "status": status},
                "threadId": th.id,
                "turnId": turn.id,
                "contentTokenCount": None,
                "completedAtMs": now_ms(),
            },
        )
        if decision == "cancel":
            raise Interrupted

    def server_request(
        self,
        turn: Turn,
        method: str,
        params: dict[str, Any],
        cancel: bool = True,
        self_resolve: float | None = None,
    ) -> dict[str, Any] | None:
        """Send a server->client request and wait for the reply. Returns the
        reply message, or raises Interrupted when the turn is interrupted. With
        `self_resolve` the server gives up waiting after that many seconds and
        resolves the request itself (the reply is then None)."""
        req_id = next(self.server_ids)
        slot: dict[str, Any] = {"event": threading.Event(), "turn": turn, "reply": None}
        with self.state_lock:
            self.pending[req_id] = slot
            turn.pending_request = req_id
        self.send({"method": method, "id": req_id, "params": params})
        deadline = None if self_resolve is None else time.monotonic() + self_resolve
        while not slot["event"].is_set():
            turn.wake.wait(0.05)
            turn.wake.clear()
            if turn.interrupt_ids and cancel:
                raise Interrupted
            if deadline is not None and time.monotonic() >= deadline:
                break
        with self.state_lock:
            self.pending.pop(req_id, None)
            turn.pending_request = None
        self.notify("serverRequest/resolved", {"threadId": turn.thread.id, "requestId": req_id})
        reply: dict[str, Any] | None = slot["reply"]
        return reply

    def command_step(self, turn: Turn, step: dict[str, Any]) -> str | None:
        th = turn.thread
        cmd = str(step["command"])
        call_id = f"call_{next(self.item_ids)}"
        command = f"/bin/bash -lc '{cmd}'"
        actions = [{"type": "unknown", "command": cmd}]
        item = {
            "type": "commandExecution",
            "id": call_id,
            "pluginId": None,
            "scriptPath": None,
            "command": command,
            "cwd": th.cwd,
            "processId": None,
            "source": "agent",
            "status": "inProgress",
            "commandActions": actions,
            "aggregatedOutput": None,
            "exitCode": None,
            "durationMs": None,
            "startedAtMs": now_ms(),
            "completedAtMs": None,
        }
        ask = step.get("approval")
        if ask is None:
            ask = th.approval == "untrusted" and cmd not in th.session_approved
        decision: Any = "accept"
        if ask:
            self.status(turn, {"type": "active", "activeFlags": ["waitingOnApproval"]})
        self.item_started(turn, item)
        if ask:
            words = cmd.split()
            reply = self.server_request(
                turn,
                "item/commandExecution/requestApproval",
                {
                    "kind": "command",
                    "threadId": th.id,
                    "turnId": turn.id,
                    "itemId": call_id,
                    "startedAtMs": item["startedAtMs"],
                    "environmentId": "local",
                    "command": command,
                    "cwd": th.cwd,
                    "commandActions": actions,
                    "proposedExecpolicyAmendment": words,
                    "availableDecisions": step.get("decisions")
                    or [
                        "accept",
                        {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": words}},
                        "cancel",
                    ],
                },
                self_resolve=step.get("self_resolve"),
            )
            result = (reply or {}).get("result")
            decision = result.get("decision") if isinstance(result, dict) else None
        approved = decision in APPROVING or (
            isinstance(decision, dict) and "acceptWithExecpolicyAmendment" in decision
        )
        done_at = now_ms()
        if approved:
            if decision == "acceptForSession":
                th.session_approved.add(cmd)
            if ask:
                self.status(turn, {"type": "active", "activeFlags": []})
            output = str(step.get("output", ""))
            self.item_completed(
                turn,
                {
                    **item,
                    "processId": str(os.getpid()),
                    "source": "unifiedExecStartup",
                    # like the real one: a non-zero exit is a "failed" command
                    "status": "completed" if int(step.get("exit_code", 0)) == 0 else "failed",
                    "exitCode": int(step.get("exit_code", 0)),
                    "aggregatedOutput": output,
                    "durationMs": 1,
                    "completedAtMs": done_at,
                },
            )
            self.emit_usage(turn)
            return (
                "Chunk ID: fake01\nWall time: 0.0010 seconds\n"
                f"Process exited with code {int(step.get('exit_code', 0))}\n"
                f"Original token count: 0\nOutput:\n{output}"
            )
        status = "declined" if decision in ("decline", "cancel") else "failed"
        self.item_completed(turn, {**item, "status": status, "completedAtMs": done_at})
        reason = "rejected by user" if status == "declined" else "approval request failed"
        if decision != "cancel":
            self.stderr(
                log_line(
                    "ERROR",
                    "codex_core::tools::router",
                    "error=exec_command failed: "
                    f'CreateProcess {{ message: "Rejected(\\"{reason}\\")" }}',
                )
            )
        self.status(turn, {"type": "active", "activeFlags": []})
        self.emit_usage(turn)
        if decision == "cancel":
            raise Interrupted
        return f'exec_command failed: CreateProcess {{ message: "Rejected(\\"{reason}\\")" }}'


def main(argv: list[str]) -> int:
    if "--version" in argv or "-V" in argv:
        print(f"codex-cli {VERSION} (fake)")
        return 0
    fake = FakeCodex(load_script(argv))
    code = fake.run()
    with contextlib.suppress(BrokenPipeError, ValueError):
        sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
