"""The adapter conformance kit: the provider SPI's contract as a pytest suite that an
adapter author runs against their own provider, wired to their own fake.

::

    from agent_bridge.testing.conformance import AdapterUnderTest, ProviderConformance, RunSpec

    class TestMyProvider(ProviderConformance):
        @pytest.fixture
        def adapter(self) -> AdapterUnderTest:
            return AdapterUnderTest(
                provider=MyProvider(binary=FAKE),
                text_run=RunSpec("say hello", expect_text="hello"),
                approval_run=RunSpec("touch x"),
                not_exercised={"late_interaction": "the fake never asks after an interrupt"},
            )

Each item of :data:`CONTRACT` is one test, run on the real runtime in process
(:mod:`~agent_bridge.testing.conformance.harness`); an item the adapter cannot be made to
show is declared in ``not_exercised`` with its reason (reported as a skip saying so), and
one neither exercised nor declared fails.  The checks themselves
(:mod:`~agent_bridge.testing.conformance.checks`) do not need pytest:
:func:`run_check` runs one anywhere.  See docs/adapter-conformance.md.

This package needs pytest (as :mod:`agent_bridge.testing` does); the bridge itself never
imports it.
"""

from __future__ import annotations

from agent_bridge.testing.conformance.adapter import CONTRACT, AdapterUnderTest, RunSpec
from agent_bridge.testing.conformance.checks import ConformanceFailure, requirement, run_check
from agent_bridge.testing.conformance.suite import ProviderConformance

__all__ = [
    "CONTRACT",
    "AdapterUnderTest",
    "ConformanceFailure",
    "ProviderConformance",
    "RunSpec",
    "requirement",
    "run_check",
]
