"""Start and stop provider child processes: the one module of the bridge that starts a
process.

Why this module exists
----------------------
Every agent CLI the bridge drives runs as a child process, and each of the ways that can
go wrong is handled here once, instead of in every adapter (the static policy test
``tests/hardening/test_hard_static_spawn.py`` allows process creation in this module
only):

* **No shell, ever.**  :class:`ProcessSpec` takes an argv *sequence*; a ``str`` is a
  :class:`TypeError`, so prompt text such as ``; rm -rf ~`` or ``$(id)`` can only ever
  reach a child as one literal argv element.  The executable is resolved with
  :func:`shutil.which` semantics against the *child's* ``PATH`` so that a missing binary
  is a typed :class:`SpawnError` ("provider unavailable") rather than a stray
  ``OSError``.
* **An allowlisted environment**, built by :mod:`agent_bridge.processes.environment`.
* **Own process group, parent-death signal, reaper.**  Each child starts a new session
  (``start_new_session=True``), so its whole tree -- including grandchildren that
  inherited our pipes -- can be signalled at once.  On Linux the child also gets
  ``PR_SET_PDEATHSIG = SIGKILL`` (see :func:`_pdeathsig_preexec`), so providers die
  when the bridge itself is killed with SIGKILL and cannot clean up.  The kernel clears
  that setting in the child's own children, so a grandchild would outlive it; the
  reaper (:mod:`agent_bridge.processes.reaper`) -- one tiny helper process per bridge, started
  here with the first child -- holds the list of live process groups and SIGKILLs them
  all when the bridge's end of its pipe closes, however the bridge ended.
* **No pipe deadlocks.**  stderr is drained concurrently by a task in the caller's task
  group into a capped tail buffer (only the last ``stderr_tail_bytes`` are kept), so a
  provider that writes megabytes of stderr while stdout is silent never blocks.  stdout
  is buffered up to a fixed high-water mark and then flow-controlled
  (:mod:`agent_bridge.processes.pipes`), so memory stays bounded when nobody reads.
* **Bounded, cancellation-proof stop.**  :meth:`ChildProcess.stop` escalates stdin EOF
  -> SIGTERM to the group -> SIGKILL to the group, each step with its own budget, always
  reaps the child, kills whatever is left in the group, and runs shielded from
  cancellation so a cancelled owner cannot leak a process or a zombie.
* **Redaction.**  :meth:`ChildProcess.stderr_tail` scrubs API keys and bearer tokens
  (:func:`agent_bridge.redaction.redact`) before the tail can reach a log or an error message.

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
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, NoReturn, TypeAlias

import anyio
import anyio.abc
import anyio.lowlevel

from agent_bridge.processes.environment import check_env_entry
from agent_bridge.processes.pipes import ChildProtocol, PipeSendStream, TailBuffer
from agent_bridge.processes.reaper import REAPER_PROGRAM, Reaper
from agent_bridge.redaction import redact as _redact

__all__ = [
    "DEFAULT_STDERR_TAIL_BYTES",
    "PDEATHSIG_SUPPORTED",
    "ChildProcess",
    "Detached",
    "HelperProcess",
    "ProcessSpec",
    "SpawnError",
    "SpawnErrorReason",
    "WaitTimeout",
    "exec_interactive",
    "open_bridge",
    "popen_bridge",
    "popen_helper",
    "spawn",
    "spawn_detached",
]

logger = logging.getLogger("agent_bridge.processes")

#: Default size of the stderr tail kept per child, in bytes.
DEFAULT_STDERR_TAIL_BYTES: Final = 64 * 1024

_DRAIN_CHUNK: Final = 64 * 1024

# After the final SIGKILL of the group: how long to wait for its members to disappear and
# for the stderr pipe to report EOF before closing it from our side.
_GROUP_GONE_WAIT: Final = 1.0
_STDERR_EOF_WAIT: Final = 0.5
_POLL_INTERVAL: Final = 0.01


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
            check_env_entry(key, value)
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


class _ReaperHelper:
    """The reaper's helper process, as :class:`~agent_bridge.processes.reaper.Reaper` uses it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc

    @property
    def pid(self) -> int:
        """The helper's process id."""
        return self._proc.pid

    def running(self) -> bool:
        """Return whether the helper has not exited yet."""
        return self._proc.poll() is None

    def write(self, data: bytes) -> None:
        """Write ``data`` to the helper's stdin; raise :class:`OSError` if it is gone."""
        assert self._proc.stdin is not None
        os.write(self._proc.stdin.fileno(), data)

    def close(self, wait: float) -> None:
        """Close the helper's stdin and reap it, waiting up to ``wait`` seconds; never
        raises.  A Ctrl-C during that wait (it runs at exit, from ``atexit``) ends the
        wait quietly: the helper has its EOF and kills what is left on its own."""
        with contextlib.suppress(OSError):
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
            self._proc.wait(wait)


def _start_reaper_helper() -> _ReaperHelper | None:
    """Start the reaper's helper process; return it, or ``None`` (logged) if it cannot
    be started.  Never raises."""
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", REAPER_PROGRAM],
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
    return _ReaperHelper(proc)


_reaper = Reaper(_start_reaper_helper)
atexit.register(_reaper.close)


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
        protocol: ChildProtocol,
        stdin: PipeSendStream,
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
        self._tail = TailBuffer(spec.stderr_tail_bytes)
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
        self._stdin.abort()
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
        self._protocol.stdout.close_now()
        self._protocol.stderr.close_now()
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
    protocol = ChildProtocol()
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
    except (OSError, subprocess.SubprocessError) as exc:
        raise _spawn_error(
            exc, argv0, "executable or its interpreter not found", cwd=spec.cwd
        ) from exc
    stdin = protocol.stdin
    if stdin is None:  # pragma: no cover - asyncio calls connection_made first
        stdin_transport = transport.get_pipe_transport(0)
        assert isinstance(stdin_transport, asyncio.WriteTransport)
        stdin = protocol.stdin = PipeSendStream(stdin_transport)
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


#: what :meth:`subprocess.Popen.wait` raises at its timeout (for :func:`popen_bridge`'s callers)
WaitTimeout = subprocess.TimeoutExpired


def popen_bridge(spec: ProcessSpec) -> subprocess.Popen[bytes]:
    """Start ``spec`` with pipes on stdin, stdout and stderr for a *synchronous* host-side
    tool (the test plugin's blocking client starting ``agent-bridge serve``); return the
    :class:`subprocess.Popen`.  The caller owns it: it is not supervised, reaped or
    signalled by the bridge.  Raises :class:`SpawnError` as :func:`spawn` does."""
    executable = _resolve_executable(spec.argv[0], spec.env, spec.cwd)
    try:
        return subprocess.Popen(
            list(spec.argv),
            executable=executable,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=spec.cwd,
            env=dict(spec.env),
            close_fds=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise _spawn_error(exc, spec.argv[0], "executable not found") from exc


#: the handle :func:`popen_helper` returns (a :class:`subprocess.Popen` of bytes)
HelperProcess: TypeAlias = "subprocess.Popen[bytes]"


def popen_helper(argv: list[str]) -> HelperProcess:
    """Start ``argv``, one of the bridge's own helper processes (the journal's writer
    child), with pipes on stdin and stdout, stderr inherited, every other descriptor
    closed and the parent-death signal set, so it dies with the bridge; return the
    :class:`subprocess.Popen`, which the caller owns (it waits for it; no reaper).
    Raises :class:`SpawnError` as :func:`spawn` does."""
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            preexec_fn=_pdeathsig_preexec(os.getpid()),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise _spawn_error(exc, argv[0], "executable not found") from exc


async def open_bridge(spec: ProcessSpec) -> anyio.abc.Process:
    """As :func:`popen_bridge`, for an *asynchronous* host-side tool: an anyio process
    with piped stdin, stdout and stderr that the caller owns.  Raises :class:`SpawnError`."""
    executable = _resolve_executable(spec.argv[0], spec.env, spec.cwd)
    try:
        return await anyio.open_process(
            [executable, *spec.argv[1:]], env=dict(spec.env), cwd=spec.cwd
        )
    except OSError as exc:
        raise _spawn_error(exc, spec.argv[0], "executable not found") from exc


class Detached:
    """A process started by :func:`spawn_detached`: its pid and, once it has ended, its
    exit status (it is reaped by a background thread)."""

    __slots__ = ("_proc",)

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        """The exit status (negative: the signal that ended it), ``None`` while it runs."""
        return self._proc.returncode


def spawn_detached(spec: ProcessSpec, log_path: str | None = None) -> Detached:
    """Start ``spec`` as a process that outlives the bridge (the per-user daemon).

    Unlike :func:`spawn` the process is not a child the bridge supervises: it gets its
    own session, no parent-death signal and no reaper registration; stdin and stdout are
    ``/dev/null`` and stderr goes to ``log_path`` (appended; ``/dev/null`` when ``None``).
    It is reaped in a background thread so no zombie is left behind; the returned
    :class:`Detached` tells whether it has ended, and how (a starter that waits for it to
    get ready can stop waiting when it is gone).

    Raises :class:`SpawnError` as :func:`spawn` does.
    """
    executable = _resolve_executable(spec.argv[0], spec.env, spec.cwd)
    argv0 = spec.argv[0]
    err = os.open(log_path or os.devnull, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        proc = subprocess.Popen(
            list(spec.argv),
            executable=executable,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=spec.cwd,
            env=dict(spec.env),
            close_fds=True,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise _spawn_error(exc, argv0, "executable not found") from exc
    finally:
        os.close(err)
    import threading

    threading.Thread(target=proc.wait, name="detached-reaper", daemon=True).start()
    return Detached(proc)


def _spawn_error(
    exc: OSError | subprocess.SubprocessError,
    argv0: str,
    not_found: str,
    *,
    cwd: str | None = None,
) -> SpawnError:
    """The classified :class:`SpawnError` for ``exc``, raised while starting ``argv0``:
    ``executable_not_found`` (with the text ``not_found``) for a missing file, unless
    ``cwd`` is given and is not a directory (then ``spawn_failed``); ``permission_denied``;
    else ``spawn_failed`` naming only the exception's type."""
    if isinstance(exc, FileNotFoundError):
        if cwd is not None and not os.path.isdir(cwd):
            return SpawnError("spawn_failed", argv0, "working directory not found")
        return SpawnError("executable_not_found", argv0, not_found)
    if isinstance(exc, PermissionError):
        return SpawnError("permission_denied", argv0, "permission denied")
    return SpawnError("spawn_failed", argv0, type(exc).__name__)


def exec_interactive(argv: list[str]) -> NoReturn:
    """Replace this process with ``argv`` (an interactive command the user runs in the
    terminal, e.g. a provider's login); never returns.  Raises ``OSError`` when it cannot
    be executed."""
    os.execv(argv[0], argv)  # noqa: S606 - argv, no shell
