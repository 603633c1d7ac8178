"""Discovery for ``providers/list`` with ``probe``: where ``codex`` is, which version, and
whether someone is logged in.

The version comes from ``codex --version`` run by the kit's bounded probe runner
(:func:`agent_bridge.adapters.kit.probe.run_probe`) with a throwaway ``CODEX_HOME``; the
login from a short-lived ``codex app-server`` asked ``account/read`` over the project's
JSON-RPC connection (the kit's :func:`~agent_bridge.adapters.kit.rpc_child.probe_rpc`),
bounded in time as well, started with
:data:`~agent_bridge.adapters.codex.launch.SILENT_CONFIG` (no plugin sync).  Nothing here
talks to the network (``tests/test_silent_probes.py`` checks it in a network namespace).
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, Literal, TypeVar

from agent_bridge.adapters.codex.launch import (
    INSTALL_HINT,
    SILENT_CONFIG,
    child_env,
    find_executable,
)
from agent_bridge.adapters.codex.protocol import AccountReadResponse
from agent_bridge.adapters.kit.probe import run_probe, throwaway_home
from agent_bridge.adapters.kit.rpc_child import probe_rpc, request_quietly
from agent_bridge.processes import ProcessSpec
from agent_bridge.rpc.connection import Connection
from agent_bridge.wire.providers import Availability

__all__ = ["ask_app_server", "parse_version", "probe_auth", "probe_cli", "probe_version"]

log = logging.getLogger("agent_bridge.codex")

Auth = Literal["authenticated", "unauthenticated", "unknown"]
T = TypeVar("T")

_VERSION: Final = re.compile(r"(\d+\.\d+\.\d+(?:[-+.][0-9A-Za-z.\-+]*)?)")


def parse_version(text: str) -> str | None:
    """Return the version in ``codex --version`` output (``codex-cli 0.171.0``) or in an
    ``initialize`` ``userAgent`` (``name/0.171.0 (...)``)."""
    match = _VERSION.search(text)
    return match.group(1) if match else None


async def probe_version(
    executable: str, env: Mapping[str, str], timeout: float = 10.0
) -> str | None:
    """Run ``codex --version`` (bounded in time and output) with a throwaway
    ``CODEX_HOME``, so the probe writes nothing under the user's home; return the
    version, or ``None`` when it cannot be told."""
    with tempfile.TemporaryDirectory(prefix="agent-bridge-codex-") as scratch:
        probe_env = dict(env)
        probe_env["CODEX_HOME"] = scratch
        output = await run_probe(
            (executable, "--version"),
            env=probe_env,
            cwd=scratch,
            timeout=timeout,
            max_output=4096,
            name="codex --version",
        )
    return None if output is None else parse_version(output)


#: what ``account/read`` and ``account/rateLimits/read`` depend on, copied from the
#: user's ``CODEX_HOME``
_AUTH_FILES: Final = ("auth.json", "config.toml")


async def ask_app_server(
    executable: str,
    env: Mapping[str, str],
    what: str,
    ask: Callable[[Connection], Awaitable[T]],
    timeout: float,
) -> T | None:
    """Start a short-lived ``codex app-server`` on a throwaway ``CODEX_HOME`` (and
    ``HOME``) holding copies of the user's ``auth.json`` and ``config.toml``, introduce
    the bridge (``initialize`` as ``agent_bridge_<what>``, then ``initialized``), and
    return ``await ask(conn)``; ``None`` when the child could not be started, failed or
    did not answer within ``timeout`` (see :func:`~agent_bridge.adapters.kit.rpc_child.
    probe_rpc`).  The app-server writes its databases, logs and an installation id in
    ``CODEX_HOME``: nothing of the user's is written."""
    user_home = env.get("CODEX_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".codex"
    )
    copies = {f"codex-home/{name}": os.path.join(user_home, name) for name in _AUTH_FILES}
    with throwaway_home(copies, "agent-bridge-codex-") as scratch:
        codex_home = os.path.join(scratch, "codex-home")
        os.makedirs(codex_home, mode=0o700, exist_ok=True)
        spec = ProcessSpec(
            (executable, "app-server", *(a for c in SILENT_CONFIG for a in ("-c", c))),
            cwd=scratch,
            env={**env, "HOME": scratch, "CODEX_HOME": codex_home},
            stderr_tail_bytes=16 * 1024,
            name=f"codex app-server ({what})",
        )

        async def introduced(conn: Connection) -> T:
            client = {"clientInfo": {"name": f"agent_bridge_{what}", "version": "0"}}
            await request_quietly(conn, "initialize", client)
            conn.notify("initialized")
            return await ask(conn)

        return await probe_rpc(spec, introduced, jsonrpc=False, timeout=timeout, log=log)


async def probe_auth(executable: str, env: Mapping[str, str], timeout: float = 10.0) -> Auth:
    """Ask a short-lived ``codex app-server`` (``initialize`` then ``account/read``)
    whether someone is logged in.  The app-server creates its databases, logs and an
    installation id in ``CODEX_HOME``, and a check writes nothing: it runs on a
    throwaway ``CODEX_HOME`` (and ``HOME``) holding copies of the user's ``auth.json``
    (the login) and ``config.toml`` (which provider, hence whether a login is needed).

    ``authenticated`` when an account is returned; ``unauthenticated`` when none is and
    the configured provider requires an OpenAI login; ``unknown`` otherwise (a provider
    that authenticates with a key variable, an old server without ``account/read``, a
    timeout) — never guessed.
    """

    async def ask(conn: Connection) -> Auth:
        account = await request_quietly(conn, "account/read", {}, result_type=AccountReadResponse)
        if account.account is not None:
            return "authenticated"
        return "unauthenticated" if account.requires_openai_auth else "unknown"

    result = await ask_app_server(executable, env, "probe", ask, timeout)
    return "unknown" if result is None else result


async def probe_cli(environ: Mapping[str, str] | None = None) -> Availability:
    """Probe the machine for ``codex``: executable, version, authentication."""
    env = os.environ if environ is None else environ
    found = find_executable(None, env)
    if found is None:
        return Availability(
            status="unavailable",
            reason="the codex executable was not found",
            next_step=INSTALL_HINT,
        )
    cli_env = child_env(codex_home=None, parent=env)
    version = await probe_version(found.path, cli_env)
    if version is None:
        return Availability(
            status="unavailable",
            executable=found.path,
            reason="codex did not report its version",
            next_step="check the installation: run `codex --version`",
        )
    auth = await probe_auth(found.path, cli_env)
    return Availability(
        status="available",
        executable=found.path,
        version=version,
        authentication=auth,
        next_step="run `codex login`" if auth == "unauthenticated" else None,
    )
