"""The command line's doors: one module per subcommand, and :mod:`.boot`, what they share.

Each command module has ``add_parsers(sub)`` (its ``argparse`` subparsers) and
``run(args)`` (the exit status); :mod:`agent_bridge.cli` is the table that names them.
The shared options (the journal's, ``--interrupt-grace``, logging) are defined once, in
:mod:`.options`; :mod:`.boot` does once what every door that runs a runtime needs: guard
the protocol's stdout, configure logging, open the journal, build the runtime and serve a
front-end until EOF or a signal.

This is the top floor: commands import front-ends, the runtime, the journal and the
registry; nothing below imports a command (an import-linter contract, ``scripts/check``).
Importing this package or :mod:`.options` costs only the standard library's lightest
modules: ``serve`` answers its host's ``initialize`` before the rest is loaded.
"""
