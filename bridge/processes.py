"""Spawn and stop provider child processes: the one place the bridge starts a process.

Why this module exists
----------------------
Every agent CLI the bridge drives runs as a child process, and each of the ways that can
go wrong is handled here once, instead of in every adapter:

* **No shell, ever.**  :class:`ProcessSpec` takes an argv *sequence*; a ``str`` is a
  :class:`TypeError`, so prompt text such as ``; rm -rf ~`` or ``$(id)`` can only ever
  reach a child as one literal argv element.  The executable is resolved with
  :func:`shutil.which` semantics against the *child's* ``PATH`` so that a missing binary
  is a typed :class:`SpawnError` ("provider unavailable") rather than a stray
  ``OSError``.
* **An allowlisted environment.**  :func:`build_child_env` starts from nothing and copies
  a short, documented allowlist from the bridge's environment, plus what an adapter
  declares.  ``*_KEY``/``*_TOKEN``/``*_SECRET``/``*_PASSWORD`` variables of the bridge
  never reach a provider by accident.
* **Own process group, parent-death signal, reaper.**  Each child starts a new session
  (``start_new_session=True``), so its whole tree -- including grandchildren that
  inherited our pipes -- can be signalled at once.  On Linux the child also gets
  ``PR_SET_PDEATHSIG = SIGKILL`` (see :func:`_pdeathsig_preexec`), so providers die
  when the bridge itself is killed with SIGKILL and cannot clean up.  The kernel clears
  that setting in the child's own children, so a grandchild would outlive it; the
  :class:`_Reaper` -- one tiny helper process per bridge, started with the first child --
  holds the list of live process groups and SIGKILLs them all when the bridge's end of
  its pipe closes, however the bridge ended.
* **No pipe deadlocks.**  stderr is drained concurrently by a task in the caller's task
  group into a capped tail buffer (only the last ``stderr_tail_bytes`` are kept), so a
  provider that writes megabytes of stderr while stdout is silent never blocks.  stdout
  is buffered up to a fixed high-water mark and then flow-controlled, so memory stays
  bounded when nobody reads.
* **Bounded, cancellation-proof stop.**  :meth:`ChildProcess.stop` escalates stdin EOF
  -> SIGTERM to the group -> SIGKILL to the group, each step with its own budget, always
  reaps the child, kills whatever is left in the group, and runs shielded from
  cancellation so a cancelled owner cannot leak a process or a zombie.
* **Redaction.**  :func:`redact` scrubs API keys and bearer tokens from text such as the
  stderr tail before it can reach a log or an error message.

The project runs anyio on the asyncio backend only.  ``anyio.open_process`` cannot run
code in the child before ``exec`` (it has no ``preexec_fn``), so this module drives
:meth:`asyncio.loop.subprocess_exec` with its own protocol and exposes the pipes as
anyio byte streams (:class:`anyio.abc.ByteReceiveStream` /
:class:`anyio.abc.ByteSendStream`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import functools
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

import anyio
import anyio.abc
import anyio.lowlevel

__all__ = [
    "CHILD_ENV_ALLOWLIST",
    "PDEATHSIG_SUPPORTED",
    "ChildProcess",
    "ProcessSpec",
    "SpawnError",
    "SpawnErrorReason",
    "build_child_env",
    "redact",
    "spawn",
]

logger = logging.getLogger(__name__)

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

#: Default size of the stderr tail kept per child, in bytes.
DEFAULT_STDERR_TAIL_BYTES: Final = 64 * 1024

# Bytes buffered from a child's stdout (or stderr, between drain reads) before reading
# from the pipe is paused; the child then blocks in write() instead of us growing memory.
_READ_HIGH_WATER: Final = 256 * 1024
_READ_LOW_WATER: Final = _READ_HIGH_WATER // 4
_DRAIN_CHUNK: Final = 64 * 1024

# After the final SIGKILL of the group: how long to wait for its members to disappear and
# for the stderr pipe to report EOF before closing it from our side.
_GROUP_GONE_WAIT: Final = 1.0
_STDERR_EOF_WAIT: Final = 0.5
_POLL_INTERVAL: Final = 0.01

_EMPTY_ENV: Final[Mapping[str, str]] = MappingProxyType({})

_ENV_NAME_RE: Final = re.compile(r"[^=\0]+")


# --------------------------------------------------------------------------- errors


SpawnErrorReason = Literal["executable_not_found", "permission_denied", "spawn_failed"]


class SpawnError(Exception):
    """A child process could not be started.

    ``reason`` is one of a closed set, for the caller to map onto the bridge's error
    codes (typically "provider unavailable"):

    * ``"executable_not_found"`` -- ``argv[0]`` is not on the child's ``PATH`` or the
      given path does not exist (also: a script whose ``#!`` interpreter is missing).
    * ``"permission_denied"`` -- the file exists but is not executable (or is a
      directory).
    * ``"spawn_failed"`` -- anything else: a missing working directory, an OS limit, a
      failure while preparing the child.

    ``executable`` is ``argv[0]`` as given (never the rest of argv, which may carry
    user data); ``detail`` is a short description written by this module.
    """

    def __init__(self, reason: SpawnErrorReason, executable: str, detail: str) -> None:
        super().__init__(f"{reason}: {executable!r}: {detail}")
        self.reason: SpawnErrorReason = reason
        self.executable = executable
        self.detail = detail


# --------------------------------------------------------------------------- redaction

_REDACTED: Final = "[REDACTED]"

# Every pattern below runs in linear time on any input: matches start only where the
# previous character cannot continue the match (a lookbehind, not \b, since tokens
# contain "-"), repetitions that could fail late are bounded or possessive, and values
# are matched greedily with nothing after them that could force backtracking.

# Header-style credentials: everything after the colon up to the end of the line/quote.
_AUTH_HEADER_RE: Final = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)[^\"'\r\n]+"
)
_BEARER_RE: Final = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]+=*")
# key=value / "key": "value" where the key names a credential.  No leading \b so that
# FOO_API_KEY=... and x-api-key: ... match at API_KEY / api-key.  A quoted value runs to
# its closing quote or, if there is none, to the end of the line.
_KEY_VALUE_RE: Final = re.compile(
    r"(?i)("
    r"api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|[_-]key"
    r"|client[_-]?secret|secret|access[_-]?token|refresh[_-]?token|id[_-]?token"
    r"|auth[_-]?token|token|passwd|password|credentials?"
    r")"
    r"([\"']?[ \t]*[:=][ \t]*)"
    r"(\"[^\"\r\n]*+\"?|'[^'\r\n]*+'?|[^\s\"',;&}\]]+)"
)
_URL_USERINFO_RE: Final = re.compile(
    r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,31}+://)[^/\s:@]{1,256}+:[^/\s@]{1,256}+@"
)
_TOKEN_SHAPES_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"sk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"  # OpenAI / Anthropic keys
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}+(?![0-9A-Za-z])"  # AWS access key id
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API key
    r"|eyJ[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]*"  # JWT
    r")"
)


def _redact_key_value(match: re.Match[str]) -> str:
    value = match.group(3)
    quote = value[0] if value[0] in "'\"" else ""
    if not quote:
        return f"{match.group(1)}{match.group(2)}{_REDACTED}"
    closing = quote if len(value) > 1 and value.endswith(quote) else ""
    return f"{match.group(1)}{match.group(2)}{quote}{_REDACTED}{closing}"


def redact(text: str) -> str:
    """Return ``text`` with credentials replaced by ``[REDACTED]``.

    Recognised: ``Authorization:`` header values, ``Bearer <token>``, key/value pairs
    whose key names a credential (``api_key=...``, ``"apiKey": "..."``,
    ``x-api-key: ...``, ``FOO_TOKEN=...``, ``password: ...``), ``user:pass@`` in URLs,
    and token shapes that are secrets wherever they appear (``sk-...``, GitHub, Slack,
    AWS and Google keys, JWTs).  The names of keys and headers are kept so the text
    still says *what* was removed.  Never raises; runs in time linear in ``len(text)``.

    This is a safety net for text the bridge did not write (a provider's stderr, an
    upstream error body), not a licence to log secrets.
    """
    text = _AUTH_HEADER_RE.sub(rf"\1{_REDACTED}", text)
    text = _BEARER_RE.sub(rf"\1{_REDACTED}", text)
    text = _KEY_VALUE_RE.sub(_redact_key_value, text)
    text = _URL_USERINFO_RE.sub(rf"\1{_REDACTED}@", text)
    return _TOKEN_SHAPES_RE.sub(_REDACTED, text)


_redact = redact  # ChildProcess.stderr_tail has a parameter named ``redact``.


# --------------------------------------------------------------------------- environment


def _check_env_entry(name: str, value: str) -> None:
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
            _check_env_entry(name, value)
            env[name] = value
    for name, value in declared.items():
        _check_env_entry(name, value)
        env[name] = value
    return env


# --------------------------------------------------------------------------- spec


@dataclass(frozen=True)
class ProcessSpec:
    """What to run: an argv vector, a working directory and the *complete* environment.

    ``argv`` may be given as a tuple or list of ``str`` and is stored as a tuple;
    ``argv[0]`` is looked up on ``env["PATH"]`` unless it contains a ``/`` (a relative
    path is taken relative to ``cwd``).  ``env`` is used as is -- build it with
    :func:`build_child_env`.  ``stderr_tail_bytes`` caps the stderr kept in memory.
    ``name`` labels the child in logs (default: the basename of ``argv[0]``).

    Raises :class:`TypeError` if ``argv`` is a ``str``/``bytes`` or holds a non-``str``
    item, and :class:`ValueError` if ``argv`` is empty, ``argv[0]`` is empty, any
    argument or environment entry contains a NUL byte, or ``stderr_tail_bytes < 0``.
    """

    argv: tuple[str, ...]
    cwd: str | None
    env: Mapping[str, str] = field(hash=False)
    stderr_tail_bytes: int = DEFAULT_STDERR_TAIL_BYTES
    name: str = ""

    def __post_init__(self) -> None:
        argv: object = self.argv
        if isinstance(argv, (str, bytes, bytearray)):
            raise TypeError(
                "argv must be a sequence of str, not a single string: the bridge never "
                "runs a command line through a shell"
            )
        if not isinstance(argv, (tuple, list)):
            raise TypeError(f"argv must be a tuple or list of str, got {type(argv).__name__}")
        items = tuple(argv)
        if not items:
            raise ValueError("argv must not be empty")
        for index, arg in enumerate(items):
            if not isinstance(arg, str):
                raise TypeError(f"argv[{index}] must be str, got {type(arg).__name__}")
            if "\0" in arg:
                raise ValueError(f"argv[{index}] contains a NUL byte")
        if not items[0]:
            raise ValueError("argv[0] must not be empty")
        if self.cwd is not None and (not isinstance(self.cwd, str) or "\0" in self.cwd):
            raise ValueError("cwd must be a str without NUL bytes, or None")
        if not isinstance(self.env, Mapping):
            raise TypeError("env must be a mapping of str to str")
        env = dict(self.env)
        for key, value in env.items():
            _check_env_entry(key, value)
        if (
            isinstance(self.stderr_tail_bytes, bool)
            or not isinstance(self.stderr_tail_bytes, int)
            or self.stderr_tail_bytes < 0
        ):
            raise ValueError("stderr_tail_bytes must be a non-negative int")
        object.__setattr__(self, "argv", items)
        object.__setattr__(self, "env", MappingProxyType(env))
        if not self.name:
            object.__setattr__(self, "name", os.path.basename(items[0]) or items[0])


# --------------------------------------------------------------------------- resolution


def _check_executable_file(path: str, argv0: str) -> None:
    if not os.path.exists(path):
        raise SpawnError("executable_not_found", argv0, "no such file")
    if os.path.isdir(path):
        raise SpawnError("permission_denied", argv0, "is a directory")
    if not os.access(path, os.X_OK):
        raise SpawnError("permission_denied", argv0, "not executable")


def _resolve_executable(argv0: str, env: Mapping[str, str], cwd: str | None) -> str:
    """Return an absolute path for ``argv0`` as ``execvpe`` in the child would find it.

    Raises :class:`SpawnError` (``executable_not_found`` / ``permission_denied``).
    """
    if "/" in argv0:
        path = argv0 if os.path.isabs(argv0) or cwd is None else os.path.join(cwd, argv0)
        _check_executable_file(path, argv0)
        return os.path.abspath(path)
    search_path = env.get("PATH", os.defpath)
    found = shutil.which(argv0, path=search_path)
    if found is not None:
        return os.path.abspath(found)
    for directory in search_path.split(os.pathsep):
        candidate = os.path.join(directory or os.curdir, argv0)
        if os.path.isfile(candidate):
            raise SpawnError("permission_denied", argv0, "found on PATH but not executable")
    raise SpawnError("executable_not_found", argv0, "not found on the child's PATH")


# --------------------------------------------------------------------------- pdeathsig

_PR_SET_PDEATHSIG: Final = 1


@functools.cache
def _load_prctl() -> Callable[..., int] | None:
    """Return libc's ``prctl`` through ctypes, or ``None`` where it does not exist."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):  # pragma: no cover - every Linux libc has prctl
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


#: Whether children get a parent-death signal on this platform (Linux only).
PDEATHSIG_SUPPORTED: Final[bool] = _load_prctl() is not None


def _pdeathsig_preexec(parent_pid: int) -> Callable[[], None] | None:
    """Return a ``preexec_fn`` that sets ``PR_SET_PDEATHSIG = SIGKILL`` in the child.

    It runs in the forked child before ``exec`` (after ``setsid``).  The signal is sent
    when the *thread* that forked the child exits; asyncio forks from the event-loop
    thread, which lives as long as the bridge.  If the bridge died between ``fork`` and
    ``prctl`` the signal would never come, so the child checks ``getppid()`` afterwards
    and kills itself if it has already been orphaned.  The setting survives ``execve``
    (it is only cleared for set-user-ID/capability binaries).

    Raising here makes the spawn fail with :class:`subprocess.SubprocessError`, which
    :func:`spawn` reports as ``SpawnError("spawn_failed")``.
    """
    prctl = _load_prctl()
    if prctl is None:
        return None
    sigkill = int(signal.SIGKILL)

    def _set_pdeathsig() -> None:
        if prctl(_PR_SET_PDEATHSIG, sigkill, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent_pid:
            os.kill(os.getpid(), sigkill)

    return _set_pdeathsig


# --------------------------------------------------------------------------- reaper

# The reaper's whole program.  It reads "+PGID" / "-PGID" lines on stdin, and at EOF --
# the bridge exited or was killed, and the kernel closed its end of the pipe -- it sends
# SIGKILL to every process group still listed.  It ignores SIGINT (a Ctrl-C in a
# terminal is the bridge's business; the EOF follows) and runs with -I -S, cwd "/" and an
# empty environment so it starts in milliseconds and pins nothing.
_REAPER_PROGRAM: Final = """
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups, pending = set(), b""
while True:
    try:
        data = os.read(0, 4096)
    except OSError:
        break
    if not data:
        break
    pending += data
    *lines, pending = pending.split(b"\\n")
    for line in lines:
        if line[1:].isdigit() and int(line[1:]) > 1:
            (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


class _Reaper:
    """Kills the process groups of live children if the bridge dies without stopping them.

    ``PR_SET_PDEATHSIG`` covers a child but not its own children: the kernel clears the
    setting across ``fork``, so after a SIGKILL of the bridge a provider's grandchild (a
    tool it ran, a language server) would be orphaned and live on.  Nothing inside the
    bridge can act once it is killed, so one helper process per bridge does: it is told
    each child's process group as the child starts (``register``) and when it is gone
    (``unregister``), and at EOF on its stdin -- which the kernel delivers when the
    bridge's last descriptor of the pipe closes, at exit or at SIGKILL -- it SIGKILLs the
    groups still listed.  Children never inherit the pipe (``close_fds``), so only the
    bridge's death closes it.

    The helper is started lazily with the first child (a bridge that only runs the
    scripted provider never has one), restarted if it dies, and told the whole list
    again then.  Everything here is best effort: failures are logged, never raised, and
    spawning works without a reaper.  Limits: a grandchild that leaves its group
    (``setsid``) escapes it, as it escapes the group kill of :meth:`ChildProcess.stop`.
    """

    def __init__(self) -> None:
        self.enabled = os.name == "posix" and bool(sys.executable)
        self._proc: subprocess.Popen[bytes] | None = None
        self._groups: set[int] = set()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The helper's pid while it runs (for tests)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def register(self, pgid: int) -> None:
        """Add ``pgid`` to the groups killed if the bridge dies."""
        if pgid > 1:
            with self._lock:
                self._groups.add(pgid)
                self._send(b"+%d\n" % pgid)

    def unregister(self, pgid: int) -> None:
        """Remove ``pgid`` (its group is gone, so the id may be reused)."""
        with self._lock:
            if pgid in self._groups:
                self._groups.discard(pgid)
                self._send(b"-%d\n" % pgid)

    def _start(self) -> subprocess.Popen[bytes] | None:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _REAPER_PROGRAM],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={},
                close_fds=True,
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            logger.warning("could not start the process reaper: %s", type(exc).__name__)
            return None
        logger.debug("process reaper started (pid %d)", proc.pid)
        return proc

    def _send(self, line: bytes) -> None:
        if not self.enabled:
            return
        for _attempt in range(2):
            proc = self._proc
            fresh = False
            if proc is None or proc.poll() is not None:
                if proc is not None:  # it died: release its pipe before starting another
                    self._close(proc, wait=0)
                proc = self._proc = self._start()
                fresh = True
                if proc is None:
                    return
            assert proc.stdin is not None
            data = b"".join(b"+%d\n" % g for g in sorted(self._groups)) if fresh else line
            try:
                if data:
                    os.write(proc.stdin.fileno(), data)
                return
            except OSError:  # it died (EPIPE): start another one and tell it everything
                self._close(proc, wait=0)
                self._proc = None

    @staticmethod
    def _close(proc: subprocess.Popen[bytes], wait: float) -> None:
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)

    def close(self) -> None:
        """At a normal exit: EOF to the helper (it kills any group still listed) and reap it."""
        with self._lock:
            proc, self._proc = self._proc, None
            if proc is not None:
                self._close(proc, wait=2.0)


_reaper = _Reaper()
atexit.register(_reaper.close)


# --------------------------------------------------------------------------- streams


class _PipeReceiveStream(anyio.abc.ByteReceiveStream):
    """The read end of a child's stdout or stderr pipe, as an anyio byte stream.

    Fed by the subprocess protocol; pauses the pipe once ``_READ_HIGH_WATER`` bytes are
    buffered and resumes below ``_READ_LOW_WATER``.  ``receive`` raises
    :class:`anyio.EndOfStream` at EOF and :class:`anyio.ClosedResourceError` after
    ``aclose``.  ``aclose`` never raises (other than by cancellation).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._eof = False
        self._closed = False
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._waiter: anyio.Event | None = None
        self._receiving = False

    def _attach(self, transport: asyncio.BaseTransport | None) -> None:
        if isinstance(transport, asyncio.ReadTransport):
            self._transport = transport

    def _wake(self) -> None:
        if self._waiter is not None:
            self._waiter.set()
            self._waiter = None

    def _feed(self, data: bytes) -> None:
        if self._closed:
            return
        self._buffer += data
        self._wake()
        if (
            not self._paused
            and len(self._buffer) >= _READ_HIGH_WATER
            and self._transport is not None
            and not self._transport.is_closing()
        ):
            self._transport.pause_reading()
            self._paused = True

    def _feed_eof(self) -> None:
        self._eof = True
        self._wake()

    def _close(self) -> None:
        self._closed = True
        self._buffer.clear()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
        self._wake()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """Return up to ``max_bytes`` (at least one) bytes from the pipe.

        Raises :class:`anyio.EndOfStream` once the child's end is closed and all data has
        been returned, :class:`anyio.ClosedResourceError` after ``aclose``, and
        :class:`anyio.BusyResourceError` if another task is already receiving.
        """
        if max_bytes < 1:
            raise ValueError("max_bytes must be a positive integer")
        if self._receiving:
            raise anyio.BusyResourceError("receiving from")
        self._receiving = True
        try:
            await anyio.lowlevel.checkpoint()
            while True:
                if self._closed:
                    raise anyio.ClosedResourceError
                if self._buffer:
                    break
                if self._eof:
                    raise anyio.EndOfStream
                waiter = self._waiter = anyio.Event()
                await waiter.wait()
        finally:
            self._receiving = False
        chunk = bytes(self._buffer[:max_bytes])
        del self._buffer[:max_bytes]
        if self._paused and len(self._buffer) <= _READ_LOW_WATER:
            self._paused = False
            if self._transport is not None and not self._transport.is_closing():
                self._transport.resume_reading()
        return chunk

    async def aclose(self) -> None:
        """Close our end of the pipe; buffered data is discarded.  Idempotent."""
        self._close()
        await anyio.lowlevel.checkpoint()


class _PipeSendStream(anyio.abc.ByteSendStream):
    """The write end of a child's stdin pipe, as an anyio byte stream.

    ``send`` waits while the pipe's write buffer is above asyncio's high-water mark.  It
    raises :class:`anyio.BrokenResourceError` once the child has closed its end (e.g.
    exited) and :class:`anyio.ClosedResourceError` after ``aclose``.  ``aclose`` flushes
    what is buffered in the background and never raises (other than by cancellation).
    """

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self._transport = transport
        self._closed = False
        self._lost = False
        self._paused = False
        self._waiter: anyio.Event | None = None

    def _wake(self) -> None:
        if self._waiter is not None:
            self._waiter.set()
            self._waiter = None

    def _pause(self) -> None:
        self._paused = True

    def _resume(self) -> None:
        self._paused = False
        self._wake()

    def _connection_lost(self) -> None:
        self._lost = True
        self._wake()

    def _abort(self) -> None:
        """Close the pipe now, dropping unsent data: the child sees EOF at once."""
        self._closed = True
        transport = self._transport
        # abort() on a pipe transport that is already shutting down would schedule its
        # connection_lost twice; only abort if it is open or still flushing data.
        if not self._lost and (not transport.is_closing() or transport.get_write_buffer_size() > 0):
            transport.abort()
        self._wake()

    async def send(self, item: bytes) -> None:
        """Write ``item`` to the child's stdin, waiting while the pipe is full."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise anyio.ClosedResourceError
        if self._lost or self._transport.is_closing():
            raise anyio.BrokenResourceError
        self._transport.write(item)
        while self._paused:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._lost:
                raise anyio.BrokenResourceError
            waiter = self._waiter = anyio.Event()
            await waiter.wait()
        await anyio.lowlevel.cancel_shielded_checkpoint()

    async def aclose(self) -> None:
        """Close our end of stdin (the child sees EOF once buffered data is written)."""
        if not self._closed:
            self._closed = True
            if not self._lost and not self._transport.is_closing():
                self._transport.close()
            self._wake()
        await anyio.lowlevel.checkpoint()


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Routes asyncio's subprocess callbacks to the streams and the exit event."""

    def __init__(self) -> None:
        self.stdout = _PipeReceiveStream()
        self.stderr = _PipeReceiveStream()
        self.stdin: _PipeSendStream | None = None
        self.exited = anyio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        stdin = transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        self.stdin = _PipeSendStream(stdin)
        self.stdout._attach(transport.get_pipe_transport(1))
        self.stderr._attach(transport.get_pipe_transport(2))

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.stdout._feed(data)
        elif fd == 2:
            self.stderr._feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 0:
            if self.stdin is not None:
                self.stdin._connection_lost()
        elif fd == 1:
            self.stdout._feed_eof()
        elif fd == 2:
            self.stderr._feed_eof()

    def process_exited(self) -> None:
        self.exited.set()

    def pause_writing(self) -> None:
        if self.stdin is not None:
            self.stdin._pause()

    def resume_writing(self) -> None:
        if self.stdin is not None:
            self.stdin._resume()


class _TailBuffer:
    """Keeps the last ``limit`` bytes written to it and counts all of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._data = bytearray()

    def append(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.limit == 0:
            return
        if len(chunk) >= self.limit:
            self._data[:] = chunk[-self.limit :]
            return
        self._data += chunk
        excess = len(self._data) - self.limit
        if excess > 0:
            del self._data[:excess]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._data)

    def getvalue(self) -> bytes:
        return bytes(self._data)


# --------------------------------------------------------------------------- child


class ChildProcess:
    """A running child started by :func:`spawn`.

    ``stdin`` and ``stdout`` are anyio byte streams; stderr is drained by a task in the
    task group given to :func:`spawn` and only its tail is kept (:meth:`stderr_tail`).
    That task ends when the child's stderr reaches EOF or :meth:`stop` runs, so the task
    group does not exit before then: call :meth:`stop` (e.g. in a ``finally``) to end a
    child's life deterministically.

    ``pid`` is also the process-group id (``pgid``): the child leads its own session.
    """

    def __init__(
        self,
        spec: ProcessSpec,
        transport: asyncio.SubprocessTransport,
        protocol: _ChildProtocol,
        stdin: _PipeSendStream,
    ) -> None:
        pid = transport.get_pid()
        self.spec = spec
        self.name = spec.name
        self.pid: int = pid
        self.pgid: int = pid
        self.stdin: anyio.abc.ByteSendStream = stdin
        self.stdout: anyio.abc.ByteReceiveStream = protocol.stdout
        self._stdin = stdin
        self._transport = transport
        self._protocol = protocol
        self._tail = _TailBuffer(spec.stderr_tail_bytes)
        self._drain_scope = anyio.CancelScope()
        self._drain_started = False
        self._drain_done = anyio.Event()
        self._stop_lock = anyio.Lock()
        self._stop_result: int | None = None

    def __repr__(self) -> str:
        return f"<ChildProcess {self.name!r} pid={self.pid} returncode={self.returncode}>"

    @property
    def returncode(self) -> int | None:
        """The exit status once the child has been reaped, else ``None``.

        Negative ``-N`` means the child was killed by signal ``N`` (as in
        :attr:`subprocess.Popen.returncode`).
        """
        return self._transport.get_returncode()

    @property
    def stderr_bytes_received(self) -> int:
        """How many bytes of stderr have been drained so far (kept or not)."""
        return self._tail.total

    async def wait(self) -> int:
        """Wait until the child exits and is reaped; return :attr:`returncode`.

        Returns as soon as the child itself has exited, even if a grandchild still holds
        its pipes open.  Cancellable; does not signal or stop anything.
        """
        await self._protocol.exited.wait()
        code = self._transport.get_returncode()
        assert code is not None
        return code

    def stderr_tail(self, redact: bool = True) -> str:
        """Return the last ``spec.stderr_tail_bytes`` bytes of stderr as text.

        Decoded as UTF-8 with ``errors="replace"``.  With ``redact=True`` (the default)
        secrets are removed with :func:`redact`, and when older output was discarded the
        partial first line is dropped too, since a secret cut in half is no longer
        recognisable.  ``redact=False`` returns the raw tail, for tests and local
        debugging only.
        """
        data = self._tail.getvalue()
        if not redact:
            return data.decode("utf-8", errors="replace")
        if self._tail.truncated:
            newline = data.find(b"\n")
            data = data[newline + 1 :] if newline != -1 else b""
        return _redact(data.decode("utf-8", errors="replace"))

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the child (not its group) if it has not been reaped yet."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signum)

    def _group_exists(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    async def _drain_stderr(self) -> None:
        """Read stderr into the tail buffer until EOF, close, or cancellation."""
        self._drain_started = True
        try:
            with self._drain_scope:
                while True:
                    try:
                        chunk = await self._protocol.stderr.receive(_DRAIN_CHUNK)
                    except (anyio.EndOfStream, anyio.ClosedResourceError):
                        break
                    self._tail.append(chunk)
        finally:
            self._drain_done.set()

    async def _exited_within(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self._protocol.exited.wait()
        return self._protocol.exited.is_set()

    async def stop(
        self, *, eof_grace: float = 2.0, term_grace: float = 2.0, kill_grace: float = 5.0
    ) -> int:
        """Stop the child and everything in its process group; return its exit status.

        Steps, each skipped once the child has exited:

        1. close stdin (EOF) and wait up to ``eof_grace`` seconds;
        2. SIGTERM to the process group, wait up to ``term_grace``;
        3. SIGKILL to the process group, wait up to ``kill_grace`` for the reap.

        Then, always: SIGKILL whatever is left in the group (grandchildren that kept our
        pipes open), wait briefly for it to disappear, and close our ends of all pipes
        (which never raises).  The whole sequence is shielded from cancellation and
        bounded by its own deadlines (about ``eof_grace + term_grace + kill_grace +
        1.5`` seconds at worst), so a cancelled caller still leaves no process or
        zombie behind; the cancellation is delivered after ``stop`` returns.

        Idempotent: concurrent and later calls return the same status.  Raises
        :class:`TimeoutError` only if the child survives SIGKILL for ``kill_grace``
        seconds (stuck in the kernel); the child will still be reaped when it exits.
        """
        if min(eof_grace, term_grace, kill_grace) < 0:
            raise ValueError("grace periods must be non-negative")
        with anyio.CancelScope(shield=True):
            async with self._stop_lock:
                if self._stop_result is None:
                    self._stop_result = await self._stop_once(eof_grace, term_grace, kill_grace)
                code = self._stop_result
        return code

    async def _stop_once(self, eof_grace: float, term_grace: float, kill_grace: float) -> int:
        self._stdin._abort()
        if not await self._exited_within(eof_grace):
            logger.debug("%s (pid %d): no exit after stdin EOF; SIGTERM", self.name, self.pid)
            self._signal_group(signal.SIGTERM)
            if not await self._exited_within(term_grace):
                logger.warning("%s (pid %d): no exit after SIGTERM; SIGKILL", self.name, self.pid)
                self._signal_group(signal.SIGKILL)
                await self._exited_within(kill_grace)
        # Grandchildren may outlive the leader and keep our pipes open.
        self._signal_group(signal.SIGKILL)
        with anyio.move_on_after(_GROUP_GONE_WAIT):
            while self._group_exists():
                await anyio.sleep(_POLL_INTERVAL)
        if not self._group_exists():
            _reaper.unregister(self.pgid)
        if self._drain_started:
            with anyio.move_on_after(_STDERR_EOF_WAIT):
                await self._drain_done.wait()
        self._drain_scope.cancel()
        self._protocol.stdout._close()
        self._protocol.stderr._close()
        self._transport.close()
        code = self._transport.get_returncode()
        if code is None:
            raise TimeoutError(
                f"{self.name} (pid {self.pid}) did not exit {kill_grace}s after SIGKILL"
            )
        logger.debug("%s (pid %d) stopped with status %d", self.name, self.pid, code)
        return code


# --------------------------------------------------------------------------- spawn


async def spawn(spec: ProcessSpec, task_group: anyio.abc.TaskGroup) -> ChildProcess:
    """Start ``spec`` as a child process and return it running.

    The child runs without a shell, in a new session and process group, with exactly
    ``spec.env`` as its environment, ``spec.cwd`` as its working directory, pipes on
    stdin/stdout/stderr and no other inherited file descriptors; on Linux it is killed
    with SIGKILL if the bridge dies (``PR_SET_PDEATHSIG``).  A task draining stderr is
    started in ``task_group``.

    Must run on the asyncio backend, in the thread running the event loop (the
    parent-death signal is tied to the thread that forks).

    Raises :class:`SpawnError` with ``reason`` ``"executable_not_found"``,
    ``"permission_denied"`` or ``"spawn_failed"``.  If the caller is cancelled while
    spawning, the child is stopped before the cancellation propagates.
    """
    executable = _resolve_executable(spec.argv[0], spec.env, spec.cwd)
    loop = asyncio.get_running_loop()
    protocol = _ChildProtocol()
    argv0 = spec.argv[0]
    try:
        with anyio.CancelScope(shield=True):
            transport, _ = await loop.subprocess_exec(
                lambda: protocol,
                *spec.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                executable=executable,
                cwd=spec.cwd,
                env=dict(spec.env),
                close_fds=True,
                start_new_session=True,
                preexec_fn=_pdeathsig_preexec(os.getpid()),
            )
    except FileNotFoundError as exc:
        if spec.cwd is not None and not os.path.isdir(spec.cwd):
            raise SpawnError("spawn_failed", argv0, "working directory not found") from exc
        raise SpawnError(
            "executable_not_found", argv0, "executable or its interpreter not found"
        ) from exc
    except PermissionError as exc:
        raise SpawnError("permission_denied", argv0, "permission denied") from exc
    except (OSError, subprocess.SubprocessError) as exc:
        raise SpawnError("spawn_failed", argv0, type(exc).__name__) from exc
    stdin = protocol.stdin
    if stdin is None:  # pragma: no cover - asyncio calls connection_made first
        stdin_transport = transport.get_pipe_transport(0)
        assert isinstance(stdin_transport, asyncio.WriteTransport)
        stdin = protocol.stdin = _PipeSendStream(stdin_transport)
    child = ChildProcess(spec, transport, protocol, stdin)
    _reaper.register(child.pgid)
    logger.debug("spawned %s (pid %d)", spec.name, child.pid)
    try:
        task_group.start_soon(child._drain_stderr, name=f"stderr drain: {spec.name}")
        await anyio.lowlevel.checkpoint_if_cancelled()
    except BaseException:
        await child.stop(eof_grace=0, term_grace=0)
        raise
    return child
