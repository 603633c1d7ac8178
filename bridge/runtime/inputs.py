"""A run's input checked against its provider and workspace before anything starts.

:func:`prepare_input` turns what a host sent (``RunInput``: text, or content blocks) into
what the provider receives and what ``run.started`` records, or refuses it with a typed
error naming the block (``details.field``: ``input.content.N``) and saying why
(``details.reason``, the bridge's own sentence):

* ``unsupported``: a kind of block, an image type or an image size the provider's
  descriptor does not take (``capabilities.input``);
* ``workspace_invalid``: a path outside the session's workspace (or any path when the
  session has none);
* ``invalid_params``: both or neither of ``text`` and ``content``, an image with both or
  neither of ``data`` and ``path``, invalid base64, bytes that are not the declared image
  type, an image type that cannot be told, a missing file, ``endLine`` without
  ``startLine`` or before it, a ``command`` block naming a command the session's
  provider does not offer (when it has named its commands: ``session/commands``
  ``known``; before it has, or for a provider that never does, any name goes to the
  provider, which answers it as its own front end would).

Nothing is sent, started or recorded for a refused input.  The checks read files (an
image's bytes, whether a referenced file exists), so the runtime calls this in a worker
thread when the input holds paths or images (:func:`needs_thread`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Final

import anyio

from agent_bridge.errors import BridgeError
from agent_bridge.wire.errors import ErrorCode
from agent_bridge.wire.inputs import (
    CommandInput,
    FileInput,
    ImageInput,
    ImageRecord,
    InputBlock,
    InputRecord,
    TextInput,
)
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.providers import InputCapabilities
from agent_bridge.workspace import contained

__all__ = ["PreparedInput", "image_type", "needs_thread", "prepare", "prepare_input"]

#: An image type from a file's extension, when the host gives a path without ``mimeType``.
EXTENSION_TYPES: Final = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

#: How each known image type starts (a declared type whose bytes do not is refused).
_SIGNATURES: Final = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
}


@dataclass(frozen=True)
class PreparedInput:
    """A checked input: what the provider receives (``provider``), what ``run.started``
    records (``text``, and ``record`` when the host sent content), and the bytes of its
    images by SHA-256 (``images``)."""

    provider: RunInput
    text: str
    record: tuple[InputRecord, ...] = ()
    images: dict[str, bytes] = field(default_factory=dict)


def needs_thread(input: RunInput) -> bool:
    """Whether checking ``input`` reads files or decodes images (better off the loop)."""
    return any(isinstance(b, ImageInput | FileInput) for b in input.content)


async def prepare(
    input: RunInput,
    capabilities: InputCapabilities,
    workspace: str | None,
    commands: Collection[str] | None = None,
) -> PreparedInput:
    """:func:`prepare_input`, in a worker thread when it reads files or decodes images."""
    if needs_thread(input):
        return await anyio.to_thread.run_sync(
            prepare_input, input, capabilities, workspace, commands
        )
    return prepare_input(input, capabilities, workspace, commands)


def prepare_input(
    input: RunInput,
    capabilities: InputCapabilities,
    workspace: str | None,
    commands: Collection[str] | None = None,
) -> PreparedInput:
    """Check ``input`` against the provider's input ``capabilities``, the session's
    ``workspace`` and ``commands`` (the names of the commands the provider offers;
    ``None``: it has named none, so any name is passed on); return what the provider
    gets and what is recorded.  Raises ``BridgeError`` (``invalid_params``,
    ``unsupported``, ``workspace_invalid``) with ``details.field`` and
    ``details.reason``; see the module docstring."""
    if input.text is not None:
        if input.content:
            raise _refuse("invalid_params", "input", "give text or content, not both")
        return PreparedInput(input, input.text)
    if not input.content:
        raise _refuse("invalid_params", "input", "give text or content")
    provider: list[InputBlock] = []
    record: list[InputRecord] = []
    images: dict[str, bytes] = {}
    for i, block in enumerate(input.content):
        where = f"input.content.{i}"
        if block.__struct_config__.tag not in capabilities.kinds:
            kind = block.__struct_config__.tag
            raise _refuse("unsupported", where, f"the provider does not take {kind} input")
        if isinstance(block, ImageInput):
            image, data = _image(block, capabilities, workspace, where)
            digest = hashlib.sha256(data).hexdigest()
            images[digest] = data
            provider.append(image)
            assert image.mime_type is not None
            record.append(ImageRecord(image.mime_type, len(data), digest, image.path))
        elif isinstance(block, FileInput):
            ref = _file(block, workspace, where)
            provider.append(ref)
            record.append(ref)
        else:
            if (
                isinstance(block, CommandInput)
                and commands is not None
                and block.name not in commands
            ):
                raise _refuse(
                    "invalid_params",
                    where,
                    f"the session offers no command {block.name!r} (see session/commands)",
                )
            provider.append(block)
            record.append(block)
    text = "\n".join(b.text for b in input.content if isinstance(b, TextInput))
    if capabilities.kinds == ("text",):
        return PreparedInput(RunInput(text=text), text, tuple(record))
    return PreparedInput(RunInput(content=tuple(provider)), text, tuple(record), images)


def _refuse(code: ErrorCode, where: str, reason: str) -> BridgeError:
    return BridgeError(code, details={"field": where, "reason": reason})


def _path(path: str, workspace: str | None, where: str) -> str:
    """The real path of ``path`` inside ``workspace``, or a ``workspace_invalid`` refusal."""
    if workspace is None:
        raise _refuse("workspace_invalid", where, "the session has no workspace for paths")
    try:
        return contained(workspace, path)
    except BridgeError:
        raise _refuse("workspace_invalid", where, "the path is outside the workspace") from None


def _image(
    block: ImageInput, capabilities: InputCapabilities, workspace: str | None, where: str
) -> tuple[ImageInput, bytes]:
    """The image as the provider receives it (``data`` and ``mimeType`` set, ``path``
    resolved) and its bytes."""
    accepted = capabilities.image
    if accepted is None:  # a descriptor naming the kind without saying which images
        raise _refuse("unsupported", where, "the provider does not take image input")
    if (block.data is None) == (block.path is None):
        raise _refuse("invalid_params", where, "an image needs exactly one of data and path")
    too_large = f"the image is larger than the provider takes ({accepted.max_bytes} bytes)"
    real: str | None = None
    mime_type = block.mime_type
    if block.data is not None:
        if mime_type is None:
            raise _refuse("invalid_params", where, "an image given as data needs its mimeType")
        mime_type = mime_type.lower()
        _accepted_type(mime_type, accepted.mime_types, where)
        # refuse by its length before decoding: 4 characters carry 3 bytes
        if (len(block.data) - 4) // 4 * 3 > accepted.max_bytes:
            raise _refuse("unsupported", where, too_large)
        try:
            data = base64.b64decode(block.data, validate=True)
        except (binascii.Error, ValueError):
            raise _refuse("invalid_params", where, "the image's data is not valid base64") from None
    else:
        assert block.path is not None
        real = _path(block.path, workspace, where)
        if mime_type is None:
            mime_type = EXTENSION_TYPES.get(os.path.splitext(real)[1].lower())
            if mime_type is None:
                reason = "the image's type cannot be told from its name: give its mimeType"
                raise _refuse("invalid_params", where, reason)
        mime_type = mime_type.lower()
        _accepted_type(mime_type, accepted.mime_types, where)
        info = _stat(real, where)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse("invalid_params", where, "the image's path is not a file")
        if info.st_size > accepted.max_bytes:
            raise _refuse("unsupported", where, too_large)
        data = _read(real, accepted.max_bytes, where)
    if len(data) > accepted.max_bytes:
        raise _refuse("unsupported", where, too_large)
    if not _looks_like(data, mime_type):
        raise _refuse("invalid_params", where, f"the image's bytes are not {mime_type}")
    encoded = block.data if block.data is not None else base64.b64encode(data).decode("ascii")
    return ImageInput(mime_type=mime_type, data=encoded, path=real), data


def _accepted_type(mime_type: str, accepted: tuple[str, ...], where: str) -> None:
    if mime_type not in accepted:
        taken = ", ".join(accepted)
        reason = f"the provider does not take this image type (it takes {taken})"
        raise _refuse("unsupported", where, reason[:300])


def _looks_like(data: bytes, mime_type: str) -> bool:
    """Whether ``data`` starts as ``mime_type`` does (types without a known signature pass)."""
    if mime_type == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    signatures = _SIGNATURES.get(mime_type)
    return signatures is None or data.startswith(signatures)


def image_type(data: bytes) -> str:
    """The image type ``data`` starts as (PNG, JPEG, GIF, WebP), else
    ``application/octet-stream``."""
    for mime_type in (*_SIGNATURES, "image/webp"):
        if _looks_like(data, mime_type):
            return mime_type
    return "application/octet-stream"


def _stat(path: str, where: str) -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise _refuse("invalid_params", where, "no such file in the workspace") from None
    except OSError:
        raise _refuse("invalid_params", where, "the file cannot be read") from None


def _read(path: str, limit: int, where: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(limit + 1)  # a file that grew past the limit is caught after
    except OSError:
        raise _refuse("invalid_params", where, "the file cannot be read") from None


def _file(block: FileInput, workspace: str | None, where: str) -> FileInput:
    """The reference with its path resolved (it must exist: a file or a folder)."""
    if block.end_line is not None and (
        block.start_line is None or block.end_line < block.start_line
    ):
        raise _refuse("invalid_params", where, "endLine needs a startLine at or before it")
    real = _path(block.path, workspace, where)
    info = _stat(real, where)
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise _refuse("invalid_params", where, "the path is not a file or folder")
    return FileInput(real, block.start_line, block.end_line)
