#!/usr/bin/env python3
"""Trim the JSON Schema that `codex app-server generate-json-schema` emits to the
parts the Codex adapter uses, and write it as one self-contained bundle.

    codex app-server generate-json-schema --out /some/dir
    python3 scripts/trim-codex-schema.py /some/dir adapters/codex/schema/app_server_protocol.json \
        --version "$(codex --version)"

The input is the generator's `codex_app_server_protocol.schemas.json` (about
0.8 MB; the whole generated folder is about 5 MB). The output keeps that file's
layout (`definitions`, with the v2 types under `definitions/v2`) so every `$ref`
stays valid, but only the definitions reachable from the methods listed below,
and the `ClientRequest` / `ServerRequest` / `ServerNotification` unions cut down
to those methods. It adds `x-methods`, a table from method name to the
`$ref`s of its params and result. Validate a message with e.g.
`{"$ref": "#/definitions/ServerNotification"}` resolved against the bundle.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

CLIENT_REQUESTS = [
    "initialize",
    "thread/start",
    "thread/resume",
    "thread/fork",
    "thread/read",
    "thread/unsubscribe",
    "turn/start",
    "turn/steer",
    "turn/interrupt",
    "account/read",
    "model/list",
    "skills/list",
    "account/rateLimits/read",
]
CLIENT_NOTIFICATIONS = ["initialized"]
# Every server notification: an adapter must at least recognise (and may ignore)
# each one, and they are cheap (about 0.25 MB together).
SERVER_NOTIFICATIONS = "all"
# Every server->client request: the adapter must answer (or refuse) each one.
SERVER_REQUESTS = "all"


def method_of(variant: dict[str, Any]) -> str:
    m = variant["properties"]["method"]
    return str((m.get("enum") or [m.get("const")])[0])


def resolve(root: dict[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def refs_in(node: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.add(v)
            else:
                out |= refs_in(v)
    elif isinstance(node, list):
        for v in node:
            out |= refs_in(v)
    return out


#: Results the naming rule (``<X>Params`` → ``<X>Response``) does not find: methods whose
#: params are nullable (``Nullable_<X>Params``) or absent.
RESULT_REFS = {"account/rateLimits/read": "#/definitions/v2/GetAccountRateLimitsResponse"}


def response_ref(root: dict[str, Any], params_ref: str | None, method: str) -> str | None:
    if method in RESULT_REFS:
        return RESULT_REFS[method]
    if params_ref is None:
        return None
    base = params_ref.rsplit("/", 1)
    candidates = []
    if base[1].endswith("Params"):
        candidates.append(f"{base[0]}/{base[1][: -len('Params')]}Response")
    for cand in candidates:
        try:
            resolve(root, cand)
            return cand
        except KeyError:
            pass
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("generated_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--version", default="", help="`codex --version` of the generator")
    args = ap.parse_args()

    full = json.loads((args.generated_dir / "codex_app_server_protocol.schemas.json").read_text())
    defs = full["definitions"]
    methods: dict[str, dict[str, dict[str, str | None]]] = {
        "clientRequests": {},
        "clientNotifications": {},
        "serverRequests": {},
        "serverNotifications": {},
    }
    unions: dict[str, list[dict[str, Any]]] = {}
    missing: list[str] = []
    for union, table, wanted, has_result in [
        ("ClientRequest", "clientRequests", CLIENT_REQUESTS, True),
        ("ClientNotification", "clientNotifications", CLIENT_NOTIFICATIONS, False),
        ("ServerRequest", "serverRequests", SERVER_REQUESTS, True),
        ("ServerNotification", "serverNotifications", SERVER_NOTIFICATIONS, False),
    ]:
        variants = {method_of(v): v for v in defs[union]["oneOf"]}
        names = list(variants) if wanted == "all" else wanted
        missing += [f"{union}:{n}" for n in names if n not in variants]
        kept = [variants[n] for n in names if n in variants]
        unions[union] = kept
        for v in kept:
            pref = v["properties"].get("params", {}).get("$ref")
            entry: dict[str, str | None] = {"params": pref}
            if has_result:
                entry["result"] = response_ref(full, pref, method_of(v))
            methods[table][method_of(v)] = entry

    # Transitive closure of the definitions the kept methods need.
    todo = set(refs_in(list(unions.values())))
    for entries in methods.values():
        for refs in entries.values():
            todo |= {r for r in refs.values() if r}
    seen: set[str] = set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        todo |= refs_in(resolve(full, ref)) - seen

    out_defs: dict[str, Any] = {}
    for ref in sorted(seen):
        parts = ref.removeprefix("#/definitions/").split("/")
        target = out_defs
        for p in parts[:-1]:
            target = target.setdefault(p, {})
        target[parts[-1]] = resolve(full, ref)
    for union, kept in unions.items():
        out_defs[union] = {**defs[union], "oneOf": kept}

    bundle = {
        "$schema": full.get("$schema", "http://json-schema.org/draft-07/schema#"),
        "title": "codex app-server protocol (trimmed)",
        "description": (
            "Generated by `codex app-server generate-json-schema`, trimmed by "
            "scripts/trim-codex-schema.py to the methods in x-methods. Messages on the wire "
            'carry no "jsonrpc" member.'
        ),
        "x-codex-version": args.version,
        "x-methods": methods,
        "definitions": out_defs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(bundle, indent=1, sort_keys=False) + "\n")
    size = args.out.stat().st_size
    print(f"wrote {args.out} ({size} bytes, {len(seen)} definitions)", file=sys.stderr)
    if missing:
        print("not in this version: " + ", ".join(missing), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
