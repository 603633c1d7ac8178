"""Provider adapters behind the SPI in :mod:`agent_bridge.spi`: the built-in scripted
provider and the real agent CLIs, built on the adapter kit (:mod:`agent_bridge.adapters.kit`).

Every adapter has the same layout: ``provider`` (descriptor, options, create/resume),
``launch`` (executable discovery, argv, environment), ``probe``, ``protocol`` (wire
shapes), ``mapping`` (pure functions from provider records to bridge payloads) and a thin
``session`` (the scripted provider, which has no child, has ``script`` instead of
``launch``/``probe``/``protocol``).
"""
