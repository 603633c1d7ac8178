"""The transports a host can reach the bridge over, for tests: stdio ``serve``, the
per-user daemon through ``agent-bridge connect``, and ``connect`` through a real OpenSSH
server on 127.0.0.1 (``sshd`` from Debian's ``openssh-server``, started here with a
throwaway key; see ``.ci/run``, which installs it in CI).

The same exchanges must give the same observable behaviour over all three.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["STDIO", "SshServer", "Transport", "daemon_socket", "start_daemon", "stop_daemon"]

ROOT = Path(__file__).resolve().parent.parent
SSHD = "/usr/sbin/sshd"


def _agent_bridge(*args: str) -> list[str]:
    return [sys.executable, "-m", "agent_bridge", *args]


def daemon_socket(env: Mapping[str, str], state_dir: str) -> str:
    """The daemon's socket path for ``state_dir`` under ``env``'s XDG_RUNTIME_DIR."""
    from agent_bridge.daemon.paths import daemon_paths

    return daemon_paths(state_dir, env).socket


def start_daemon(
    env: Mapping[str, str], state_dir: str, args: Sequence[str] = (), timeout: float = 20
) -> subprocess.Popen[bytes]:
    """Start ``agent-bridge daemon`` for ``state_dir`` and wait until it listens."""
    path = daemon_socket(env, state_dir)
    os.makedirs(state_dir, exist_ok=True)
    log = open(os.path.join(state_dir, "daemon-test.log"), "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        _agent_bridge("daemon", "--state-dir", state_dir, "--idle-timeout", "0", *args),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(path)
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the daemon exited with {proc.returncode}") from None
            time.sleep(0.02)
    proc.kill()
    raise RuntimeError("the daemon did not start listening")


def stop_daemon(env: Mapping[str, str], state_dir: str) -> None:
    """Stop the daemon of ``state_dir`` (SIGTERM, waiting for it to exit)."""
    subprocess.run(
        _agent_bridge("daemon", "--stop", "--state-dir", state_dir),
        env=dict(env),
        capture_output=True,
        timeout=40,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SshServer:
    """A real sshd on 127.0.0.1 with a throwaway host key and user key (root login by
    key only).  :meth:`command` wraps a local argv into the ``ssh`` call that runs it
    "remotely" with the given environment."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="sshd-")
        self.port = _free_port()
        d = self.dir
        for name in ("hostkey", "userkey"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{d}/{name}"], check=True
            )
        shutil.copy(f"{d}/userkey.pub", f"{d}/authorized_keys")
        Path(f"{d}/sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\n"
            f"AuthorizedKeysFile {d}/authorized_keys\nPasswordAuthentication no\n"
            f"KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
            f"PidFile {d}/sshd.pid\nUsePAM no\nStrictModes no\nLogLevel ERROR\n"
        )
        os.makedirs("/run/sshd", exist_ok=True)
        subprocess.run([SSHD, "-f", f"{d}/sshd_config", "-E", f"{d}/sshd.log"], check=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not start listening")

    def command(self, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """The ``ssh`` argv that runs ``argv`` on the server with ``env``'s bridge
        variables set."""
        keep = {k: v for k, v in env.items() if k.startswith(("AGENT_BRIDGE_", "XDG_"))}
        remote = " ".join(
            ["cd", shlex.quote(str(ROOT)), "&&", "env"]
            + [shlex.quote(f"{k}={v}") for k, v in sorted(keep.items())]
            + [shlex.quote(a) for a in argv]
        )
        return [
            "ssh",
            "-i",
            f"{self.dir}/userkey",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "BatchMode=yes",
            "-p",
            str(self.port),
            "root@127.0.0.1",
            remote,
        ]

    def close(self) -> None:
        """Stop sshd and remove its files."""
        try:
            pid = int(Path(f"{self.dir}/sshd.pid").read_text().strip())
            os.kill(pid, 15)
        except (OSError, ValueError):
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass(frozen=True)
class Transport:
    """How a test reaches the bridge: ``stdio`` (``serve``), ``daemon`` (``connect``) or
    ``ssh`` (``connect`` through :attr:`ssh`)."""

    name: str
    ssh: SshServer | None = None


STDIO = Transport("stdio")


def ssh_available() -> str | None:
    """Why a real sshd cannot run here, or ``None`` when it can."""
    if not os.path.exists(SSHD) or shutil.which("ssh") is None:
        return "openssh-server / openssh-client not installed (apt-get install openssh-server)"
    if os.geteuid() != 0:
        return "sshd with root login needs root"
    return None
