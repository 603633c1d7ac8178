#!/usr/bin/env python3
"""A small ACP agent of the project's own, shaped after Gemini CLI 0.61.0 in ACP mode
(``gemini --acp``; the captured transcript is tests/data/acp/gemini_0.61.0_transcript.jsonl
and tests/test_acp_adapter.py keeps the two in step).

JSON-RPC 2.0 over stdio, one object a line.  What it does:

- ``initialize`` -> Gemini's result (protocolVersion 1, authMethods, agentInfo,
  agentCapabilities); the script's ``capabilities`` replaces agentCapabilities.
- ``authenticate {methodId}`` -> ``{}`` for an advertised method, else ``-32602``; with
  ``"auth_required": true`` in the script ``session/new`` fails ``-32000`` until then.
- ``session/new {cwd, mcpServers}`` -> ``{sessionId, modes, configOptions}``; sessions are
  remembered in the script's ``state_dir`` so a fresh process can ``session/load`` (the
  history is replayed as ``user_message_chunk``/``agent_message_chunk`` updates first) or
  ``session/resume`` (nothing replayed) them, when advertised.  ``"load_defect": true``
  makes a load in a fresh process fail like Gemini 0.61.0 (``-32603``).
- ``session/list {cwd?, cursor?}`` (when ``sessionCapabilities.list`` is advertised): the
  remembered sessions (ordered by their ``order``, of ``cwd`` when given), ``list_page``
  of them a page (default 50), the cursor an index; ``"list_fails": true`` answers
  ``-32603``.
- ``session/set_mode``, ``session/set_config_option`` -> ``{}`` / ``{configOptions}``.
- ``session/prompt`` streams ``session/update`` notifications and returns
  ``{stopReason}``.  By the prompt's text:
  ``TOOL:<cmd>`` asks ``session/request_permission`` (Gemini's three options) for an
  ``execute`` tool; when allowed and ``cmd`` is ``touch NAME`` it creates NAME in the
  session's cwd; then reports the tool and some text.  ``SLOW`` streams ``word0 word1
  ...`` until ``session/cancel`` -> ``stopReason: cancelled``.  ``LATE`` streams as
  ``SLOW`` does, and after the ``session/cancel`` asks ``session/request_permission`` once
  before it ends ``cancelled`` (the race a real agent can lose: a request already on its
  way as the cancel arrives; the adapter conformance kit's late interaction).
  ``EDIT:<path>`` reports an
  ``edit`` tool call with a diff.  ``THINK`` a thought chunk; ``PLAN`` a plan;
  ``USAGE`` a usage update; ``MODE`` a current_mode_update; ``CONFIG`` a
  config_option_update; ``UNKNOWN`` an update kind ACP does not have.  ``READ:<path>`` /
  ``WRITE:<path>`` call ``fs/read_text_file`` / ``fs/write_text_file`` and say what
  came back; ``TERM:<cmd> <args>`` runs a terminal (create, wait_for_exit, output,
  release); ``ASK`` sends a form ``elicitation/create``; ``ASKURL`` a URL one;
  ``CALL:<method>`` calls any client method and reports the error code; ``SCRIPTED``
sends the script's ``updates`` and ends with its ``stop_reason``; ``REFUSE``
  ends with ``refusal``; ``CRASH`` exits.  Anything else: ``Hi! I am the stand-in
  model.`` in Gemini's chunks.  The first prompt of a session starts with
  ``available_commands_update`` as Gemini does.
- ``session/cancel`` notification: the running prompt ends ``cancelled``; a pending
  permission request keeps waiting for the client's ``cancelled`` answer.
- Unknown methods: ``-32601``.  stdin EOF: exit 0.

Script: a JSON object from ``--script PATH`` (other arguments are ignored, so the
adapter's argv, e.g. ``--acp``, works).  Keys: ``log`` (every message in and out, one
``{"dir": "->"|"<-", "msg": ...}`` a line; ``->`` is what the client sent, as in the
captured transcript), ``state_dir``, ``capabilities``, ``auth_required``,
``load_defect``, ``list_page``, ``list_fails``, ``delay`` (seconds between chunks),
``slow_delay``, ``protocol_version`` (what ``initialize`` answers, 1 by default),
``output_byte_limit`` (the ``outputByteLimit`` of ``TERM:``, which then
says how many bytes of output came back and whether they were truncated, not what they
were), ``session_id`` (the ``sessionId`` every ``session/new`` answers, in
place of a fresh UUID), ``updates`` and ``stop_reason`` (the ``session/update`` updates a
``SCRIPTED`` prompt sends, and the ``stopReason`` it ends with; ``raw_lines``: lines
it then writes as they are, ``$SID`` replaced by the session id; ``prompt_error``
``{code, message}``: the error it then answers instead; ``meta_bytes``: the size of the
padding its answer's ``_meta`` then carries), ``agent_info``
(replaces the ``agentInfo`` it answers with, to pass for another agent) and ``env_log``
(a file that gets the process's environment as one JSON object a line, at start).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from typing import Any

HELLO = ["Hi!", " I", " am", " the", " stand-in", " model."]
GEMINI_CAPS: dict[str, Any] = {
    "loadSession": True,
    "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
    "mcpCapabilities": {"http": True, "sse": True},
}
AUTH_METHODS = [
    {"id": "oauth-personal", "name": "Log in with Google", "description": "Log in"},
    {"id": "gemini-api-key", "name": "Gemini API key", "description": "Use an API key"},
]
MODES: dict[str, Any] = {
    "availableModes": [
        {"id": "default", "name": "Default", "description": "Prompts for approval"},
        {"id": "yolo", "name": "YOLO", "description": "Auto-approves all tools"},
    ],
    "currentModeId": "default",
}
CONFIG_OPTIONS = [
    {
        "id": "model",
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": "auto",
        "options": [{"value": "auto", "name": "Auto"}, {"value": "fast", "name": "Fast"}],
    }
]
PERMISSION_OPTIONS = [
    {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
]
#: what ``LATE`` asks permission for, after the cancel
LATE_CALL: dict[str, Any] = {
    "toolCallId": "late_1",
    "status": "pending",
    "title": "rm -rf build",
    "content": [],
    "locations": [],
    "kind": "execute",
}


class Agent:
    def __init__(self, script: dict[str, Any]) -> None:
        self.script = script
        self.lock = threading.Lock()
        self.log_path = script.get("log")
        self.state_dir = script.get("state_dir")
        self.next_id = 0
        self.waiting: dict[int, dict[str, Any]] = {}
        self.replies: dict[int, Any] = {}
        self.cond = threading.Condition()
        self.sessions: dict[str, dict[str, Any]] = {}
        self.cancelled: set[str] = set()
        self.authenticated = False
        self.fresh = True  # no session created by this process yet

    # -- io

    def log(self, direction: str, msg: Any) -> None:
        if self.log_path:
            with open(self.log_path, "a") as fh:
                fh.write(json.dumps({"dir": direction, "msg": msg}) + "\n")

    def send(self, msg: dict[str, Any]) -> None:
        msg = {"jsonrpc": "2.0", **msg}
        with self.lock:
            self.log("<-", msg)
            sys.stdout.write(json.dumps(msg) + "\n")
            sys.stdout.flush()

    def result(self, id: Any, result: Any) -> None:
        self.send({"id": id, "result": result})

    def error(self, id: Any, code: int, message: str) -> None:
        self.send({"id": id, "error": {"code": code, "message": message}})

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send(
            {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )

    def call(self, method: str, params: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        """Send a request to the client and wait for its reply message."""
        with self.cond:
            rid = self.next_id
            self.next_id += 1
        self.send({"id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self.cond:
            while rid not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    return {"error": {"code": -1, "message": "timeout"}}
                self.cond.wait(left)
            reply: dict[str, Any] = self.replies.pop(rid)
            return reply

    # -- state

    def _state_file(self) -> str | None:
        return os.path.join(self.state_dir, "fake_acp_sessions.json") if self.state_dir else None

    def save(self) -> None:
        path = self._state_file()
        if path:
            with open(path, "w") as fh:
                json.dump(self.sessions, fh)

    def load_saved(self) -> dict[str, Any]:
        path = self._state_file()
        if path and os.path.exists(path):
            with open(path) as fh:
                data: dict[str, Any] = json.load(fh)
                return data
        return {}

    # -- dispatch

    def handle(self, msg: dict[str, Any]) -> None:
        if "method" not in msg:
            with self.cond:
                reply_id: Any = msg.get("id")
                self.replies[reply_id] = msg
                self.cond.notify_all()
            return
        method, params, id = msg["method"], msg.get("params") or {}, msg.get("id")
        if id is None:
            if method == "session/cancel":
                cancelled: Any = params.get("sessionId")
                self.cancelled.add(cancelled)
            return
        handler = getattr(self, "on_" + method.replace("/", "_"), None)
        if handler is None:
            self.error(id, -32601, f"Method not found: {method}")
            return
        if method == "session/prompt":
            threading.Thread(target=handler, args=(id, params), daemon=True).start()
        else:
            handler(id, params)

    def on_initialize(self, id: Any, params: dict[str, Any]) -> None:
        self.client_caps = params.get("clientCapabilities") or {}
        self.result(
            id,
            {
                "protocolVersion": self.script.get("protocol_version", 1),
                "authMethods": AUTH_METHODS,
                "agentInfo": self.script.get(
                    "agent_info", {"name": "fake-acp", "title": "Fake ACP", "version": "0.61.0"}
                ),
                "agentCapabilities": self.script.get("capabilities", GEMINI_CAPS),
            },
        )

    def on_authenticate(self, id: Any, params: dict[str, Any]) -> None:
        if params.get("methodId") not in [m["id"] for m in AUTH_METHODS]:
            self.error(id, -32602, "Invalid auth method")
            return
        self.authenticated = True
        self.result(id, {})

    def on_session_new(self, id: Any, params: dict[str, Any]) -> None:
        if self.script.get("auth_required") and not self.authenticated:
            self.error(id, -32000, "Authentication required")
            return
        sid = str(self.script.get("session_id") or uuid.uuid4())
        self.sessions[sid] = {"cwd": params["cwd"], "history": [], "prompts": 0}
        self.fresh = False
        self.save()
        options = CONFIG_OPTIONS
        if self.script.get("models"):
            many = [
                {"value": f"model-{i}", "name": f"Model {i}"} for i in range(self.script["models"])
            ]
            options = [{**CONFIG_OPTIONS[0], "options": many}]
        self.result(id, {"sessionId": sid, "modes": MODES, "configOptions": options})

    def _restore(self, id: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        saved = self.load_saved().get(params.get("sessionId", ""))
        if saved is None:
            self.error(id, -32002, "Resource not found")
            return None
        self.sessions[params["sessionId"]] = saved
        restored: dict[str, Any] = saved
        return restored

    def on_session_load(self, id: Any, params: dict[str, Any]) -> None:
        caps = self.script.get("capabilities", GEMINI_CAPS)
        if not caps.get("loadSession"):
            self.error(id, -32601, "Method not found: session/load")
            return
        if self.script.get("load_defect") and self.fresh:
            self.error(id, -32603, "Internal error: No previous sessions found for this project.")
            return
        saved = self._restore(id, params)
        if saved is None:
            return
        for role, text in saved["history"]:
            kind = "user_message_chunk" if role == "user" else "agent_message_chunk"
            self.update(
                params["sessionId"],
                {"sessionUpdate": kind, "content": {"type": "text", "text": text}},
            )
        self.result(id, {"modes": MODES})

    def on_session_resume(self, id: Any, params: dict[str, Any]) -> None:
        caps = self.script.get("capabilities", GEMINI_CAPS)
        if "resume" not in (caps.get("sessionCapabilities") or {}):
            self.error(id, -32601, "Method not found: session/resume")
            return
        if self._restore(id, params) is not None:
            self.result(id, {"modes": MODES})

    def on_session_list(self, id: Any, params: dict[str, Any]) -> None:
        caps = self.script.get("capabilities", GEMINI_CAPS)
        if "list" not in (caps.get("sessionCapabilities") or {}):
            self.error(id, -32601, "Method not found: session/list")
            return
        if self.script.get("list_fails"):
            self.error(id, -32603, "Internal error")
            return
        sessions = {**self.load_saved(), **self.sessions}
        cwd = params.get("cwd")
        listed = [
            {"sessionId": sid, "cwd": s["cwd"], **({"title": s["title"]} if "title" in s else {})}
            for sid, s in sorted(sessions.items(), key=lambda kv: kv[1].get("order", 0))
            if cwd is None or s["cwd"] == cwd
        ]
        size = int(self.script.get("list_page", 50))
        start = int(params.get("cursor") or 0)
        result: dict[str, Any] = {"sessions": listed[start : start + size]}
        if start + size < len(listed):
            result["nextCursor"] = str(start + size)
        self.result(id, result)

    def on_session_set_mode(self, id: Any, params: dict[str, Any]) -> None:
        self.result(id, {})

    def on_session_set_config_option(self, id: Any, params: dict[str, Any]) -> None:
        self.result(id, {"configOptions": CONFIG_OPTIONS})

    # -- prompts

    def text(self, sid: str, parts: list[str]) -> None:
        for part in parts:
            time.sleep(float(self.script.get("delay", 0.0)))
            self.update(
                sid,
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": part}},
            )

    def on_session_prompt(self, id: Any, params: dict[str, Any]) -> None:
        sid = str(params.get("sessionId") or "")
        session = self.sessions.get(sid)
        if session is None:
            self.error(id, -32602, "Session not found")
            return
        self.cancelled.discard(sid)
        blocks = params.get("prompt") or []
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        if session["prompts"] == 0:
            self.update(
                sid,
                {
                    "sessionUpdate": "available_commands_update",
                    "availableCommands": [{"name": "help", "description": "Help"}],
                },
            )
        session["prompts"] += 1
        stop = self.turn(sid, session, text)
        if text == "SCRIPTED" and self.script.get("prompt_error"):
            error = self.script["prompt_error"]
            self.error(id, int(error["code"]), str(error["message"]))
            return
        if text == "SCRIPTED" and self.script.get("meta_bytes"):
            self.result(id, {"stopReason": stop, "_meta": {"pad": "m" * self.script["meta_bytes"]}})
            return
        reply = "".join(HELLO) if stop == "end_turn" else ""
        session["history"] += [["user", text], ["agent", reply]]
        self.save()
        self.result(id, {"stopReason": stop})

    def turn(self, sid: str, session: dict[str, Any], text: str) -> str:
        if text.startswith("TOOL:"):
            return self.tool(sid, session, text[5:])
        if text.startswith("LATE"):
            for i in range(1000):
                if sid in self.cancelled:
                    self.call(
                        "session/request_permission",
                        {"sessionId": sid, "options": PERMISSION_OPTIONS, "toolCall": LATE_CALL},
                        timeout=30,
                    )
                    return "cancelled"
                self.text(sid, [f"word{i}" if i == 0 else f" word{i}"])
                time.sleep(float(self.script.get("slow_delay", 0.1)))
            return "end_turn"
        if "SLOW" in text:
            for i in range(1000):
                if sid in self.cancelled:
                    return "cancelled"
                self.text(sid, [f"word{i}" if i == 0 else f" word{i}"])
                time.sleep(float(self.script.get("slow_delay", 0.1)))
            return "end_turn"
        if text.startswith("EDIT:"):
            path = text[5:]
            call_id = "edit_1"
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": call_id,
                    "title": f"Edit {os.path.basename(path)}",
                    "kind": "edit",
                    "status": "pending",
                    "locations": [{"path": path, "line": 1}],
                    "rawInput": {"file_path": path},
                },
            )
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": "completed",
                    "content": [{"type": "diff", "path": path, "oldText": "a\n", "newText": "b\n"}],
                },
            )
            return "end_turn"
        if text == "THINK":
            self.update(
                sid,
                {
                    "sessionUpdate": "agent_thought_chunk",
                    "content": {"type": "text", "text": "pondering"},
                },
            )
        elif text == "PLAN":
            self.update(
                sid,
                {
                    "sessionUpdate": "plan",
                    "entries": [
                        {"content": "look", "priority": "high", "status": "completed"},
                        {"content": "fix", "priority": "medium", "status": "in_progress"},
                        {"content": "test", "priority": "low", "status": "pending"},
                    ],
                },
            )
        elif text == "USAGE":
            self.update(
                sid,
                {
                    "sessionUpdate": "usage_update",
                    "used": 1200,
                    "size": 200000,
                    "cost": {"amount": 0.25, "currency": "USD"},
                },
            )
        elif text == "MODE":
            self.update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": "yolo"})
        elif text == "CONFIG":
            self.update(
                sid, {"sessionUpdate": "config_option_update", "configOptions": CONFIG_OPTIONS}
            )
        elif text == "UNKNOWN":
            self.update(sid, {"sessionUpdate": "_fake_weather", "sunny": True})
        elif text.startswith("READ:"):
            reply = self.call("fs/read_text_file", {"sessionId": sid, "path": text[5:]})
            if "error" in reply:
                self.text(sid, [f"error {reply['error']['code']}"])
            else:
                self.text(sid, ["read: " + reply["result"]["content"]])
        elif text.startswith("WRITE:"):
            reply = self.call(
                "fs/write_text_file", {"sessionId": sid, "path": text[6:], "content": "written\n"}
            )
            self.text(sid, [f"error {reply['error']['code']}" if "error" in reply else "wrote"])
        elif text.startswith("TERM:"):
            argv = text[5:].split()
            made = self.call(
                "terminal/create",
                {
                    "sessionId": sid,
                    "command": argv[0],
                    "args": argv[1:],
                    "outputByteLimit": self.script.get("output_byte_limit", 1000),
                },
            )
            if "error" in made:
                self.text(sid, [f"error {made['error']['code']}"])
                return "end_turn"
            tid = made["result"]["terminalId"]
            waited = self.call("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})
            out = self.call("terminal/output", {"sessionId": sid, "terminalId": tid})
            self.call("terminal/release", {"sessionId": sid, "terminalId": tid})
            if "output_byte_limit" in self.script:
                got = out["result"]
                size = len(got["output"].encode())
                self.text(sid, [f"exit {waited['result'].get('exitCode')}: {size} bytes"])
                self.text(sid, [f", truncated {got['truncated']}"])
                return "end_turn"
            self.text(
                sid,
                [f"exit {waited['result'].get('exitCode')}: " + out["result"]["output"].strip()],
            )
        elif text == "ASK":
            reply = self.call(
                "elicitation/create",
                {
                    "sessionId": sid,
                    "mode": "form",
                    "message": "Which colour?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"colour": {"type": "string", "enum": ["red", "blue"]}},
                        "required": ["colour"],
                    },
                },
            )
            self.text(sid, ["answer: " + json.dumps(reply.get("result"))])
        elif text == "ASKURL":
            reply = self.call(
                "elicitation/create",
                {
                    "sessionId": sid,
                    "mode": "url",
                    "message": "Log in",
                    "url": "https://example.invalid/login",
                    "elicitationId": "e1",
                },
            )
            self.text(sid, ["answer: " + json.dumps(reply.get("result"))])
        elif text.startswith("CALL:"):
            reply = self.call(text[5:], {"sessionId": sid, "path": "/x", "command": "true"})
            self.text(sid, [f"error {reply['error']['code']}" if "error" in reply else "ok"])
        elif text == "REFUSE":
            return "refusal"
        elif text == "SCRIPTED":
            for update in self.script.get("updates", []):
                self.update(sid, update)
            for line in self.script.get("raw_lines", []):
                with self.lock:
                    sys.stdout.write(line.replace("$SID", sid) + "\n")
                    sys.stdout.flush()
            return str(self.script.get("stop_reason", "end_turn"))
        elif text == "CRASH":
            os._exit(3)
        else:
            self.text(sid, HELLO)
        return "end_turn"

    def tool(self, sid: str, session: dict[str, Any], cmd: str) -> str:
        call_id = f"run_shell_command__{int(time.time() * 1000)}_0"
        call = {
            "toolCallId": call_id,
            "status": "pending",
            "title": cmd,
            "content": [
                {
                    "type": "content",
                    "content": {
                        "type": "text",
                        "text": f"[current working directory {session['cwd']}]",
                    },
                }
            ],
            "locations": [],
            "kind": "execute",
        }
        reply = self.call(
            "session/request_permission",
            {"sessionId": sid, "options": PERMISSION_OPTIONS, "toolCall": call},
            timeout=300,
        )
        outcome = (reply.get("result") or {}).get("outcome") or {}
        if outcome.get("outcome") == "cancelled" or sid in self.cancelled:
            return "cancelled"
        if outcome.get("optionId") in ("proceed_once", "proceed_always"):
            words = cmd.split()
            if len(words) == 2 and words[0] == "touch":
                with open(os.path.join(session["cwd"], os.path.basename(words[1])), "w"):
                    pass
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": "completed",
                    "title": cmd,
                    "content": [],
                    "locations": [],
                    "kind": "execute",
                },
            )
            self.text(sid, ["Tool", " finished."])
        else:
            self.text(sid, ["Tool", " was", " canceled", " by", " the", " user."])
        return "end_turn"


def main() -> None:
    args = sys.argv[1:]
    script: dict[str, Any] = {}
    if "--script" in args:
        with open(args[args.index("--script") + 1]) as fh:
            script = json.load(fh)
    if script.get("env_log"):
        with open(script["env_log"], "a") as fh:
            fh.write(json.dumps(dict(os.environ)) + "\n")
    agent = Agent(script)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            print("fake_acp: not JSON", file=sys.stderr)
            continue
        agent.log("->", msg)
        agent.handle(msg)


if __name__ == "__main__":
    main()
