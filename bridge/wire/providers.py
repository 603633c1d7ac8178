"""Provider descriptors: what a provider is, can do and accepts, stated as structure.

Capabilities are structured descriptors, never a bag of booleans: what a provider cannot
do is stated (``unsupported``), not faked.  Options are declared with their allowed values
and defaults so a host can build its pickers from ``providers/list``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from agent_bridge.wire.common import WireStruct
from agent_bridge.wire.inputs import InputKind

__all__ = [
    "NO_FORK",
    "ApprovalCapability",
    "Availability",
    "Capabilities",
    "ForkCapability",
    "ImageInputCapability",
    "InputCapabilities",
    "InteractionCapabilities",
    "Maturity",
    "NativeSessionsCapability",
    "OptionDescriptor",
    "ProviderDescriptor",
    "QuestionCapability",
    "RecoveryCapability",
    "RunCapabilities",
]

Maturity = Literal["verified", "experimental", "stub"]


class ApprovalCapability(WireStruct, frozen=True):
    """Whether the provider asks approvals, and for how long an approval may last."""

    supported: bool
    modes: tuple[Literal["once", "session"], ...] = ()


class QuestionCapability(WireStruct, frozen=True):
    """Whether the provider asks questions (free text / choices) and question sets."""

    supported: bool
    question_set: bool = False


class InteractionCapabilities(WireStruct, frozen=True):
    """The interaction kinds a provider may raise."""

    approval: ApprovalCapability
    question: QuestionCapability


class RunCapabilities(WireStruct, frozen=True):
    """How runs behave: interrupt mode, steering, concurrent runs per session."""

    interrupt: Literal["immediate", "cooperative", "unsupported"]
    steer: bool = False
    max_concurrent_runs: int = 1


class RecoveryCapability(WireStruct, frozen=True):
    """Whether a session can be resumed from its recovery record in a new bridge.

    ``resumeTurn``: a run cut off (its bridge died) while it waited on an interaction
    can be continued from the recovery record where it stopped, under its run id: the
    provider does not run again what came before (no event twice, no side effect twice)
    and raises the question it waited on again, which the bridge offers under its
    original interaction id (``docs/fleet.md``, "Pending interactions at a takeover").
    ``false`` (every CLI agent: the call that waited dies with the bridge): such a run
    ends ``run.failed`` (``bridge_crashed``) after its interactions are settled
    ``cancelled``."""

    resume: bool
    resume_turn: bool = False


class ForkCapability(WireStruct, frozen=True):
    """Whether ``session/fork`` works, natively, on this provider.

    ``atEnd``: a fork of a session's whole history.  ``atEvent``: a fork at an earlier
    event of it, cut as ``granularity`` says.  ``granularity`` ``run`` (the default):
    the provider forks between its turns only, so its history is cut at the end of the
    latest run that ended at or before that event and an event inside a run is refused;
    ``message``: any event of a run that has ended, the provider's history cut after its
    last complete message at or before that event (the fork's reply says which event
    that was: ``providerSequence``).  Both ``false``: the bridge refuses every fork
    ``unsupported`` (it never fakes one by replaying text)."""

    at_end: bool = False
    at_event: bool = False
    granularity: Literal["run", "message"] = "run"


#: No fork at all (the default; omitted on the wire: use this very object)
NO_FORK: Final = ForkCapability()


class NativeSessionsCapability(WireStruct, frozen=True):
    """What a provider can do with the sessions it keeps itself (created in its own CLI or
    app, see ``provider/sessions/list`` and ``provider/sessions/read``): ``list`` them,
    ``read`` one's history (and with which coverage: ``exact``, every record as stored,
    or ``settled``, transient live deltas omitted) and ``continue`` one in the bridge.
    Each is ``unsupported`` where the provider cannot; the methods then answer
    ``unsupported``."""

    list: Literal["supported", "unsupported"]
    read: Literal["exact", "settled", "unsupported"]
    continue_: Literal["supported", "unsupported"] = msgspec.field(name="continue")

    @classmethod
    def unsupported(cls) -> NativeSessionsCapability:
        """A provider that cannot list, read or continue its own sessions."""
        return cls("unsupported", "unsupported", "unsupported")


class ImageInputCapability(WireStruct, frozen=True):
    """The images a provider takes: their MIME types and the largest, in bytes (decoded)."""

    mime_types: tuple[str, ...]
    max_bytes: int


class InputCapabilities(WireStruct, frozen=True):
    """What a run's input may hold (see ``RunInput``): the block ``kinds`` the provider
    takes, and for images (``image`` among them) which types and how large.  Input
    outside these is refused before the run starts (``unsupported``, naming the block);
    the default is text only."""

    kinds: tuple[InputKind, ...] = ("text",)
    image: ImageInputCapability | None = None


class Capabilities(WireStruct, frozen=True):
    """A provider's structured capabilities."""

    run: RunCapabilities
    interactions: InteractionCapabilities
    recovery: RecoveryCapability
    #: the provider's own sessions (declared by every provider, ``unsupported`` or not)
    native_sessions: NativeSessionsCapability
    input: InputCapabilities = InputCapabilities()
    fork: ForkCapability = NO_FORK


class OptionDescriptor(WireStruct, frozen=True):
    """One option a session (``scope: session``) or run (``scope: run``) accepts.

    ``type`` is ``enum`` (one of ``values``), ``string``, ``boolean``, ``integer`` or
    ``json`` (any JSON value, e.g. the scripted provider's script).
    """

    name: str
    scope: Literal["session", "run"]
    type: Literal["enum", "string", "boolean", "integer", "json", "stringList"]
    description: str
    values: tuple[str, ...] = ()
    default: Any = None


class Availability(WireStruct, frozen=True):
    """The result of discovery: installed where and which version, authenticated or not
    (``unknown`` when it cannot be told, never guessed), and what is missing."""

    status: Literal["available", "unavailable", "unknown"]
    executable: str | None = None
    version: str | None = None
    authentication: Literal["authenticated", "unauthenticated", "unknown"] = "unknown"
    reason: str | None = None
    next_step: str | None = None


class ProviderDescriptor(WireStruct, frozen=True):
    """Everything a host needs to show and configure a provider."""

    id: str
    display_name: str
    version: str
    maturity: Maturity
    capabilities: Capabilities
    options: tuple[OptionDescriptor, ...] = ()
    availability: Availability | None = None
