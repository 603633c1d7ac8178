"""The environment a provider child process gets: an allowlist, never a copy.

Why this module exists: every adapter builds its child's environment, and the rule that
keeps the bridge's credentials away from providers -- start from nothing, copy a short
documented allowlist, add only what the adapter declares or names -- must be written
once.  :func:`check_env_entry` is also what :class:`~agent_bridge.processes.ProcessSpec` uses
to validate a complete environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from agent_bridge.redaction import remember_secrets

__all__ = ["CHILD_ENV_ALLOWLIST", "build_child_env", "check_env_entry", "names_a_credential"]

#: Variables copied from the bridge's own environment into every child, and why:
#:
#: * ``PATH`` -- provider CLIs are often scripts that locate their interpreter (``node``)
#:   through ``PATH``.
#: * ``HOME`` -- CLIs keep their configuration and login state under the home directory.
#: * ``USER``, ``LOGNAME`` -- some tools look the current user up by name.
#: * ``LANG``, ``LC_ALL``, ``LC_CTYPE`` -- so the child speaks UTF-8 on its pipes.
#: * ``TMPDIR`` -- where the child may put temporary files.
#: * ``TZ`` -- timestamps in the child's logs match the bridge's.
#:
#: Deliberately absent: ``TERM`` (a child has no terminal; pretending it has one invites
#: colour codes on a protocol pipe), ``SHELL`` (nothing is ever run through a shell),
#: proxy and CA-bundle variables and every credential: an adapter that needs one
#: declares it (``declared=``) or names it (``passthrough=``).
CHILD_ENV_ALLOWLIST: Final[frozenset[str]] = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"}
)


_EMPTY_ENV: Final[Mapping[str, str]] = MappingProxyType({})

_ENV_NAME_RE: Final = re.compile(r"[^=\0]+")

#: a variable whose name says it holds a credential (``ANTHROPIC_AUTH_TOKEN``,
#: ``AWS_SECRET_ACCESS_KEY``, ``OPENAI_API_KEY``, ``DB_PASSWORD``,
#: ``GOOGLE_APPLICATION_CREDENTIALS``)
_CREDENTIAL_NAME_RE: Final = re.compile(
    r"(?i)(key|token|secret|passw(or)?d|credential|auth(?!or)|cookie)"
)


def names_a_credential(name: str) -> bool:
    """Whether the variable ``name`` says it holds a credential."""
    return _CREDENTIAL_NAME_RE.search(name) is not None


def check_env_entry(name: str, value: str) -> None:
    """Check one environment entry; return nothing.

    Raises :class:`TypeError` for a non-``str`` name or value and :class:`ValueError` for
    an empty name, a name containing ``=`` or NUL, or a value containing NUL.
    """
    if not isinstance(name, str) or not isinstance(value, str):
        raise TypeError(f"environment names and values must be str, got {name!r}")
    if not _ENV_NAME_RE.fullmatch(name):
        raise ValueError(f"invalid environment variable name {name!r}")
    if "\0" in value:
        raise ValueError(f"environment variable {name!r} contains a NUL byte")


def build_child_env(
    declared: Mapping[str, str] = _EMPTY_ENV,
    *,
    passthrough: Iterable[str] = (),
    parent: Mapping[str, str] | None = None,
    secret_names: Iterable[str] = (),
) -> dict[str, str]:
    """Build the complete environment for a child process, from an allowlist.

    The result holds, in increasing precedence:

    1. the variables of :data:`CHILD_ENV_ALLOWLIST` that are set in ``parent``;
    2. the variables named in ``passthrough`` that are set in ``parent`` (an adapter's
       explicit choice, e.g. ``("ANTHROPIC_API_KEY",)``); names not set are skipped;
    3. ``declared`` -- values the adapter computed itself.

    ``parent`` defaults to :data:`os.environ`.  Nothing else is copied: a credential in
    the bridge's environment (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD`` ...)
    reaches the child only if it is declared or passed through by name.

    Every credential given to the child is remembered for redaction by value
    (:func:`agent_bridge.redaction.remember_secrets`): the values of passed-through or
    declared variables whose name says they hold one (:func:`names_a_credential`) and of
    every name in ``secret_names`` (what a host or a configuration chose to pass: the
    ``env`` and ``passEnv`` options), so the child's own output cannot print them into a
    log whatever they look like.

    Returns a new ``dict``.  Raises :class:`TypeError` for a non-``str`` name or value
    and :class:`ValueError` for an empty name, a name containing ``=`` or NUL, or a
    value containing NUL.
    """
    source: Mapping[str, str] = os.environ if parent is None else parent
    if isinstance(passthrough, str):
        raise TypeError("passthrough must be an iterable of names, not a str")
    env: dict[str, str] = {}
    for name in sorted(CHILD_ENV_ALLOWLIST):
        value = source.get(name)
        if value is not None:
            env[name] = value
    for name in passthrough:
        value = source.get(name)
        if value is not None:
            check_env_entry(name, value)
            env[name] = value
    for name, value in declared.items():
        check_env_entry(name, value)
        env[name] = value
    secret = set(secret_names)
    remember_secrets(
        value
        for name, value in env.items()
        if name not in CHILD_ENV_ALLOWLIST and (name in secret or names_a_credential(name))
    )
    return env
