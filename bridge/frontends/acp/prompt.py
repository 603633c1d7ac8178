"""An ACP prompt as a run's input, and what ``agent-bridge acp`` says prompts may hold.

:func:`run_input` maps the content blocks of ``session/prompt`` to the bridge's
``RunInput``, as far as the session's provider takes them
(``capabilities.input.kinds``):

================================  =====================================================
ACP block                         run input
================================  =====================================================
``text``                          a text block
``image``                         an image block (refused when the provider takes none)
``resource_link`` ``file://``     a file reference, when the provider takes them
``resource_link`` (otherwise)     the text ``@<uri>``, as a mention
``resource`` with ``text``        an embedded resource, when the provider takes them;
                                  else the text ``<resource uri=…>`` … ``</resource>``
``resource`` with an image blob   an image block (refused when the provider takes none)
``resource`` with another blob    refused
``audio``                         refused (``promptCapabilities.audio`` is false)
================================  =====================================================

A prompt whose first block is the text ``/<name> <arguments>``, naming one of the
session's commands (``session/commands``), is that command (a ``command`` block, then
the other blocks) when the provider takes commands: as an ACP client sends an
``available_commands_update`` command.  Otherwise, a prompt of text only is given as
``{"text": …}`` (its parts joined by a newline), as before.  What is refused is invalid
params (``-32602``) naming the block (``details.field``: ``prompt.N``); a block that is
not valid ACP never gets here (the request's decoding refuses it).  Paths, image types
and sizes are then checked by the runtime as every run's input is
(:mod:`agent_bridge.runtime.inputs`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from agent_bridge.errors import BridgeError
from agent_bridge.wire import acp
from agent_bridge.wire.inputs import (
    CommandInput,
    FileInput,
    ImageInput,
    InputBlock,
    InputKind,
    ResourceInput,
    TextInput,
)
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.providers import ProviderDescriptor

__all__ = ["Block", "prompt_capabilities", "prompt_texts", "run_input"]

#: One block of an ACP prompt.
Block = (
    acp.TextContent | acp.ImageContent | acp.AudioContent | acp.ResourceLink | acp.EmbeddedResource
)


def prompt_capabilities(descriptor: ProviderDescriptor) -> dict[str, Any]:
    """``agentCapabilities.promptCapabilities`` for sessions on ``descriptor``'s provider:
    images when it takes them; embedded context always (given to a provider that takes no
    resources as text); never audio."""
    kinds = descriptor.capabilities.input.kinds
    return {"image": "image" in kinds, "audio": False, "embeddedContext": True}


def prompt_texts(blocks: Sequence[Block]) -> list[str]:
    """The prompt's text blocks (what a session's title is made from)."""
    return [b.text for b in blocks if isinstance(b, acp.TextContent)]


def run_input(
    blocks: Sequence[Block], kinds: Sequence[InputKind], commands: Collection[str] = ()
) -> RunInput:
    """The run input for an ACP prompt to a provider that takes ``kinds``, in a session
    whose commands are named ``commands`` (see the module docstring).  Raises
    ``BridgeError("invalid_params")`` naming a block it cannot give."""
    out: list[InputBlock] = []
    for i, block in enumerate(blocks):
        out.append(_block(block, kinds, f"prompt.{i}"))
    if out and isinstance(out[0], TextInput) and "command" in kinds and commands:
        command = _command(out[0].text, commands)
        if command is not None:
            return RunInput(content=(command, *out[1:]))
    if all(isinstance(b, TextInput) for b in out):
        return RunInput(text="\n".join(b.text for b in out if isinstance(b, TextInput)))
    return RunInput(content=tuple(out))


#: ``/<name>`` and the arguments after it (a command as ACP clients send one).
_SLASH: Final = re.compile(r"/([^/\s][^\s]{0,199})(?:\s+(.*))?", re.DOTALL)


def _command(text: str, commands: Collection[str]) -> CommandInput | None:
    """The command ``text`` invokes (``/<name> <arguments>``, ``name`` one of
    ``commands``), else ``None``."""
    match = _SLASH.fullmatch(text.strip())
    if match is None or match.group(1) not in commands:
        return None
    arguments = (match.group(2) or "").strip()
    return CommandInput(match.group(1), arguments or None)


def _refuse(where: str, reason: str) -> BridgeError:
    return BridgeError("invalid_params", details={"field": where, "reason": reason})


def _block(block: Block, kinds: Sequence[InputKind], where: str) -> InputBlock:
    if isinstance(block, acp.TextContent):
        return TextInput(block.text)
    if isinstance(block, acp.ImageContent):
        if "image" not in kinds:
            raise _refuse(where, "the provider does not take image input")
        return ImageInput(mime_type=block.mime_type, data=block.data)
    if isinstance(block, acp.ResourceLink):
        path = _file_path(block.uri)
        if path is not None and "file" in kinds:
            return FileInput(path)
        return TextInput("@" + block.uri)
    if isinstance(block, acp.EmbeddedResource):
        resource = block.resource
        if (resource.text is None) == (resource.blob is None):
            raise _refuse(where, "a resource needs exactly one of text and blob")
        if resource.text is not None:
            if "resource" in kinds:
                return ResourceInput(resource.text, resource.uri, resource.mime_type)
            return TextInput(f"<resource uri={resource.uri}>\n{resource.text}\n</resource>")
        mime_type = resource.mime_type or ""
        if mime_type.startswith("image/") and "image" in kinds:
            return ImageInput(mime_type=mime_type, data=resource.blob)
        raise _refuse(where, "the provider does not take this binary resource")
    raise _refuse(where, "the provider does not take audio input")


def _file_path(uri: str) -> str | None:
    """The local path of a ``file://`` URI (``None`` for any other URI)."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = unquote(parts.path)
    return path or None
