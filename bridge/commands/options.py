"""The options of ``agent-bridge serve``, in one table read two ways; every other command
that has one of them (the journal's, logging, ``--interrupt-grace``) takes it from this
table (:func:`add_options`), so a flag is defined once.

:func:`add_serve_options` gives them to the ``argparse`` parser (help, usage, error
messages).  :func:`parse_serve` reads a plain ``serve`` command line itself, without
importing ``argparse``: a host spawns ``agent-bridge serve …`` and waits for the reply to
its ``initialize``, and ``argparse`` with its formatter (``shutil``, ``gettext``,
``locale``, a help formatter per option) is several milliseconds of that wait.  It
answers only a command line it is sure ``argparse`` reads the same way (each option
spelled out in full, ``--flag value`` or ``--flag=value``, values that pass the option's
own check); for anything else (``--help``, an abbreviation, an unknown option, a bad
value, a value starting with ``-``) it returns ``None`` and the caller asks ``argparse``,
which gives the usual result or error.

Only the standard library's lightest modules are imported here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any, Final

__all__ = [
    "JOURNAL_FLAGS",
    "LOGGING_FLAGS",
    "SERVE_OPTIONS",
    "ServeOption",
    "add_options",
    "add_serve_options",
    "count",
    "history_settings",
    "journal_url",
    "log_level",
    "parse_options",
    "parse_serve",
    "positive",
    "seconds",
    "writable_file",
]


def _invalid(message: str) -> Exception:
    """The error a value check raises (``argparse`` shows its message as is)."""
    import argparse

    return argparse.ArgumentTypeError(message)


LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")


def log_level(text: str) -> str:
    """``text`` as a log level name; raises for an unknown one."""
    level = text.upper()
    if level not in LOG_LEVELS:
        raise _invalid(f"must be one of {', '.join(LOG_LEVELS)}")
    return level


def count(minimum: int) -> Callable[[str], int]:
    """A check of a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise _invalid(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise _invalid(f"must be at least {minimum}")
        return value

    return parse


def _number(text: str, accept: Callable[[float], bool], refusal: str) -> float:
    """``text`` as a number that ``accept`` takes; raises otherwise (``refusal`` says
    what it must be)."""
    try:
        value = float(text)
    except ValueError:
        raise _invalid(f"not a number: {text!r}") from None
    if not accept(value):
        raise _invalid(refusal)
    return value


def seconds(text: str) -> float:
    """``text`` as seconds between 0 and 3600; raises otherwise."""
    return _number(text, lambda v: 0 <= v <= 3600, "must be between 0 and 3600 seconds")


def positive(text: str) -> float:
    """``text`` as a positive number; raises otherwise."""
    return _number(text, lambda v: v > 0, "must be a positive number")


def non_negative(text: str) -> float:
    """``text`` as a finite number of at least 0; raises otherwise."""
    return _number(text, lambda v: 0 <= v < float("inf"), "must be 0 or more (a finite number)")


def journal_url(text: str) -> str:
    """``text``, a ``postgresql://`` address without a password; raises otherwise (plain
    string checks: this runs before ``serve``'s first reply)."""
    from agent_bridge.dburl import check_url

    try:
        return check_url(text)
    except ValueError as exc:
        raise _invalid(str(exc)) from None


def node_name(text: str) -> str:
    """``text`` as a fleet member's name: 1 to 64 letters, digits, ``.``, ``_``, ``-``."""
    if not 0 < len(text) <= 64 or not all(c.isalnum() or c in "._-" for c in text):
        raise _invalid("must be 1 to 64 letters, digits, '.', '_' or '-'")
    return text


def provider_ids(text: str) -> tuple[str, ...]:
    """``text`` as a comma-separated list of provider ids (``claude-code,codex``)."""
    ids = tuple(item.strip() for item in text.split(","))
    if not all(0 < len(item) <= 100 for item in ids):
        raise _invalid("must be provider ids separated by commas")
    return ids


def workspace_roots(text: str) -> tuple[str, ...]:
    """``text`` as a list of absolute folders separated by ``os.pathsep`` (as ``PATH``)."""
    roots = tuple(item for item in text.split(os.pathsep) if item)
    if not roots or not all(os.path.isabs(item) for item in roots):
        raise _invalid(f"must be absolute folders separated by {os.pathsep!r}")
    return roots


def writable_file(text: str) -> str:
    """``text``, a file path whose directory exists and is writable; raises otherwise."""
    directory = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(directory):
        raise _invalid(f"no such directory: {directory}")
    if not os.access(directory, os.W_OK):
        raise _invalid(f"cannot write in {directory}")
    return text


class ServeOption:
    """One option: ``flag`` (``--name``), stored as ``dest``; a ``switch`` takes no value
    (``store_true``); else its value is checked by ``check`` (``argparse``'s ``type``)
    and must be one of ``choices`` when given."""

    __slots__ = ("check", "choices", "default", "dest", "flag", "help", "metavar", "switch")

    def __init__(
        self,
        flag: str,
        help: str,
        *,
        default: Any = None,
        check: Callable[[str], Any] | None = None,
        choices: tuple[str, ...] | None = None,
        metavar: str | None = None,
        switch: bool = False,
    ) -> None:
        self.flag = flag
        self.dest = flag[2:].replace("-", "_")
        self.help = help
        self.default = False if switch else default
        self.check = check
        self.choices = choices
        self.metavar = metavar
        self.switch = switch

    def argparse_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``add_argument`` for this option."""
        if self.switch:
            return {"action": "store_true", "help": self.help}
        kwargs: dict[str, Any] = {"help": self.help, "default": self.default}
        extra = (("type", self.check), ("choices", self.choices), ("metavar", self.metavar))
        for name, value in extra:
            if value is not None:
                kwargs[name] = value
        return kwargs

    def value(self, text: str) -> Any:
        """The option's value for ``text``; raises when it is not allowed."""
        value = text if self.check is None else self.check(text)
        if self.choices is not None and value not in self.choices:
            raise ValueError(text)
        return value

    def default_value(self) -> Any:
        """The value when the option is not given (``argparse`` checks a string default
        with the option's ``type``, as if it had been given)."""
        if isinstance(self.default, str) and self.check is not None:
            return self.check(self.default)
        return self.default


SERVE_OPTIONS: Final = (
    ServeOption(
        "--stdio",
        "accepted and ignored (the LSP convention; stdio is the only transport)",
        switch=True,
    ),
    ServeOption(
        "--framing",
        "input framing (default: auto, detected from the first bytes)",
        default="auto",
        choices=("auto", "content-length", "newline"),
    ),
    ServeOption(
        "--log-file",
        "append logs to this file instead of stderr",
        check=writable_file,
        metavar="PATH",
    ),
    ServeOption(
        "--log-level",
        "debug, info, warning or error, any case (default: %(default)s)",
        default="WARNING",
        check=log_level,
        metavar="LEVEL",
    ),
    ServeOption(
        "--max-message-bytes",
        "largest frame accepted, in bytes, at least 1024 (default: 16777216 = 16 MiB)",
        default=16 * 1024 * 1024,
        check=count(1024),
        metavar="BYTES",
    ),
    ServeOption(
        "--max-inflight",
        "requests handled at once before -32000 overloaded (default: 256)",
        default=256,
        check=count(1),
        metavar="N",
    ),
    ServeOption(
        "--interrupt-grace",
        "how long an interrupted (over ACP: cancelled) run's provider may take to stop "
        "before it is forced (default: 5)",
        default=5.0,
        check=seconds,
        metavar="SECONDS",
    ),
    ServeOption(
        "--state-dir",
        "where the session journal lives (default: $AGENT_BRIDGE_STATE_DIR, else "
        "$XDG_STATE_HOME/agent-bridge or ~/.local/state/agent-bridge; ':memory:' keeps no "
        "journal, only the newest events within --memory-history-mb)",
        metavar="DIR",
    ),
    ServeOption(
        "--journal",
        "keep the journal in this PostgreSQL database instead of --state-dir "
        "(postgresql://[user@]host/dbname?…; passwords come from libpq's password file, "
        "service file or PG* environment, never the address; needs agent-bridge[postgres]; "
        "see docs/fleet.md)",
        check=journal_url,
        metavar="URL",
    ),
    ServeOption(
        "--node",
        "with --journal, this member's name in the fleet (default: the host name)",
        check=node_name,
        metavar="NAME",
    ),
    ServeOption(
        "--lease-seconds",
        "with --journal, how long this member's sessions stay its own without it renewing "
        "its lease (a dead member's sessions are taken over after this; default: 15)",
        default=15.0,
        check=positive,
        metavar="SECONDS",
    ),
    ServeOption(
        "--node-providers",
        "with --journal, the providers this member serves, separated by commas: new "
        "sessions and takeovers of other providers go to members that serve them "
        "(default: every provider this bridge has; see docs/fleet.md)",
        check=provider_ids,
        metavar="IDS",
    ),
    ServeOption(
        "--node-workspaces",
        "with --journal, the folders (and everything below them) this member runs "
        f"sessions in, separated by {os.pathsep!r}: sessions in other workspaces go to "
        "members that serve them (default: any)",
        check=workspace_roots,
        metavar="DIRS",
    ),
    ServeOption(
        "--memory-history-mb",
        "with --state-dir :memory:, the events (and raw records) kept for all sessions "
        "together; past it each appending session drops its oldest events, a ring "
        "(default: 64)",
        default=64,
        check=positive,
        metavar="MB",
    ),
    ServeOption(
        "--retain-days",
        "delete closed sessions idle for longer than this many days (default: keep all)",
        check=positive,
        metavar="DAYS",
    ),
    ServeOption(
        "--retain-mb",
        "delete the least recently active closed sessions while the journal holds "
        "more than this many MiB (default: no limit)",
        check=positive,
        metavar="MB",
    ),
    ServeOption(
        "--journal-sync",
        "full: every commit is on the disk before what it holds reaches a host, so it "
        "survives a crash of the machine; normal: of the bridge process only, one fsync "
        "fewer per commit (default: full)",
        default="full",  # the journal's DEFAULT_SYNC (tests/test_serve_options.py)
        choices=("normal", "full"),
    ),
    ServeOption(
        "--journal-writer",
        "who commits to the SQLite journal: a thread of the bridge, or a process of its "
        "own (off the bridge's interpreter, for more CPU and memory per event); auto: "
        "the thread, measured as fast or faster on any number of CPUs (docs/journal.md) "
        "(default: the configuration file's [journal] writer, else auto)",
        choices=("auto", "thread", "process"),
    ),
    ServeOption(
        "--journal-fault-limit",
        "while the journal cannot commit (disk full, I/O error, read-only), runs are "
        "held; past this many seconds of failing they end with run.failed "
        "journal_failing (retryable), delivered once it can be recorded (default: 60)",
        default=60.0,
        check=seconds,
        metavar="SECONDS",
    ),
    ServeOption(
        "--daemon",
        "auto: relay to the per-user daemon (started if none runs) instead of serving "
        "in this process, as `agent-bridge connect` does (default: off)",
        default="off",
        choices=("off", "auto"),
    ),
)

_BY_FLAG: Final = {option.flag: option for option in SERVE_OPTIONS}

#: the options of the journal (where it lives, its bounds, durability and fault limit):
#: every command that runs a runtime (``serve``, ``acp``, ``daemon``) takes these same
#: ones, from this table
JOURNAL_FLAGS: Final = (
    "--state-dir",
    "--journal",
    "--node",
    "--lease-seconds",
    "--node-providers",
    "--node-workspaces",
    "--memory-history-mb",
    "--retain-days",
    "--retain-mb",
    "--journal-sync",
    "--journal-writer",
    "--journal-fault-limit",
)


#: where logs go and from which level (``serve``, ``acp``)
LOGGING_FLAGS: Final = ("--log-file", "--log-level")


def add_serve_options(parser: Any) -> None:
    """Add every ``serve`` option to the ``argparse`` (sub)parser ``parser``."""
    for option in SERVE_OPTIONS:
        parser.add_argument(option.flag, **option.argparse_kwargs())


def add_options(
    parser: Any, flags: Sequence[str], defaults: Mapping[str, Any] | None = None
) -> None:
    """Add the ``serve`` options named by ``flags`` (e.g. :data:`JOURNAL_FLAGS`) to the
    ``argparse`` (sub)parser ``parser``, as ``serve`` has them (check, choices, help),
    with the command's own default where ``defaults`` names one (by flag)."""
    for flag in flags:
        kwargs = _BY_FLAG[flag].argparse_kwargs()
        if defaults and flag in defaults:
            kwargs["default"] = defaults[flag]
        parser.add_argument(flag, **kwargs)


def parse_options(items: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` items (each ``--option`` of ``acp`` and ``exec``) as options: a
    VALUE that parses as JSON (``true``, ``3``, ``{"a": 1}``) is that JSON, else the
    string itself; raises ``ValueError`` naming an item without ``=`` or a name."""
    import json

    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--option {item!r}: expected NAME=VALUE")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        out[name] = value
    return out


def _journal_config() -> dict[str, Any]:
    """The ``[journal]`` table of the configuration file (``url``, ``node``,
    ``lease_seconds``, ``writer``, ``providers``, ``workspaces``: what ``--journal``,
    ``--node``, ``--lease-seconds``, ``--journal-writer``, ``--node-providers`` and
    ``--node-workspaces`` say), read
    only when there is a file (the configuration module is not imported otherwise: this
    runs before ``serve``'s first reply)."""
    env = os.environ
    if "AGENT_BRIDGE_CONFIG" in env:
        path = env["AGENT_BRIDGE_CONFIG"]
    elif env.get("XDG_CONFIG_HOME", "").startswith("/"):
        path = os.path.join(env["XDG_CONFIG_HOME"], "agent-bridge", "config.toml")
    else:
        home = env.get("HOME")
        path = os.path.join(home, ".config", "agent-bridge", "config.toml") if home else ""
    if not path or not os.path.isfile(path):
        return {}
    from agent_bridge.config import load_config

    return dict(load_config().section("journal"))


#: ``--journal-writer`` when neither the flag nor the configuration file names one
DEFAULT_WRITER: Final = "auto"


def history_settings(args: Any) -> dict[str, Any]:
    """The keyword arguments of :func:`agent_bridge.journal.open_history` (beside the
    state directory) for the parsed :data:`JOURNAL_FLAGS` in ``args``; ``--journal``,
    ``--node``, ``--lease-seconds``, ``--node-providers`` and ``--node-workspaces`` not
    given on the command line come from the configuration file's ``[journal]`` table
    when it has them."""
    from agent_bridge.journal.retention import Retention

    journal, node, lease = args.journal, args.node, args.lease_seconds
    writer = args.journal_writer
    providers = getattr(args, "node_providers", None)
    roots = getattr(args, "node_workspaces", None)
    table: dict[str, Any] | None = None
    if writer is None:
        table = _journal_config()
        configured = table.get("writer")
        writer = configured if configured in ("auto", "thread", "process") else DEFAULT_WRITER
    if journal is None:
        table = _journal_config() if table is None else table
        url, name, seconds = table.get("url"), table.get("node"), table.get("lease_seconds")
        journal = url if isinstance(url, str) else None
        node = node if node is not None or not isinstance(name, str) else name
        if isinstance(seconds, (int, float)) and seconds > 0 and lease == 15.0:
            lease = float(seconds)
        if providers is None and "providers" in table:
            providers = _from_config(table, "providers", provider_ids, ",")
        if roots is None and "workspaces" in table:
            roots = _from_config(table, "workspaces", workspace_roots, os.pathsep)

    return {
        "retention": Retention(
            max_age_days=args.retain_days,
            max_bytes=None if args.retain_mb is None else int(args.retain_mb * 1024 * 1024),
        ),
        "sync": args.journal_sync,
        "memory_bytes": int(args.memory_history_mb * 1024 * 1024),
        "journal": journal,
        "lease": lease,
        "node": node,
        "writer": writer,
        "providers": providers,
        "roots": roots,
    }


def _from_config(
    table: Mapping[str, Any], key: str, check: Callable[[str], tuple[str, ...]], sep: str
) -> tuple[str, ...]:
    """The ``[journal]`` table's list ``key`` passed through ``check`` (as its flag's
    value); raises :class:`~agent_bridge.journal.JournalError` saying what is wrong."""
    from agent_bridge.journal.errors import JournalError

    value = table[key]
    if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
        raise JournalError(f"the configuration file's [journal] {key}: must be a list of strings")
    try:
        return check(sep.join(value))
    except Exception as exc:
        raise JournalError(f"the configuration file's [journal] {key}: {exc}") from None


def parse_serve(argv: Sequence[str]) -> SimpleNamespace | None:
    """The parsed ``serve`` command line ``argv`` (``["serve", …]``), the same attributes
    ``argparse`` would give (``command`` included), or ``None`` when it is not one this
    function is sure to read as ``argparse`` does (see the module docstring)."""
    if not argv or argv[0] != "serve":
        return None
    given: dict[str, Any] = {}
    i = 1
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("--"):
            return None
        flag, eq, text = token.partition("=")
        option = _BY_FLAG.get(flag)
        if option is None:
            return None
        if option.switch:
            if eq:
                return None
            given[option.dest] = True
            continue
        if not eq:
            if i == len(argv) or argv[i].startswith("-"):
                return None
            text = argv[i]
            i += 1
        try:
            given[option.dest] = option.value(text)
        except Exception:
            return None
    values: dict[str, Any] = {"command": "serve"}
    for option in SERVE_OPTIONS:
        if option.dest in given:
            values[option.dest] = given[option.dest]
        else:
            try:
                values[option.dest] = option.default_value()
            except Exception:
                return None
    return SimpleNamespace(**values)
