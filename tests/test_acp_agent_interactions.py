"""Questions, their fallback and failed runs through ``agent-bridge acp``, driven by the
ACP Python SDK client with and without form elicitation:

* with ``elicitation.form``: a choice question, a question set and a free-text question
  are ``elicitation/create`` forms, answered;
* without it: the choice question is a ``session/request_permission`` with one option per
  choice (the approval-style fallback); the question set and the free-text question are
  shown as a message and declined (the visible deny);
* a failed run answers ``session/prompt`` with a JSON-RPC error carrying the bridge's
  classified code in ``data``, never ``result: null``.

Every message is validated against ACP's schema.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_agent_support import agent_argv, check_schema

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import RequestError, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    RequestPermissionResponse,
)

pytestmark = pytest.mark.timeout(90)

CHOICES = [{"id": "main", "label": "main branch"}, {"id": "dev", "label": "dev branch"}]
SCRIPT = {
    "runs": [
        {
            "steps": [
                {
                    "type": "question",
                    "prompt": "Which branch?",
                    "choices": CHOICES,
                    "branches": {
                        "main": [{"type": "text", "text": "Using main."}],
                        "dev": [{"type": "text", "text": "Using dev."}],
                    },
                    "onCancel": [{"type": "text", "text": "No answer."}],
                }
            ]
        },
        {
            "steps": [
                {
                    "type": "questionSet",
                    "title": "Project setup",
                    "items": [
                        {"key": "name", "prompt": "Project name?"},
                        {"key": "license", "prompt": "License?", "choices": CHOICES},
                    ],
                }
            ]
        },
        {
            "steps": [
                {
                    "type": "question",
                    "prompt": "Anything else?",
                    "allowFreeText": True,
                    "onCancel": [{"type": "text", "text": "No answer."}],
                }
            ]
        },
        {"steps": [{"type": "fail", "code": "provider_rate_limited"}]},
    ]
}


class Client:
    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.forms: list[tuple[str, Any]] = []
        self.permissions: list[Any] = []

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, [o.option_id for o in options]))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="choice:dev")
        )

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        schema = mode.requested_schema
        self.forms.append((message, schema))
        keys = set(schema.properties or {})
        content = {"answer": "main"} if keys == {"answer"} else {"name": "demo", "license": "dev"}
        if message == "Anything else?":
            content = {"answer": "more tests"}
        return AcceptElicitationResponse(action="accept", content=content)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def take_text(self) -> str:
        text = "".join(
            u.content.text for u in self.updates if u.session_update == "agent_message_chunk"
        )
        self.updates.clear()
        return text


async def play(tmp_path: Path, name: str, elicitation: bool) -> tuple[Client, list[str], Any]:
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps(SCRIPT))
    log = tmp_path / f"{name}.log"
    client = Client()
    caps = ClientCapabilities(
        elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities())
        if elicitation
        else None
    )
    argv = agent_argv(log, tmp_path / f"state-{name}", script)
    texts: list[str] = []
    async with spawn_agent_process(client, argv[0], *argv[1:], use_unstable_protocol=True) as (  # type: ignore[arg-type]  # a client of the methods the bridge calls
        conn,
        _process,
    ):
        await conn.initialize(protocol_version=1, client_capabilities=caps)
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        for words in ("branch", "setup", "else"):
            reply = await conn.prompt(session_id=sid, prompt=[text_block(words)])
            assert reply.stop_reason == "end_turn"
            texts.append(client.take_text())
        with pytest.raises(RequestError) as failed:
            await conn.prompt(session_id=sid, prompt=[text_block("fail")])
    check_schema(log)
    return client, texts, failed.value


async def test_questions_as_elicitation_forms(tmp_path: Path) -> None:
    client, texts, failed = await play(tmp_path, "forms", elicitation=True)
    assert texts == ["Using main.", "Answers: license=dev, name=demo", "Answer: more tests"]
    assert client.permissions == []
    branch = client.forms[0][1].properties["answer"]
    assert [o.const for o in branch.one_of] == ["main", "dev"]
    assert failed.data["code"] == "provider_rate_limited"


async def test_questions_without_elicitation_fall_back(tmp_path: Path) -> None:
    client, texts, failed = await play(tmp_path, "fallback", elicitation=False)
    assert client.forms == []
    tool_call, options = client.permissions[0]
    assert tool_call.title == "Which branch?"
    assert options == ["choice:main", "choice:dev", "reject_once"]
    assert texts[0] == "Using dev."
    # not askable as a permission: shown, and declined
    assert "cannot answer" in texts[1] and "Project name?" in texts[1]
    assert "Answers:" not in texts[1]
    assert "cannot answer" in texts[2] and texts[2].endswith("No answer.")
    assert failed.code == -32603 and failed.data["code"] == "provider_rate_limited"
