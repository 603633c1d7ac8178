"""Validate agent-bridge JSON-RPC messages, in either direction, against ``schemas/``.

Usage (end-to-end tests over real pipes)::

    from wire_validation import WireValidator

    validator = WireValidator()
    validator.check("host->bridge", {"jsonrpc": "2.0", "id": 1, "method": "initialize", ...})
    validator.check("bridge->host", reply)          # validated as initialize's result

One validator follows one connection: it remembers the id and method of every request
sent in each direction, so a response is validated against the result type of the request
it answers (and a response to an unknown or already-answered id is an error).  Error
responses are validated as JSON-RPC error objects; from the bridge, the code must be one it
publishes and ``data`` must have that code's shape (an ``ErrorInfo`` for -32000, -32001 and
-32002).  ``event`` notifications must be gapless per session.  Batches (JSON arrays) are
checked member by member.

Everything is looked up in ``schemas/methods.json`` and ``schemas/agent-bridge.schema.json``
(the published files, not the Python types), and compiled validators are cached per
process, so checking every message of a streaming test is cheap.  Cheaper still for
events: an event's payload is ``anyOf [oneOf [14 types], UnknownEventPayload]``, which
``jsonschema`` checks against every branch (about a millisecond an event).  When the
published schema discriminates those branches by their ``type`` constant (checked at
load), the validator first checks the payload against the one branch its ``type`` names
(an equivalent ``if``/``then`` chain, see :func:`_discriminated`); only a message that
fails is checked again against the schema as published, which gives the error.  Problems raise
:class:`AssertionError` naming the direction, the definition and the failing member.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource

__all__ = ["SCHEMAS_DIR", "Contract", "Direction", "WireValidator", "load_contract"]

SCHEMAS_DIR = Path(__file__).resolve().parent.parent / "schemas"

Direction = Literal["host->bridge", "bridge->host"]
_DIRECTIONS: dict[str, Direction] = {
    "host->bridge": "host->bridge",
    "bridge->host": "bridge->host",
    "send": "host->bridge",
    "recv": "bridge->host",
    ">": "host->bridge",
    "<": "bridge->host",
}
_OTHER: dict[Direction, Direction] = {
    "host->bridge": "bridge->host",
    "bridge->host": "host->bridge",
}
_MAX_SHOWN = 600


def _short(message: Any) -> str:
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "…"


@dataclass(frozen=True)
class MethodSpec:
    """One entry of ``methods.json``: pointers (``#/$defs/…``) into the schema."""

    name: str
    direction: str
    kind: str
    message: str
    params: str
    result: str | None
    response: str | None

    def sent_by(self, direction: Direction) -> bool:
        return self.direction in (direction, "both")


@dataclass
class Contract:
    """The loaded schema and method map, with a cache of compiled validators."""

    schema: dict[str, Any]
    methods: dict[str, MethodSpec]
    rpc_errors: dict[int, dict[str, Any]]
    error_codes: dict[str, dict[str, Any]]
    schema_id: str
    _registry: Registry = field(repr=False)
    #: the id of the schema with event payloads discriminated by type, if it can be
    _fast_id: str | None = field(default=None, repr=False)
    _validators: dict[str, Draft202012Validator] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def validator(self, pointer: str, *, fast: bool = False) -> Draft202012Validator:
        """The compiled validator of the definition at ``pointer`` (``#/$defs/Name``), in
        the published schema or (``fast``) its discriminated equivalent."""
        base = self._fast_id if fast and self._fast_id is not None else self.schema_id
        key = base + pointer
        found = self._validators.get(key)
        if found is None:
            found = Draft202012Validator({"$ref": key}, registry=self._registry)
            with self._lock:
                self._validators[key] = found
        return found

    def errors(self, pointer: str, instance: Any) -> list[ValidationError]:
        """Every validation error of ``instance`` against the definition at ``pointer``
        (none when the discriminated schema accepts it: the two are equivalent)."""
        if self._fast_id is not None and self.validator(pointer, fast=True).is_valid(instance):
            return []
        return list(self.validator(pointer).iter_errors(instance))

    def def_pointer(self, name: str) -> str:
        """``#/$defs/<name>``, checked to exist."""
        if name not in self.schema["$defs"]:
            raise KeyError(f"no definition {name} in the schema")
        return "#/$defs/" + name


def _fragment(ref: Mapping[str, Any] | None) -> str | None:
    if ref is None:
        return None
    target = str(ref["$ref"])
    return "#" + target.split("#", 1)[1]


def _discriminated(schema: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of ``schema`` in which the event payload (``anyOf [EventPayload,
    UnknownEventPayload]``, ``EventPayload`` a ``oneOf``) is an ``if``/``then`` chain on
    its ``type`` (the branch whose constant it is, else ``UnknownEventPayload``); ``None``
    unless that is equivalent: every branch requires ``type`` and fixes it to a constant
    of its own, and ``UnknownEventPayload`` is exactly the payloads whose ``type`` is a
    string none of those constants.  (Then a payload matches ``oneOf`` iff it matches the
    branch of its ``type``, and the ``anyOf`` iff it matches that or the fallback.)"""
    defs = schema["$defs"]
    try:
        payload = defs["EventEnvelope"]["properties"]["payload"]
        known, unknown = (branch["$ref"] for branch in payload["anyOf"])
        union = defs[known.rsplit("/", 1)[-1]]["oneOf"]
        fallback = defs[unknown.rsplit("/", 1)[-1]]
        consts: list[tuple[str, str]] = []
        for branch in union:
            target = defs[branch["$ref"].rsplit("/", 1)[-1]]
            if "type" not in target.get("required", ()) or target.get("type") != "object":
                return None
            consts.append((target["properties"]["type"]["const"], branch["$ref"]))
        names = [name for name, _ in consts]
        if (
            len(set(names)) != len(names)
            or fallback["properties"]["type"] != {"not": {"enum": sorted(names)}, "type": "string"}
            or fallback["required"] != ["type"]
        ):
            return None
    except (KeyError, TypeError, ValueError):
        return None
    chain: dict[str, Any] = {"$ref": unknown}
    for name, ref in reversed(consts):
        chain = {
            "if": {"properties": {"type": {"const": name}}, "required": ["type"]},
            "then": {"$ref": ref},
            "else": chain,
        }
    fast = json.loads(json.dumps(schema))
    fast["$id"] = schema["$id"] + ":discriminated"
    fast["$defs"]["EventEnvelope"]["properties"]["payload"] = chain
    out: dict[str, Any] = fast
    return out


@cache
def load_contract(schemas_dir: Path = SCHEMAS_DIR) -> Contract:
    """Load (once per directory) the published schema and method map."""
    schema = json.loads((schemas_dir / "agent-bridge.schema.json").read_text("utf-8"))
    method_doc = json.loads((schemas_dir / "methods.json").read_text("utf-8"))
    schema_id = schema["$id"]
    registry: Registry = Registry().with_resource(schema_id, Resource.from_contents(schema))
    fast = _discriminated(schema)
    if fast is not None:
        registry = registry.with_resource(fast["$id"], Resource.from_contents(fast))
    methods = {
        name: MethodSpec(
            name,
            entry["direction"],
            entry["kind"],
            _fragment(entry["message"]) or "",
            _fragment(entry["params"]) or "",
            _fragment(entry.get("result")),
            _fragment(entry.get("response")),
        )
        for name, entry in method_doc["methods"].items()
    }
    rpc_errors = {e["code"]: e for e in method_doc["jsonRpcErrors"]}
    return Contract(
        schema,
        methods,
        rpc_errors,
        method_doc["errorCodes"],
        schema_id,
        registry,
        None if fast is None else fast["$id"],
    )


class WireValidator:
    """Validates the messages of one host↔bridge connection (see module docstring).

    ``check_sequences``: every ``event`` notification's ``sequence`` must follow the
    previous one of its session by exactly one (the first one seen may be any number), and
    an ``eventId`` always names the same event (session and sequence).  One exception:
    while a ``session/attach`` (or ``session/resume`` with ``after``) is unanswered, its
    session may start over once at ``after + 1`` (the replay), and continue from there.
    """

    def __init__(self, schemas_dir: Path | str = SCHEMAS_DIR, *, check_sequences: bool = True):
        self.contract = load_contract(Path(schemas_dir))
        self.check_sequences = check_sequences
        #: requests sent in each direction and not yet answered: JSON id -> method (None
        #: when the request was deliberately invalid and names no known method).
        self.pending: dict[Direction, dict[str, str | None]] = {
            "host->bridge": {},
            "bridge->host": {},
        }
        #: ids of requests their sender cancelled with ``$/cancelRequest``.
        self.cancelled: dict[Direction, set[str]] = {"host->bridge": set(), "bridge->host": set()}
        self._sequences: dict[str, int] = {}
        self._event_ids: dict[str, tuple[str, int]] = {}
        #: sessions a replay may restart, at which sequence; and the requests asking it
        self._rewinds: dict[str, int] = {}
        self._rewind_requests: dict[str, str] = {}
        self.checked = 0

    # ------------------------------------------------------------------ public

    def check(self, direction: str, message: Any, *, valid: bool = True) -> None:
        """Validate one message (or batch) sent in ``direction``.

        ``direction`` is ``host->bridge``/``bridge->host`` (or ``send``/``recv``, ``>``/``<``
        from the host's side).  With ``valid=False`` the message is one a test sends on
        purpose to provoke an error: it must *not* match the schema, and a request's id is
        still tracked so its (error) reply can be checked.
        """
        where = _DIRECTIONS.get(direction)
        if where is None:
            raise ValueError(f"unknown direction {direction!r}")
        if isinstance(message, list):
            self._assert(bool(message) or not valid, where, "an empty batch", message)
            for item in message:
                self.check(where, item, valid=valid)
            return
        self.checked += 1
        if valid:
            self._check_one(where, message)
            return
        try:
            self._check_one(where, message)
        except AssertionError:
            self._track_invalid(where, message)
            return
        raise AssertionError(
            f"{where}: message was expected to violate the schema but is valid: {_short(message)}"
        )

    def validate(self, definition: str, instance: Any) -> None:
        """Validate ``instance`` against ``$defs/<definition>`` (AssertionError if not)."""
        pointer = self.contract.def_pointer(definition)
        self._raise_first(self.contract.errors(pointer, instance), definition, "value", instance)

    def expect_no_pending(self) -> None:
        """Assert every request of both directions was answered (or cancelled by its
        sender, which leaves answering it optional)."""
        left = {
            d: {k: m for k, m in p.items() if k not in self.cancelled[d]}
            for d, p in self.pending.items()
        }
        left = {d: p for d, p in left.items() if p}
        if left:
            raise AssertionError(f"requests never answered: {left}")

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _assert(ok: bool, where: str, what: str, message: Any) -> None:
        if not ok:
            raise AssertionError(f"{where}: {what}: {_short(message)}")

    def _raise_first(
        self, errors: list[ValidationError], definition: str, where: str, message: Any
    ) -> None:
        if not errors:
            return
        error = best_match(errors)
        path = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise AssertionError(
            f"{where}: message does not match {definition}: {error.message} "
            f"(at {path or '<root>'}; schema {'/'.join(map(str, error.absolute_schema_path))})"
            f"\n  message: {_short(message)}"
        )

    def _validate_at(self, pointer: str, instance: Any, where: str, message: Any) -> None:
        errors = self.contract.errors(pointer, instance)
        self._raise_first(errors, pointer.rsplit("/", 1)[-1], where, message)

    def _check_one(self, where: Direction, message: Any) -> None:
        self._assert(isinstance(message, dict), where, "a message must be a JSON object", message)
        if "method" in message:
            method = message["method"]
            self._assert(isinstance(method, str), where, "method must be a string", message)
            spec = self.contract.methods.get(method)
            self._assert(spec is not None, where, f"unknown method {method!r}", message)
            assert spec is not None
            self._assert(spec.sent_by(where), where, f"{method} is not sent {where}", message)
            is_request = "id" in message
            self._assert(
                is_request == (spec.kind == "request"),
                where,
                f"{method} is a {spec.kind}, sent as a "
                + ("request" if is_request else "notification"),
                message,
            )
            self._validate_at(spec.message, message, where, message)
            if is_request:
                key = json.dumps(message["id"])
                pending = self.pending[where]
                self._assert(
                    key not in pending, where, f"request id {key} is still pending", message
                )
                pending[key] = method
                params = message.get("params")
                if (
                    method in ("session/attach", "session/resume")
                    and isinstance(params, dict)
                    and isinstance(params.get("sessionId"), str)
                    and isinstance(params.get("after", 0), int)
                    and (method == "session/attach" or "after" in params)
                ):
                    self._rewinds[params["sessionId"]] = params.get("after", 0) + 1
                    self._rewind_requests[key] = params["sessionId"]
            elif method == "event" and self.check_sequences:
                self._check_event(where, message["params"], message)
            elif method == "$/cancelRequest":
                self.cancelled[where].add(json.dumps(message["params"]["id"]))
            return
        if "result" in message or "error" in message:
            self._check_response(where, message)
            return
        raise AssertionError(f"{where}: not a request, notification or response: {_short(message)}")

    def _check_response(self, where: Direction, message: dict[str, Any]) -> None:
        ident = message.get("id")
        method: str | None = None
        if ident is not None or "result" in message:
            key = json.dumps(ident)
            requests = self.pending[_OTHER[where]]
            self._assert(
                key in requests, where, f"response to unknown or answered id {key}", message
            )
            method = requests.pop(key)
            rewound = self._rewind_requests.pop(key, None)
            if rewound is not None:
                self._rewinds.pop(rewound, None)
        if "error" in message:
            self._validate_at("#/$defs/JsonRpcErrorResponse", message, where, message)
            if where == "bridge->host":
                self._check_bridge_error(message)
            return
        self._assert(method is not None, where, "a result for a request that was invalid", message)
        assert method is not None
        spec = self.contract.methods[method]
        assert spec.response is not None, method
        self._validate_at(spec.response, message, where, message)

    def _check_bridge_error(self, message: dict[str, Any]) -> None:
        code = message["error"]["code"]
        branches = self.contract.schema["$defs"]["BridgeJsonRpcError"]["oneOf"]
        for i, branch in enumerate(branches):
            if branch["properties"]["code"].get("const") == code:
                pointer = f"#/$defs/BridgeJsonRpcError/oneOf/{i}"
                errors = self.contract.errors(pointer, message["error"])
                self._raise_first(
                    errors, f"BridgeJsonRpcError ({branch['title']})", "bridge->host", message
                )
                return
        raise AssertionError(
            f"bridge->host: error code {code} is not one the bridge publishes "
            f"({sorted(self.contract.rpc_errors)}): {_short(message)}"
        )

    def _check_event(self, where: Direction, envelope: dict[str, Any], message: Any) -> None:
        session = envelope["sessionId"]
        sequence = envelope["sequence"]
        last = self._sequences.get(session)
        if last is not None and sequence != last + 1:
            self._assert(
                self._rewinds.get(session) == sequence,
                where,
                f"event sequence {sequence} of session {session} does not follow {last}",
                message,
            )
            del self._rewinds[session]
        self._sequences[session] = sequence
        event_id = envelope["eventId"]
        named = self._event_ids.setdefault(event_id, (session, sequence))
        self._assert(named == (session, sequence), where, f"eventId {event_id} reused", message)

    def _track_invalid(self, where: Direction, message: Any) -> None:
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return
        ident = message["id"]
        if isinstance(ident, bool) or not isinstance(ident, int | str):
            return
        method = message["method"]
        known = isinstance(method, str) and method in self.contract.methods
        self.pending[where].setdefault(json.dumps(ident), method if known else None)
