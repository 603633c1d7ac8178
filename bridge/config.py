"""The bridge's configuration file: TOML, read once per process, never required.

Where it is, first match wins:

1. the environment variable ``AGENT_BRIDGE_CONFIG`` (a file path; an empty value means
   "no configuration file");
2. ``$XDG_CONFIG_HOME/agent-bridge/config.toml``;
3. ``~/.config/agent-bridge/config.toml``.

A missing file is an empty configuration.  A file that cannot be read or parsed is logged
(without its contents) and treated as empty, so a typo never stops the bridge from
serving; :func:`load_config` with ``strict=True`` raises instead (for tests and tools).

The file is a table of sections, each owned by one part of the bridge (``[acp]`` by the
ACP adapter, see ``docs/providers/acp.md``).  This module knows no section: it finds,
reads and hands out plain dicts.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ENV_CONFIG", "Config", "ConfigError", "config_path", "load_config"]

log = logging.getLogger("agent_bridge.config")

ENV_CONFIG: Final = "AGENT_BRIDGE_CONFIG"
#: A configuration file larger than this is refused (it is a few lines of settings).
MAX_CONFIG_BYTES: Final = 1024 * 1024


class ConfigError(ValueError):
    """The configuration file could not be read or parsed (``strict`` loading only)."""


@dataclass(frozen=True, slots=True)
class Config:
    """A loaded configuration: its sections and the file they came from (``None`` when
    there was none)."""

    data: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None

    def section(self, name: str) -> Mapping[str, Any]:
        """The table ``[name]`` (empty when absent or not a table)."""
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}


def _config_file(env: Mapping[str, str] | None) -> str | None:
    """:func:`config_path` as a string (``pathlib`` is imported only when there is a file
    to read: most bridges have none, and ``load_config`` runs on the first request)."""
    env = os.environ if env is None else env
    if ENV_CONFIG in env:
        return env[ENV_CONFIG] or None
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "agent-bridge", "config.toml")
    home = env.get("HOME")
    return os.path.join(home, ".config", "agent-bridge", "config.toml") if home else None


def config_path(env: Mapping[str, str] | None = None) -> Path | None:
    """Where the configuration file is looked for (see the module doc); ``None`` when
    ``AGENT_BRIDGE_CONFIG`` is set empty or no home directory is known."""
    from pathlib import Path

    file = _config_file(env)
    return None if file is None else Path(file)


def load_config(env: Mapping[str, str] | None = None, *, strict: bool = False) -> Config:
    """Read the configuration file; an absent one is an empty :class:`Config`."""
    file = _config_file(env)
    if file is None:
        return Config()
    try:
        with open(file, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return Config(path=None)
    except OSError as exc:
        return _bad(file, f"cannot be read ({type(exc).__name__})", strict)
    import tomllib
    from pathlib import Path

    if len(raw) > MAX_CONFIG_BYTES:
        return _bad(file, "is too large", strict)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return _bad(file, f"is not valid TOML ({type(exc).__name__})", strict)
    return Config(data=data, path=Path(file))


def _bad(file: str, why: str, strict: bool) -> Config:
    from pathlib import Path

    path = Path(file)
    if strict:
        raise ConfigError(f"{path} {why}")
    log.warning("configuration file %s %s; ignoring it", path, why)
    return Config(path=path)
