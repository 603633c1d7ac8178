"""Walking and tidying JSON Schema trees: what msgspec emits, made into the published
form (2020-12 keywords, one-value enums as ``const``, inline copies of a named alias
replaced by a ``$ref`` to it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from agent_bridge.schema.common import DEFS, Json, JsonObject

__all__ = ["ANNOTATIONS", "normalise", "substitute", "walk"]

#: Keywords that describe a schema without constraining it.
ANNOTATIONS: Final = frozenset({"default", "title", "description", "examples"})

_SCHEMA_MAPS: Final = frozenset({"properties", "$defs", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS: Final = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_ONE: Final = frozenset(
    {"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"}
)


def walk(node: Json, fn: Callable[[JsonObject], JsonObject], *, top: bool = True) -> Json:
    """Rebuild the schema ``node`` bottom-up, passing every subschema through ``fn``
    (the top node too when ``top``); values of ``default``/``const``/``enum`` are data and
    are left alone."""
    if not isinstance(node, dict):
        return node
    out: JsonObject = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: walk(v, fn) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [walk(v, fn) for v in value]
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            out[key] = walk(value, fn)
        else:
            out[key] = value
    return fn(out) if top else out


def normalise(node: JsonObject) -> JsonObject:
    """One subschema in the published form: a one-value ``enum`` is a ``const``, a
    tagged ``anyOf`` with OpenAPI's ``discriminator`` is a ``oneOf``, an empty
    ``required`` goes, and Python's double backquotes in descriptions become single."""
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        node = {k: v for k, v in node.items() if k != "enum"} | {"const": enum[0]}
    if "discriminator" in node and "anyOf" in node:
        # OpenAPI's discriminator is no 2020-12 keyword; the members' ``const`` tags make
        # the union exclusive, so say so with oneOf.
        node = {
            ("oneOf" if k == "anyOf" else k): v for k, v in node.items() if k != "discriminator"
        }
    if node.get("required") == []:
        node = {k: v for k, v in node.items() if k != "required"}
    description = node.get("description")
    if isinstance(description, str):
        node = dict(node, description=description.replace("``", "`"))
    return node


def substitute(defs: JsonObject, alias_names: list[str]) -> None:
    """Replace inline copies of a named alias's schema by a ``$ref`` to it (in place)."""
    patterns: list[tuple[str, JsonObject]] = []
    for name in alias_names:
        body = {k: v for k, v in defs[name].items() if k not in ANNOTATIONS}
        if "const" in body or body == {}:
            continue  # a one-value Literal: replacing tags would only obscure them
        patterns.append((name, body))

    for def_name in sorted(defs):

        def replace(node: JsonObject, owner: str = def_name) -> JsonObject:
            core = {k: v for k, v in node.items() if k not in ANNOTATIONS}
            for alias, body in patterns:
                if alias != owner and core == body:
                    extra = {k: v for k, v in node.items() if k in ANNOTATIONS}
                    return {"$ref": DEFS + alias, **extra}
            return node

        defs[def_name] = walk(defs[def_name], replace, top=False)
