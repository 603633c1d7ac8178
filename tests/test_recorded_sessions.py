"""The recorded real-provider sessions of the conformance corpus (one per adapter,
``tests/conformance/recorded/``, written by ``tests/conformance/record_real.py`` from real
CLI runs against the stand-ins) replay through the scripted provider, with no CLI and no
network, giving the events the real session gave (ids and times aside)."""

from __future__ import annotations

import pytest

from agent_bridge.testing import BridgeClient, Cassette, event_types, replay_cassette


@pytest.mark.agent_bridge_cassette("conformance/recorded/claude_approval.json")
def test_recorded_claude_session_replays(
    agent_bridge: BridgeClient, agent_bridge_cassette: Cassette
) -> None:
    assert agent_bridge_cassette.provider == "claude-code"
    runs = replay_cassette(agent_bridge, agent_bridge_cassette)
    agent_bridge_cassette.assert_matches(runs)
    assert "interaction.requested" in event_types(runs[0])


@pytest.mark.agent_bridge_cassette("conformance/recorded/codex_approval.json")
def test_recorded_codex_session_replays(
    agent_bridge: BridgeClient, agent_bridge_cassette: Cassette
) -> None:
    assert agent_bridge_cassette.provider == "codex"
    runs = replay_cassette(agent_bridge, agent_bridge_cassette)
    agent_bridge_cassette.assert_matches(runs)


@pytest.mark.agent_bridge_cassette("conformance/recorded/claude_approval.json")
def test_a_different_answer_takes_the_other_branch(
    agent_bridge: BridgeClient, agent_bridge_cassette: Cassette
) -> None:
    from agent_bridge.testing import answer_with

    session = agent_bridge.create_session(agent_bridge_cassette.session())
    events = agent_bridge.run(session, "create the file", answer_with("deny"))
    kinds = event_types(events)
    assert kinds[-1] == "run.completed"
    assert any(e["payload"].get("code") == "replay_diverged" for e in events if kinds), kinds
