"""A run's input as content blocks: what an editor sends besides the prompt's text.

``run/start`` and ``run/steer`` take ``input: {"text": "..."}`` (as always) or
``input: {"content": [block, ...]}``, each block tagged by ``type``:

* ``text``: prompt text;
* ``image``: an image, inline (``data``: base64, with its ``mimeType``) or a ``path``
  inside the session's workspace (``mimeType`` then optional: taken from the file's
  extension);
* ``file``: a reference to a file (or folder) of the workspace, optionally to lines
  ``startLine``..``endLine`` of it (from 1, inclusive): a selection or an ``@``-mention;
* ``resource``: an embedded resource, its ``text`` given inline (a selection's text, an
  unsaved buffer), with the ``uri`` it came from and its ``mimeType`` when known;
* ``command``: one of the session's commands (a slash command or skill the provider
  offers, ``session/commands``) invoked by its ``name``, with its ``arguments``.

A provider states which kinds it takes, which image types and how large
(:class:`agent_bridge.wire.providers.InputCapabilities`); anything else is refused before
the run starts.  ``run.started`` records what was asked, an image by its size and SHA-256
(:class:`ImageRecord`) rather than its bytes.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from agent_bridge.wire.common import WireStruct

__all__ = [
    "BLOB_READ_MAX",
    "BlobReadParams",
    "BlobReadResult",
    "CommandInfo",
    "CommandInput",
    "FileInput",
    "ImageInput",
    "ImageRecord",
    "InputBlock",
    "InputKind",
    "InputRecord",
    "ResourceInput",
    "SessionCommandsResult",
    "TextInput",
]

#: The kinds of input block (a block's ``type``).
InputKind = Literal["text", "image", "file", "resource", "command"]

#: A line number, from 1.
Line = Annotated[int, msgspec.Meta(ge=1)]


class TextInput(WireStruct, frozen=True, tag="text", tag_field="type"):
    """Prompt text."""

    text: str


class ImageInput(WireStruct, frozen=True, tag="image", tag_field="type"):
    """An image: exactly one of ``data`` (base64, standard alphabet, with ``mimeType``) or
    ``path`` (inside the session's workspace; relative paths are taken from it).

    A provider receives it with ``data`` always set, and ``path`` resolved to its real
    path when the host gave one."""

    mime_type: str | None = None
    data: str | None = None
    path: str | None = None


class FileInput(WireStruct, frozen=True, tag="file", tag_field="type"):
    """A file or folder of the workspace the prompt refers to (a mention, a selection's
    place): the provider reads it itself.  ``startLine``/``endLine`` narrow it to lines
    (from 1, inclusive; ``endLine`` alone is refused).  A provider receives ``path`` as
    the resolved real path."""

    path: str
    start_line: Line | None = None
    end_line: Line | None = None


class ResourceInput(WireStruct, frozen=True, tag="resource", tag_field="type"):
    """An embedded resource: its ``text`` given inline, where it came from (``uri``: any
    URI, such as ``file:///…`` or an editor's ``untitled:1``) and its ``mimeType``."""

    text: str
    uri: str | None = None
    mime_type: str | None = None


class CommandInput(WireStruct, frozen=True, tag="command", tag_field="type"):
    """One of the session's commands (``session/commands``: a slash command or a skill
    the provider offers), by its ``name`` (without a leading ``/``), with its
    ``arguments`` as one string.  The provider runs it as its own front end would."""

    name: Annotated[str, msgspec.Meta(pattern=r"^[^/\s][^\s]*( [^\s]+)*$", max_length=200)]
    arguments: str | None = None


InputBlock = TextInput | ImageInput | FileInput | ResourceInput | CommandInput


class ImageRecord(WireStruct, frozen=True, tag="image", tag_field="type"):
    """An image as ``run.started`` records it: its type, size in bytes and SHA-256 (hex)
    instead of its bytes, and the resolved ``path`` when the host gave one."""

    mime_type: str
    size: int
    sha256: str
    path: str | None = None


#: A block as ``run.started`` records it.
InputRecord = TextInput | ImageRecord | FileInput | ResourceInput | CommandInput


class CommandInfo(WireStruct, frozen=True):
    """A command a session's provider offers (a slash command, a custom command, a
    skill): its ``name`` (what a ``command`` block names), a ``description`` and, when it
    takes arguments, a ``hint`` of what they are."""

    name: str
    description: str = ""
    hint: str | None = None


class SessionCommandsResult(WireStruct, frozen=True):
    """``session/commands``: the commands the session's provider offers now, and whether
    it has said (``known``: false before a provider that names its commands has named
    them, and for a provider that never does)."""

    commands: tuple[CommandInfo, ...]
    known: bool


#: The most bytes one ``blob/read`` returns (decoded; its base64 then fits the default
#: 16 MiB message limit with room to spare).
BLOB_READ_MAX: Final = 8 * 1024 * 1024

#: A SHA-256 as ``run.started`` records it: 64 lowercase hex digits.
Sha256 = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]


class BlobReadParams(WireStruct, frozen=True):
    """``blob/read``: the bytes the journal keeps for ``sha256`` (an image a run's input
    held, named by its :class:`ImageRecord`), from ``offset`` at most ``length`` bytes
    (capped at :data:`BLOB_READ_MAX`, the default)."""

    sha256: Sha256
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    length: Annotated[int, msgspec.Meta(ge=1)] | None = None


class BlobReadResult(WireStruct, frozen=True):
    """The bytes ``data`` (base64) from ``offset``, of ``size`` in all: more remain
    while ``offset`` plus their decoded length is below ``size``.  ``mimeType`` is
    the image type the bytes show (PNG, JPEG, GIF, WebP), else
    ``application/octet-stream``."""

    sha256: str
    mime_type: str
    size: int
    offset: int
    data: str
