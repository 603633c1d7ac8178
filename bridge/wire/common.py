"""Base classes and constants shared by every wire module."""

from __future__ import annotations

from typing import Annotated, Any, Final

import msgspec

__all__ = [
    "PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "JsonObject",
    "PageLimit",
    "WireStruct",
]

#: The protocol version this bridge speaks by default.
PROTOCOL_VERSION: Final = 1
#: Every protocol version a host may ask for at ``initialize``.
SUPPORTED_PROTOCOL_VERSIONS: Final = (1,)

JsonObject = dict[str, Any]
#: A page size: at least 1 (each method lowers one above its own maximum to it).
PageLimit = Annotated[int, msgspec.Meta(ge=1)]


class WireStruct(
    msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, rename="camel", frozen=True
):
    """Base of every wire type: camelCase names, closed to unknown fields, defaults omitted."""


class LenientStruct(msgspec.Struct, omit_defaults=True, rename="camel", frozen=True):
    """Base of the few wire types that must accept members from later versions."""
