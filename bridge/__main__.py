"""``python -m agent_bridge`` is the ``agent-bridge`` command."""

from agent_bridge.cli import main

raise SystemExit(main())
