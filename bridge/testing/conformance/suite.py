"""The conformance suite as pytest tests: subclass :class:`ProviderConformance` and give
it an ``adapter`` fixture (see :mod:`agent_bridge.testing.conformance`)."""

from __future__ import annotations

import anyio
import pytest

from agent_bridge.testing.conformance.adapter import CONTRACT, AdapterUnderTest
from agent_bridge.testing.conformance.checks import requirement, run_check

__all__ = ["ProviderConformance"]


class ProviderConformance:
    """The SPI contract, one test per item (:data:`CONTRACT`), run on the ``adapter``
    fixture a subclass defines.  An item the adapter declared not exercisable is skipped
    with its declared reason (``declared not exercisable: …``); an item neither
    exercisable nor declared fails."""

    @pytest.fixture
    def adapter(self) -> AdapterUnderTest:
        raise pytest.UsageError("a ProviderConformance subclass must define an `adapter` fixture")

    @pytest.mark.parametrize("item", list(CONTRACT))
    def test_contract(self, adapter: AdapterUnderTest, item: str) -> None:
        how, reason = requirement(item, adapter)
        if how == "declared":
            pytest.skip(f"declared not exercisable: {reason}")
        anyio.run(run_check, item, adapter)
