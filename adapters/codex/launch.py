"""How the Codex adapter starts ``codex app-server``: finding the executable, building its
environment, and the argv vector (:class:`Settings`).

Where the executable comes from, first match wins:

1. the session option ``executable`` (a path, or a name looked up on ``PATH``);
2. the environment variable ``AGENT_BRIDGE_CODEX_PATH``;
3. ``codex`` on the bridge's ``PATH``;
4. a global npm installation of ``@openai/codex`` whose ``bin`` is not on ``PATH``
   (prefixes ``$NPM_CONFIG_PREFIX``, ``~/.npm-global``, ``~/.local``, ``/usr/local``,
   ``/usr``, ``/opt/homebrew``: ``bin/codex`` or ``lib/node_modules/@openai/codex``).
   The project-local ``.tools/npm`` that the end-to-end tests use is deliberately not
   searched: tests name the CLI they want through ``AGENT_BRIDGE_CODEX_PATH``;
5. the PyPI package ``openai-codex-cli-bin`` (module ``codex_cli_bin``, binary under its
   ``bin/``), found with :func:`importlib.util.find_spec` without importing it.

A discovered npm launcher (``@openai/codex/bin/codex.js``, a Node script) is replaced by
the native binary it would start, when that binary is there: one process instead of two,
and no dependency on ``node`` being on the child's ``PATH``.  An explicit ``executable`` or
``AGENT_BRIDGE_CODEX_PATH`` is used as given.

The child's environment is the bridge's allowlist (:func:`agent_bridge.processes.build_child_env`)
plus ``CODEX_HOME`` (the ``codexHome`` option, else the bridge's own ``CODEX_HOME`` if set),
``NO_COLOR=1``, Codex's own key variables ``OPENAI_API_KEY`` / ``CODEX_API_KEY``, every
``env_key`` named by a model provider in ``$CODEX_HOME/config.toml`` or in a ``config``
override, and the variables the host names in ``passEnv``.  Nothing else.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from agent_bridge.processes import build_child_env

__all__ = [
    "EFFORTS",
    "ENV_EXECUTABLE",
    "INSTALL_HINT",
    "SILENT_CONFIG",
    "Discovered",
    "Settings",
    "child_env",
    "config_path",
    "find_executable",
    "native_for_launcher",
]

ENV_EXECUTABLE: Final = "AGENT_BRIDGE_CODEX_PATH"
#: What to do when no executable is found.
INSTALL_HINT: Final = (
    "install the Codex CLI (npm package @openai/codex, or the PyPI package "
    f"openai-codex-cli-bin), or point {ENV_EXECUTABLE} or the executable option at it"
)
#: Codex's own key variables for its built-in OpenAI provider.
DEFAULT_KEY_VARIABLES: Final = ("OPENAI_API_KEY", "CODEX_API_KEY")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NATIVE_TARGETS: Final[dict[tuple[str, str], tuple[str, str]]] = {
    ("linux", "x86_64"): ("codex-linux-x64", "x86_64-unknown-linux-musl"),
    ("linux", "aarch64"): ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("linux", "arm64"): ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("darwin", "x86_64"): ("codex-darwin-x64", "x86_64-apple-darwin"),
    ("darwin", "arm64"): ("codex-darwin-arm64", "aarch64-apple-darwin"),
}

Source = Literal["option", "env", "path", "npm", "pypi"]


class Discovered:
    """An executable and where it was found."""

    __slots__ = ("path", "source")

    def __init__(self, path: str, source: Source) -> None:
        self.path = path
        self.source = source

    def __repr__(self) -> str:
        return f"Discovered({self.path!r}, {self.source!r})"


def _executable(path: str | os.PathLike[str]) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def native_for_launcher(path: str) -> str | None:
    """Return the native binary an npm ``codex.js`` launcher would run, if present."""
    try:
        real = Path(path).resolve()
    except OSError:
        return None
    if real.name != "codex.js" or real.parent.name != "bin":
        return None
    package = real.parent.parent  # .../node_modules/@openai/codex
    target = _NATIVE_TARGETS.get((sys.platform, platform.machine().lower()))
    if target is None:
        return None
    platform_package, triple = target
    for vendor in (package.parent / platform_package / "vendor", package / "vendor"):
        binary = vendor / triple / "bin" / "codex"
        if _executable(binary):
            return str(binary)
    return None


def _npm_candidates(env: Mapping[str, str]) -> Iterable[Path]:
    """Global npm prefixes that may not be on ``PATH``: their ``bin/codex`` link, then
    the package's own launcher under ``lib/node_modules``."""
    prefixes: list[Path] = []
    configured = env.get("NPM_CONFIG_PREFIX") or env.get("npm_config_prefix")
    if configured:
        prefixes.append(Path(configured))
    home = env.get("HOME")
    if home:
        prefixes += [Path(home) / ".npm-global", Path(home) / ".local"]
    prefixes += [Path("/usr/local"), Path("/usr"), Path("/opt/homebrew")]
    for prefix in prefixes:
        yield prefix / "bin" / "codex"
        yield prefix / "lib" / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"


def _pypi_binary() -> str | None:
    for module in ("codex_cli_bin", "codex_app_server_bin"):
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            binary = Path(location) / "bin" / "codex"
            if _executable(binary):
                return str(binary)
    return None


def find_executable(
    option: str | None = None, env: Mapping[str, str] | None = None
) -> Discovered | None:
    """Return the ``codex`` executable to run (see the module doc), or ``None``."""
    env = os.environ if env is None else env
    path_var = env.get("PATH", os.defpath)
    if option:
        if os.sep in option:
            return Discovered(option, "option") if _executable(option) else None
        found = shutil.which(option, path=path_var)
        return Discovered(found, "option") if found else None
    override = env.get(ENV_EXECUTABLE)
    if override:
        return Discovered(override, "env") if _executable(override) else None
    found = shutil.which("codex", path=path_var)
    if found:
        return Discovered(native_for_launcher(found) or found, "path")
    for candidate in _npm_candidates(env):
        if _executable(candidate):
            return Discovered(native_for_launcher(str(candidate)) or str(candidate), "npm")
    binary = _pypi_binary()
    return Discovered(binary, "pypi") if binary else None


# ----------------------------------------------------------------------------- environment


def config_path(codex_home: str | None, env: Mapping[str, str]) -> Path | None:
    """Where Codex reads ``config.toml`` for this ``CODEX_HOME`` (``None`` if unknown)."""
    if codex_home:
        return Path(codex_home) / "config.toml"
    home = env.get("HOME")
    return Path(home) / ".codex" / "config.toml" if home else None


def _env_keys_in_config(path: Path | None) -> set[str]:
    if path is None:
        return set()
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return set()
    providers = data.get("model_providers")
    out: set[str] = set()
    if isinstance(providers, dict):
        for provider in providers.values():
            if isinstance(provider, dict) and isinstance(provider.get("env_key"), str):
                out.add(provider["env_key"])
    return out


def _toml_value(text: str) -> Any:
    """Parse a ``-c`` value the way Codex does: TOML, else the literal string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text.strip()


def _env_keys_in_overrides(overrides: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for entry in overrides:
        key, sep, value = entry.partition("=")
        parts = [p.strip().strip('"') for p in key.split(".")]
        if sep and len(parts) == 3 and parts[0] == "model_providers" and parts[2] == "env_key":
            parsed = _toml_value(value)
            if isinstance(parsed, str):
                out.add(parsed)
    return out


def child_env(
    *,
    codex_home: str | None,
    overrides: Sequence[str] = (),
    pass_env: Sequence[str] = (),
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Build the complete environment of a ``codex`` child (see the module doc)."""
    source: Mapping[str, str] = os.environ if parent is None else parent
    home = codex_home or source.get("CODEX_HOME") or None
    declared: dict[str, str] = {"NO_COLOR": "1"}
    if home:
        declared["CODEX_HOME"] = home
    names = set(DEFAULT_KEY_VARIABLES)
    names |= _env_keys_in_config(config_path(home, source))
    names |= _env_keys_in_overrides(overrides)
    names |= set(pass_env)
    names = {n for n in names if _ENV_NAME.fullmatch(n)}
    # each is a key variable or one the host named (passEnv): a credential, whatever its name
    return build_child_env(declared, passthrough=sorted(names), parent=source, secret_names=names)


# ----------------------------------------------------------------------------- argv

#: Config given to every ``codex`` child (probe and session) before the session's own
#: ``config`` entries, which may override it: the plugins feature syncs a curated plugin
#: catalogue from GitHub (and ChatGPT) at start-up, which makes even an ``account/read``
#: probe with an empty Codex home look up ``github.com`` (issue 11, item 8).  A session
#: that wants plugins passes ``config: ["features.plugins=true"]``.
SILENT_CONFIG: Final[tuple[str, ...]] = ("features.plugins=false",)


#: The reasoning efforts the adapter takes (its ``reasoningEffort`` option's values, and
#: what of a ``thread/settings/updated`` effort it keeps).
EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh")


@dataclass(slots=True)
class Settings:
    """Everything needed to spawn the child and open the thread (the thread's effective
    settings are written back after the handshake, for the recovery record)."""

    executable: str
    cwd: str | None
    env: dict[str, str]
    codex_home: str | None = None
    config: tuple[str, ...] = ()
    strict_config: bool = True
    model: str | None = None
    reasoning_effort: str | None = None
    approval_policy: Any = None
    sandbox: str | None = None
    cli_version: str | None = None
    thread_id: str | None = None

    def argv(self) -> tuple[str, ...]:
        """The argv vector: ``codex app-server [--strict-config] (-c key=value)*``, with
        :data:`SILENT_CONFIG` first."""
        argv = [self.executable, "app-server"]
        if self.strict_config:
            argv.append("--strict-config")
        for entry in (*SILENT_CONFIG, *self.config):
            argv += ["-c", entry]
        return tuple(argv)
