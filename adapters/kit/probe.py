"""A bounded probe runner for ``providers/list`` with ``probe``.

The SPI asks probes to be argv vectors with bounded output and time
(:meth:`agent_bridge.spi.AgentProvider.probe`).  :func:`run_probe` is that, once: the
command is spawned through :mod:`agent_bridge.processes` (no shell, allowlisted
environment, own process group), stdin is closed at once (a CLI that would read a prompt
sees EOF), at most ``max_output`` bytes of stdout are read within ``timeout`` seconds,
and the child is stopped — with everything it started — before the result is returned.

A probe is a check, and a check writes nothing: not under the user's home either (a CLI
asked for its version or login state may create its configuration directory, a
``.claude.json``, a ``~/.codex`` full of databases).  :func:`throwaway_home` gives a
probe a temporary home holding read-only copies of the user's files the CLI reads for
the check (its credentials, its settings), so what the probe reports is the user's
state and whatever the CLI writes is deleted with it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

import anyio

from agent_bridge.processes import ProcessSpec, SpawnError, spawn

__all__ = ["DEFAULT_MAX_OUTPUT", "DEFAULT_TIMEOUT", "run_probe", "throwaway_home"]

log = logging.getLogger("agent_bridge.provider.probe")

DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_MAX_OUTPUT: Final = 64 * 1024

_STREAM_ENDED: Final = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


async def run_probe(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    name: str = "probe",
) -> str | None:
    """Run ``argv`` and return its stdout decoded as UTF-8 (``errors="replace"``), cut
    to ``max_output`` bytes.

    Returns ``None`` when the command could not be started (not found, not executable,
    a bad ``cwd``) or did not end its output within ``timeout`` seconds.  Reaching
    ``max_output`` is not a failure: the output so far is returned and the child is
    stopped.  Never raises for the child's behaviour; a ``str`` ``argv`` is a
    :class:`TypeError` (no shell, ever).
    """
    if isinstance(argv, (str, bytes)):
        raise TypeError("argv must be a sequence of arguments, not a string (no shell)")
    spec = ProcessSpec(tuple(argv), cwd=cwd, env=env, stderr_tail_bytes=4096, name=name)
    data = bytearray()
    complete = False
    async with anyio.create_task_group() as tg:
        # Inside the group: an error raised here must not come out as an ExceptionGroup.
        try:
            child = await spawn(spec, tg)
        except (SpawnError, OSError) as exc:
            log.info("%s could not run: %s", name, type(exc).__name__)
            return None
        try:
            await child.stdin.aclose()
            with anyio.move_on_after(timeout):
                while len(data) < max_output:
                    try:
                        data += await child.stdout.receive(max_output - len(data))
                    except _STREAM_ENDED:
                        break
                complete = True
        finally:
            with contextlib.suppress(TimeoutError):
                await child.stop(eof_grace=0.5, term_grace=1.0, kill_grace=2.0)
    if not complete:
        log.info("%s did not finish within %.0f s", name, timeout)
        return None
    return data[:max_output].decode("utf-8", errors="replace")


@contextlib.contextmanager
def throwaway_home(copies: Mapping[str, str | None], prefix: str) -> Iterator[str]:
    """Yield a new private temporary directory holding, for each ``relative: source`` of
    ``copies``, a copy of the file ``source`` (when it exists and is readable) at
    ``relative``; the directory is removed afterwards.  The sources are only read."""
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        for relative, source in copies.items():
            if not source or not os.path.isfile(source):
                continue
            target = os.path.join(scratch, relative)
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copyfile(source, target)
                os.chmod(target, 0o600)
        yield scratch
