"""Provider adapters behind the SPI in :mod:`agent_bridge.spi`: the built-in scripted
provider and the real agent CLIs, built on the adapter kit (:mod:`agent_bridge.adapters.kit`).

Every adapter has the same layout: ``provider`` (descriptor, options, create/resume),
``launch`` (executable discovery, argv, environment), ``probe``, ``protocol`` (wire
shapes), ``mapping`` (pure functions from provider records to bridge payloads) and a thin
``session`` (the scripted provider, which has no child, has ``script`` instead of
``launch``/``probe``/``protocol``).
"""

# This folder is importable only as agent_bridge.adapters (the installed package); from
# the checkout's root it would load as 'adapters', a second copy of every module.
if __name__ != "agent_bridge.adapters":
    raise ImportError(
        f"{__name__!r} is a folder of the agent-bridge checkout, not a package: import "
        "agent_bridge.adapters instead (bash scripts/setup.sh installs it)"
    )
