"""The placement decisions (``bridge/runtime/placement.py``) on their own: what each
member serves, which one a session goes to, who inherits a dead member's session.  The
fleet itself is tested with real members in ``tests/test_fleet.py``."""

from __future__ import annotations

import pytest

from agent_bridge.errors import BridgeError
from agent_bridge.journal import Member
from agent_bridge.runtime.placement import heir, place, refusal, within

ME = Member("t-me", "alpha", ("scripted",), ("/srv/a",), sessions=9)
BETA = Member("t-beta", "beta", ("scripted", "codex"), None, sessions=3)
GAMMA = Member("t-gamma", "gamma", ("scripted",), ("/srv",), sessions=1)
ALL = [ME, BETA, GAMMA]


def test_within_compares_normalized_paths_by_component() -> None:
    assert within("/srv/a", "/srv/a") and within("/srv/a/x/", "/srv/a")
    assert within("/srv/a/../a/x", "/srv/a") and within("/anything", "/")
    assert not within("/srv/ab", "/srv/a") and not within("/srv", "/srv/a")


def test_a_refusal_names_the_node_and_why() -> None:
    assert refusal(ME, "scripted", "/srv/a/p") is None
    assert refusal(ME, "scripted", None) is None  # the member's own default
    no_provider = refusal(ME, "codex", "/srv/a")
    assert no_provider is not None and no_provider.error_code == "provider_unavailable"
    assert "alpha" in str(no_provider.info.details)
    outside = refusal(ME, "scripted", "/home/x")
    assert outside is not None and outside.error_code == "workspace_invalid"


def test_this_member_first_else_the_least_loaded_that_can() -> None:
    assert place(ALL, ME, "scripted", "/srv/a/p") is ME  # though it has the most sessions
    assert place(ALL, ME, "scripted", "/srv/b") is GAMMA  # fewer sessions than beta
    assert place(ALL, ME, "codex", "/srv/b") is BETA
    assert place(ALL, ME, "scripted", "/home/x") is BETA  # beta serves any folder


def test_a_named_node_is_used_or_refused() -> None:
    assert place(ALL, ME, "scripted", "/srv/a", node="beta") is BETA
    assert place(ALL, ME, "scripted", "/srv/a", node="alpha") is ME
    with pytest.raises(BridgeError) as unknown:
        place(ALL, ME, "scripted", None, node="delta")
    assert unknown.value.error_code == "invalid_params"
    with pytest.raises(BridgeError) as unable:
        place(ALL, ME, "codex", None, node="gamma")
    assert unable.value.error_code == "provider_unavailable"


def test_with_no_member_able_the_own_refusal_and_no_heir() -> None:
    with pytest.raises(BridgeError) as none:
        place(ALL, ME, "gemini", "/srv/a")
    assert none.value.error_code == "provider_unavailable"
    assert heir(ALL, ME, "gemini", None) is None
    assert heir(ALL, ME, "codex", "/srv/a") is BETA
    assert heir([], ME, "scripted", "/srv/a") is ME
