"""A session's model and mode: what its provider offers, which is current, and a change.

``session/settings`` reads them (:class:`SessionSettings`), ``session/configure`` sets
them between runs (:class:`SessionConfigureParams`), and ``settings.updated``
(:class:`~agent_bridge.wire.events.SettingsUpdated`) tells every attached host when they
changed, by ``session/configure`` or by the provider itself (an ACP agent's
``current_mode_update``).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from agent_bridge.wire.common import WireStruct

__all__ = ["SessionConfigureParams", "SessionSetting", "SessionSettings", "SettingValue"]

#: A model or mode id.
SettingId = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class SettingValue(WireStruct, frozen=True):
    """One model or mode a provider offers: its ``id`` (what ``session/configure``
    takes) and a ``name`` to show."""

    id: str
    name: str = ""


class SessionSetting(WireStruct, frozen=True):
    """A model or mode setting: the ``current`` value (when known) and the ``available``
    ones (empty: the provider takes any id it knows, without listing them)."""

    current: str | None = None
    available: tuple[SettingValue, ...] = ()


class SessionSettings(WireStruct, frozen=True):
    """A session's ``model`` and ``mode``, each absent when its provider has none it can
    name or change."""

    model: SessionSetting | None = None
    mode: SessionSetting | None = None


class SessionConfigureParams(WireStruct, frozen=True):
    """``session/configure``: switch the session's ``model`` and/or ``mode`` before its
    next run."""

    session_id: str
    model: SettingId | None = None
    mode: SettingId | None = None
