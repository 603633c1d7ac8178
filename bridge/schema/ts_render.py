"""JSON Schema → TypeScript, one subschema at a time: interfaces for objects,
string-literal unions for enums, discriminated unions for tagged unions, ``?`` for
members that may be left out, doc comments from descriptions (with ``@defaultValue``)."""

from __future__ import annotations

import json
import re
from typing import Final

from agent_bridge.schema.common import Json, JsonObject

__all__ = ["declaration", "ts_alias", "ts_doc", "ts_key", "ts_literal", "ts_members", "ts_union"]

_IDENT: Final = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def ts_key(name: str) -> str:
    """A member name: bare if it is an identifier, else quoted."""
    return name if _IDENT.match(name) else json.dumps(name)


def ts_doc(text: str | None, indent: str = "") -> list[str]:
    """``text`` as a doc comment's lines (none for no text)."""
    if not text:
        return []
    lines = text.replace("*/", "*\\/").splitlines()
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]


def ts_literal(value: Json) -> str:
    """A JSON value as a TypeScript literal type."""
    return json.dumps(value, ensure_ascii=False)


def ts_union(parts: list[str]) -> str:
    """``A | B`` (duplicates dropped, order kept); ``never`` for none."""
    unique = list(dict.fromkeys(parts))
    return " | ".join(unique) if unique else "never"


def ts_type(node: Json, indent: str = "") -> str:
    """The TypeScript type of the subschema ``node``."""
    if not isinstance(node, dict):
        return "unknown"
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    if "const" in node:
        return ts_literal(node["const"])
    if "enum" in node:
        return ts_union([ts_literal(v) for v in node["enum"]])
    for key in ("oneOf", "anyOf"):
        if key in node:
            return ts_union([ts_type(m, indent) for m in node[key]])
    if "allOf" in node:
        return " & ".join(_paren(ts_type(m, indent)) for m in node["allOf"])
    kind = node.get("type")
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    if kind == "array":
        if "prefixItems" in node:
            return "[" + ", ".join(ts_type(m, indent) for m in node["prefixItems"]) + "]"
        item = ts_type(node.get("items", {}), indent)
        return f"{item}[]" if _IDENT.match(item) else f"Array<{item}>"
    if kind == "object" or "properties" in node:
        return _ts_object(node, indent)
    return "unknown"


def _paren(text: str) -> str:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "{[(<":
            depth += 1
        elif ch in "}])>":
            depth -= 1
        elif depth == 0 and text.startswith(" | ", i):
            return f"({text})"
    return text


def ts_members(node: JsonObject, indent: str) -> list[str]:
    """The member lines of an object schema (an open object gets an index signature)."""
    lines: list[str] = []
    required = set(node.get("required", []))
    for name, prop in node.get("properties", {}).items():
        doc = prop.get("description") if isinstance(prop, dict) else None
        if isinstance(prop, dict) and prop.get("default") is not None:
            default = "`" + json.dumps(prop["default"], separators=(",", ":")) + "`"
            doc = f"{doc}\n\n@defaultValue {default}" if doc else f"@defaultValue {default}"
        lines += ts_doc(doc, indent)
        optional = "" if name in required else "?"
        lines.append(f"{indent}{ts_key(name)}{optional}: {ts_type(prop, indent)};")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        lines.append(f"{indent}[key: string]: {ts_type(extra, indent)};")
    elif extra is None and node.get("type") == "object":
        # Open to members of later versions (e.g. unknown capabilities).
        lines.append(f"{indent}[key: string]: unknown;")
    return lines


def _ts_object(node: JsonObject, indent: str) -> str:
    extra = node.get("additionalProperties")
    if not node.get("properties"):
        if extra is False:
            return "Record<string, never>"
        value = ts_type(extra, indent) if isinstance(extra, dict) else "unknown"
        return f"Record<string, {value}>"
    inner = indent + "  "
    return "{\n" + "\n".join(ts_members(node, inner)) + f"\n{indent}}}"


def ts_alias(name: str, node: JsonObject) -> list[str]:
    """``export type name = …;`` on one line, or one member a line when long."""
    members = node.get("oneOf") or node.get("anyOf")
    parts = (
        [ts_type(m, "  ") for m in members]
        if isinstance(members, list)
        else [ts_literal(v) for v in node["enum"]]
        if isinstance(node.get("enum"), list)
        else []
    )
    one_line = f"export type {name} = {ts_type(node)};"
    if len(parts) < 2 or (len(one_line) <= 100 and "\n" not in one_line):
        return [one_line]
    parts = list(dict.fromkeys(parts))
    return [f"export type {name} =", *(f"  | {p}" for p in parts[:-1]), f"  | {parts[-1]};"]


def declaration(name: str, node: JsonObject) -> list[str]:
    """The exported declaration of definition ``name`` (its description as a doc
    comment; an interface for an object with members, else a type alias) and a blank
    line."""
    out = ts_doc(node.get("description"))
    combined = any(k in node for k in ("oneOf", "anyOf", "allOf"))
    if node.get("type") == "object" and node.get("properties") and not combined:
        out.append(f"export interface {name} {{")
        out += ts_members(node, "  ")
        out.append("}")
    else:
        out += ts_alias(name, node)
    out.append("")
    return out
