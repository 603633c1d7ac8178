"""A run's input as content blocks (text, images, file references, embedded resources).

End to end through ``agent-bridge serve`` as a real child: the scripted provider's
``received`` step replies with what arrived, ``run.started`` (live and in ``events/read``)
records what was asked, and every bad input is refused with a typed error naming the
block, nothing started and nothing recorded.  The checks themselves
(:func:`agent_bridge.runtime.inputs.prepare_input`) are also run directly, against
descriptors that take less than the scripted provider does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from bridge_client import BridgeProcess
from conftest import running_bridge

from agent_bridge.errors import BridgeError
from agent_bridge.runtime.inputs import prepare_input
from agent_bridge.wire.inputs import FileInput, ImageInput, InputBlock, ResourceInput, TextInput
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.providers import ImageInputCapability, InputCapabilities

#: a real 1x1 PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(32)
SCRIPTED_MAX = 10 * 1024 * 1024


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "main.py").write_text("print('hi')\nprint('there')\n")
    (ws / "shot.png").write_bytes(PNG)
    (tmp_path / "outside.png").write_bytes(PNG)
    (ws / "escape.png").symlink_to(tmp_path / "outside.png")
    return ws


async def _session(bridge: BridgeProcess, workspace: Path) -> str:
    created = await bridge.result(
        "session/create",
        {
            "provider": "scripted",
            "workspace": str(workspace),
            "options": {"script": {"steps": [{"type": "received"}]}},
        },
    )
    sid: str = created["session"]["sessionId"]
    return sid


async def test_every_kind_of_block_reaches_the_provider_and_is_recorded(
    workspace: Path,
) -> None:
    real = os.path.realpath(workspace)
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "What is wrong here?"},
        {"type": "image", "mimeType": "image/png", "data": _b64(PNG)},
        {"type": "image", "path": "shot.png"},
        {"type": "file", "path": "src/main.py", "startLine": 2, "endLine": 2},
        {"type": "file", "path": f"{real}/src"},
        {"type": "resource", "text": "x = 1\n", "uri": "untitled:1", "mimeType": "text/x-python"},
        {"type": "text", "text": "Thanks."},
    ]
    async with running_bridge() as bridge:
        sid = await _session(bridge, workspace)
        await bridge.result("run/start", {"sessionId": sid, "input": {"content": content}})
        started = await bridge.event("run.started")
        reply = await bridge.event("text.delta")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"

        image = {"type": "image", "mimeType": "image/png", "size": len(PNG), "sha256": _sha(PNG)}
        expected = [
            content[0],
            image,
            {**image, "path": f"{real}/shot.png"},
            {"type": "file", "path": f"{real}/src/main.py", "startLine": 2, "endLine": 2},
            {"type": "file", "path": f"{real}/src"},
            content[5],
            content[6],
        ]
        # the provider received every block, the images' bytes whole, paths resolved
        assert json.loads(reply["payload"]["text"]) == expected
        # run.started records what was asked (images without their bytes) ...
        assert started["payload"] == {
            "type": "run.started",
            "input": "What is wrong here?\nThanks.",
            "content": expected,
        }
        # ... and the session's history shows it
        page = await bridge.result("events/read", {"sessionId": sid})
        assert page["events"][0]["payload"] == started["payload"]


async def test_text_input_is_unchanged_and_steer_takes_blocks(workspace: Path) -> None:
    async with running_bridge() as bridge:
        created = await bridge.result(
            "session/create",
            {
                "provider": "scripted",
                "workspace": str(workspace),
                "options": {"script": {"steps": [{"type": "echo"}, {"type": "waitForInterrupt"}]}},
            },
        )
        sid = created["session"]["sessionId"]
        run = await bridge.result("run/start", {"sessionId": sid, "input": {"text": "plain"}})
        started = await bridge.event("run.started")
        assert started["payload"] == {"type": "run.started", "input": "plain"}
        assert (await bridge.event("text.delta"))["payload"]["text"] == "You said: plain"
        steer = {
            "content": [{"type": "text", "text": "look"}, {"type": "image", "path": "shot.png"}]
        }
        assert await bridge.result("run/steer", {"runId": run["runId"], "input": steer}) == {}
        assert (await bridge.event("text.delta"))["payload"]["text"] == "[steer] look"
        outside = {"content": [{"type": "image", "path": "../outside.png"}]}
        refused = await bridge.call("run/steer", {"runId": run["runId"], "input": outside})
        assert refused["error"]["data"]["code"] == "workspace_invalid"
        assert refused["error"]["data"]["details"]["field"] == "input.content.0"
        await bridge.result("run/interrupt", {"runId": run["runId"]})
        assert (await bridge.terminal())["payload"]["type"] == "run.interrupted"


#: (input, code, reason) for each refused input
BAD: list[tuple[dict[str, Any], str, str]] = [
    ({}, "invalid_params", "give text or content"),
    ({"text": "a", "content": [{"type": "text", "text": "b"}]}, "invalid_params", "not both"),
    (
        {
            "content": [
                {
                    "type": "image",
                    "mimeType": "image/png",
                    "data": "A" * (SCRIPTED_MAX // 3 * 4 + 8),
                }
            ]
        },
        "unsupported",
        "larger than the provider takes",
    ),
    (
        {"content": [{"type": "image", "mimeType": "image/x-unknown", "data": _b64(PNG)}]},
        "unsupported",
        "does not take this image type",
    ),
    (
        {"content": [{"type": "image", "mimeType": "image/png", "data": "not base64!"}]},
        "invalid_params",
        "not valid base64",
    ),
    (
        {"content": [{"type": "image", "mimeType": "image/jpeg", "data": _b64(PNG)}]},
        "invalid_params",
        "bytes are not image/jpeg",
    ),
    ({"content": [{"type": "image", "data": _b64(PNG)}]}, "invalid_params", "needs its mimeType"),
    (
        {"content": [{"type": "image", "path": "shot.png", "data": _b64(PNG)}]},
        "invalid_params",
        "exactly one of data and path",
    ),
    ({"content": [{"type": "image", "path": "../outside.png"}]}, "workspace_invalid", "outside"),
    ({"content": [{"type": "image", "path": "escape.png"}]}, "workspace_invalid", "outside"),
    ({"content": [{"type": "image", "path": "/etc/hostname"}]}, "workspace_invalid", "outside"),
    ({"content": [{"type": "image", "path": "gone.png"}]}, "invalid_params", "no such file"),
    ({"content": [{"type": "image", "path": "src/main.py"}]}, "invalid_params", "cannot be told"),
    ({"content": [{"type": "file", "path": "src/missing.py"}]}, "invalid_params", "no such file"),
    ({"content": [{"type": "file", "path": "../ws2"}]}, "workspace_invalid", "outside"),
    (
        {"content": [{"type": "file", "path": "src/main.py", "startLine": 3, "endLine": 2}]},
        "invalid_params",
        "endLine needs a startLine",
    ),
    (
        {"content": [{"type": "file", "path": "src/main.py", "endLine": 2}]},
        "invalid_params",
        "endLine needs a startLine",
    ),
]


async def test_bad_input_is_refused_naming_the_block_and_nothing_is_recorded(
    workspace: Path,
) -> None:
    async with running_bridge() as bridge:
        sid = await _session(bridge, workspace)
        for input, code, reason in BAD:
            tries = [(input, "input")]
            if "content" in input and "text" not in input:  # a later block: named by index
                later = {"content": [{"type": "text", "text": "first"}, *input["content"]]}
                tries = [(input, "input.content.0"), (later, "input.content.1")]
            for params, field in tries:
                reply = await bridge.call(
                    "run/start", {"sessionId": sid, "input": params, "commandId": "c1"}
                )
                error = reply["error"]["data"]
                assert error["code"] == code, (params, error)
                assert reason in error["details"]["reason"], (params, error)
                assert error["details"]["field"] == field
        # nothing started, nothing recorded, and the command id was not taken
        assert not [m for m in bridge.received if m.get("method") == "event"]
        page = await bridge.result("events/read", {"sessionId": sid})
        assert page["events"] == [] and page["lastSequence"] == 0
        ok = await bridge.call(
            "run/start", {"sessionId": sid, "input": {"text": "fine"}, "commandId": "c1"}
        )
        assert "result" in ok and not ok["result"].get("duplicate")
        await bridge.terminal()


async def test_a_command_the_session_does_not_offer_is_refused_before_the_run(
    workspace: Path,
) -> None:
    """A ``command`` block is checked against the session's commands once its provider
    has named them: an unknown name is ``invalid_params`` naming it and the block, nothing
    started or recorded; a known one runs.  A provider that has named none (``known``
    false) gets any name: it is the judge."""
    review = {"type": "command", "name": "review", "arguments": "the tests"}
    unknown = {"type": "command", "name": "no-such-command"}
    async with running_bridge() as bridge:
        created = await bridge.result(
            "session/create",
            {
                "provider": "scripted",
                "workspace": str(workspace),
                "options": {
                    "script": {
                        "commands": [{"name": "review", "description": "Review the diff"}],
                        "steps": [{"type": "received"}],
                    }
                },
            },
        )
        sid = created["session"]["sessionId"]
        listed = await bridge.result("session/commands", {"sessionId": sid})
        assert listed["known"] is True
        for content, field in (
            ([unknown], "input.content.0"),
            ([review, unknown], "input.content.1"),
        ):
            reply = await bridge.call(
                "run/start", {"sessionId": sid, "input": {"content": content}, "commandId": "c1"}
            )
            error = reply["error"]["data"]
            assert error["code"] == "invalid_params", error
            assert error["details"]["field"] == field
            assert "'no-such-command'" in error["details"]["reason"]
        assert not [m for m in bridge.received if m.get("method") == "event"]
        page = await bridge.result("events/read", {"sessionId": sid})
        assert page["events"] == [] and page["lastSequence"] == 0
        await bridge.result(
            "run/start", {"sessionId": sid, "input": {"content": [review]}, "commandId": "c1"}
        )
        reply = await bridge.event("text.delta")
        assert json.loads(reply["payload"]["text"]) == [review]
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"

        # no list named: passed on to the provider
        plain = await _session(bridge, workspace)
        listed = await bridge.result("session/commands", {"sessionId": plain})
        assert listed == {"commands": [], "known": False}
        await bridge.result("run/start", {"sessionId": plain, "input": {"content": [unknown]}})
        reply = await bridge.event("text.delta")
        assert json.loads(reply["payload"]["text"]) == [unknown]
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"


async def test_malformed_blocks_are_invalid_params_with_a_path(workspace: Path) -> None:
    async with running_bridge() as bridge:
        sid = await _session(bridge, workspace)
        for block, path in [
            ({"text": "no type"}, "params.input.content[0]"),
            ({"type": "video", "data": "x"}, "params.input.content[0].type"),
            ({"type": "text", "text": 5}, "params.input.content[0].text"),
            ({"type": "file", "path": "a", "startLine": 0}, "params.input.content[0].startLine"),
            ({"type": "image", "bytes": "x"}, "params.input.content[0]"),
        ]:
            reply = await bridge.call(
                "run/start", {"sessionId": sid, "input": {"content": [block]}}, check=False
            )
            assert reply["error"]["code"] == -32602, block
            assert reply["error"]["data"]["path"] == path, (block, reply["error"])


# ------------------------------------------------------------------ the checks, directly

TEXT_ONLY = InputCapabilities()
SMALL_PNG_ONLY = InputCapabilities(
    kinds=("text", "image"), image=ImageInputCapability(("image/png",), max_bytes=len(PNG))
)


def _refusal(input: RunInput, caps: InputCapabilities, workspace: str | None) -> dict[str, Any]:
    with pytest.raises(BridgeError) as caught:
        prepare_input(input, caps, workspace)
    info = caught.value.info
    assert info.details is not None
    return {"code": info.code, **info.details}


def test_a_text_only_provider_refuses_every_other_kind_by_name(workspace: Path) -> None:
    blocks: list[InputBlock] = [
        ImageInput(mime_type="image/png", data=_b64(PNG)),
        FileInput("src/main.py"),
        ResourceInput("x"),
    ]
    for i, block in enumerate(blocks):
        input = RunInput(content=(TextInput("a"),) * i + (block,))
        refusal = _refusal(input, TEXT_ONLY, str(workspace))
        kind = block.__struct_config__.tag
        assert refusal == {
            "code": "unsupported",
            "field": f"input.content.{i}",
            "reason": f"the provider does not take {kind} input",
        }
    # text blocks reach a text-only provider as text, joined by a newline
    prepared = prepare_input(
        RunInput(content=(TextInput("a"), TextInput("b"))), TEXT_ONLY, str(workspace)
    )
    assert prepared.provider == RunInput(text="a\nb")
    assert prepared.record == (TextInput("a"), TextInput("b"))


def test_image_limits_are_the_descriptors_at_n_and_n_plus_one(workspace: Path) -> None:
    at_limit = RunInput(content=(ImageInput(mime_type="image/png", data=_b64(PNG)),))
    prepared = prepare_input(at_limit, SMALL_PNG_ONLY, None)
    assert prepared.images == {_sha(PNG): PNG}
    assert prepared.provider == at_limit
    over = PNG + b"\x00"
    refusal = _refusal(
        RunInput(content=(ImageInput(mime_type="image/png", data=_b64(over)),)),
        SMALL_PNG_ONLY,
        None,
    )
    assert refusal["code"] == "unsupported" and "larger" in str(refusal["reason"])
    (workspace / "big.png").write_bytes(over)
    by_path = RunInput(content=(ImageInput(path="big.png"),))
    assert _refusal(by_path, SMALL_PNG_ONLY, str(workspace))["code"] == "unsupported"
    jpeg = RunInput(content=(ImageInput(mime_type="IMAGE/JPEG", data=_b64(JPEG)),))
    assert "takes image/png" in str(_refusal(jpeg, SMALL_PNG_ONLY, None)["reason"])


def test_paths_need_a_workspace() -> None:
    refusal = _refusal(RunInput(content=(FileInput("/etc/hostname"),)), SMALL_PNG_ONLY, None)
    assert refusal["code"] == "unsupported"  # the kind is checked first
    caps = InputCapabilities(kinds=("text", "file"))
    refusal = _refusal(RunInput(content=(FileInput("/etc/hostname"),)), caps, None)
    assert refusal == {
        "code": "workspace_invalid",
        "field": "input.content.0",
        "reason": "the session has no workspace for paths",
    }


# ------------------------------------------------------------------ the journal's images


def _journal_blobs(state: Path) -> tuple[dict[str, int], list[tuple[str, str]]]:
    import sqlite3

    from agent_bridge.journal.schema import database_path

    conn = sqlite3.connect(f"file:{database_path(str(state))}?mode=ro", uri=True)
    try:
        blobs = dict(conn.execute("SELECT sha256, size FROM blobs").fetchall())
        refs = conn.execute(
            "SELECT s.session_id, r.sha256 FROM blob_refs r JOIN sessions s USING (skey)"
        ).fetchall()
    finally:
        conn.close()
    return blobs, sorted(refs)


async def test_images_are_journaled_once_by_content_and_go_with_their_last_session(
    workspace: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    other = PNG + b"\x00trailing"
    image = {"type": "image", "mimeType": "image/png", "data": _b64(PNG)}
    async with running_bridge(env={"AGENT_BRIDGE_STATE_DIR": str(state)}) as bridge:
        first = await _session(bridge, workspace)
        second = await _session(bridge, workspace)
        sends = [
            (first, [image]),
            (first, [{"type": "image", "path": "shot.png"}]),  # the same bytes from a file
            (first, [image, {"type": "image", "mimeType": "image/png", "data": _b64(other)}]),
            (second, [image]),
        ]
        for sid, content in sends:
            await bridge.result("run/start", {"sessionId": sid, "input": {"content": content}})
            assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        blobs, refs = _journal_blobs(state)
        assert blobs == {_sha(PNG): len(PNG), _sha(other): len(other)}
        assert refs == sorted([(first, _sha(PNG)), (first, _sha(other)), (second, _sha(PNG))])
        await bridge.result("session/delete", {"sessionId": first})
        blobs, refs = _journal_blobs(state)
        assert blobs == {_sha(PNG): len(PNG)} and refs == [(second, _sha(PNG))]
    from agent_bridge.journal import open_history

    history = open_history(str(state))
    await history.start(lambda: None)
    try:
        assert await history.read_blob(_sha(PNG)) == PNG
        assert await history.read_blob(_sha(other)) is None
        assert await history.delete(second) == "deleted"
        assert await history.read_blob(_sha(PNG)) is None
    finally:
        await history.aclose()
    assert _journal_blobs(state) == ({}, [])


async def test_blob_read_returns_a_stored_image_in_pieces_with_clear_errors(
    workspace: Path, tmp_path: Path
) -> None:
    """A host replaying history reads an image ``run.started`` names by its SHA-256."""
    state = tmp_path / "state"
    big = PNG + bytes(range(256)) * 40  # PNG bytes, 10 KiB more
    image = {"type": "image", "mimeType": "image/png", "data": _b64(big)}
    async with running_bridge(env={"AGENT_BRIDGE_STATE_DIR": str(state)}) as bridge:
        sid = await _session(bridge, workspace)
        await bridge.result("run/start", {"sessionId": sid, "input": {"content": [image]}})
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        page = await bridge.result("events/read", {"sessionId": sid})
        sha = page["events"][0]["payload"]["content"][0]["sha256"]
        whole = await bridge.result("blob/read", {"sha256": sha})
        assert whole == {
            "sha256": sha,
            "mimeType": "image/png",
            "size": len(big),
            "offset": 0,
            "data": _b64(big),
        }
        # in pieces: each names its offset and the whole size, the last may be short
        pieces = b""
        while len(pieces) < len(big):
            piece = await bridge.result(
                "blob/read", {"sha256": sha, "offset": len(pieces), "length": 4000}
            )
            assert piece["offset"] == len(pieces) and piece["size"] == len(big)
            pieces += base64.b64decode(piece["data"])
        assert pieces == big
        end = await bridge.result("blob/read", {"sha256": sha, "offset": len(big)})
        assert end["data"] == ""

        async def refused(params: dict[str, Any]) -> dict[str, Any]:
            reply = await bridge.call("blob/read", params, check=False)
            error: dict[str, Any] = reply["error"]
            return error

        unknown = await refused({"sha256": _sha(b"never sent")})
        assert unknown["data"]["code"] == "blob_not_found" and unknown["code"] == -32000
        past = await refused({"sha256": sha, "offset": len(big) + 1})
        assert past["data"]["code"] == "invalid_params"
        assert past["data"]["details"]["field"] == "offset"
        for bad in ({"sha256": sha.upper()}, {"sha256": "abc"}, {}, {"sha256": sha, "length": 0}):
            assert (await refused(bad))["code"] == -32602, bad
        # gone with the last session that sent it
        await bridge.result("session/delete", {"sessionId": sid})
        assert (await refused({"sha256": sha}))["data"]["code"] == "blob_not_found"
    # a journal in memory keeps no images
    async with running_bridge(env={"AGENT_BRIDGE_STATE_DIR": ":memory:"}) as bridge:
        sid = await _session(bridge, workspace)
        await bridge.result("run/start", {"sessionId": sid, "input": {"content": [image]}})
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        reply = await bridge.call("blob/read", {"sha256": _sha(big)})
        assert reply["error"]["data"]["code"] == "blob_not_found"
