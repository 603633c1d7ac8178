"""``python -m bridge`` is the ``agent-bridge`` command."""

from bridge.cli import main

raise SystemExit(main())
