"""A throwaway PostgreSQL cluster for tests: ``initdb`` in a temporary folder, a server on a
Unix socket only (no TCP port to collide on), run as a non-root user, stopped at the end.

:func:`start_cluster` returns a :class:`Cluster` or raises :class:`ClusterUnavailable`
saying why; the ``pg_cluster`` fixture (``tests/conftest.py``) skips loudly on that,
except in CI (``CI=true``), where it fails: there the project's scripts install PostgreSQL
(``scripts/test.sh``), so a cluster that cannot start is a defect.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
from typing import Any, Final

__all__ = ["Cluster", "ClusterUnavailable", "Relay", "find_bindir", "start_cluster"]

#: The cluster's superuser (trust authentication on its private socket)
USER: Final = "bridge"


class ClusterUnavailable(Exception):
    """PostgreSQL cannot be started here (``str()``: why)."""


def find_bindir() -> str | None:
    """Return the folder of ``initdb``/``pg_ctl`` (Debian keeps them off PATH), or None."""
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    for path in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return os.path.dirname(path)
    return None


def _runas() -> list[str]:
    """The prefix that runs a command as a non-root user (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ClusterUnavailable("running as root and there is no 'postgres' user") from None
    return ["runuser", "-u", "postgres", "--"]


class Cluster:
    """A running server: :attr:`socket_dir` is its host; :meth:`url` names a database."""

    def __init__(self, root: str, bindir: str, runas: list[str], listen: str = "") -> None:
        self.root = root
        #: the TCP address the server also listens on ("": none, the socket only)
        self.listen = listen
        self.bindir = bindir
        self.runas = runas
        self.data = os.path.join(root, "data")
        self.socket_dir = root
        self.log = os.path.join(root, "log")
        self._count = 0
        self._lock = threading.Lock()  # new_database from several threads

    def url(self, dbname: str = "postgres") -> str:
        """A libpq address of ``dbname`` on this cluster's socket."""
        return f"postgresql://{USER}@/{dbname}?host={self.socket_dir}"

    def _ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.runas, os.path.join(self.bindir, "pg_ctl"), "-D", self.data, *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )

    def start(self) -> None:
        """Start the server (waits until it accepts connections)."""
        options = (
            f"-k {self.socket_dir} -c listen_addresses='{self.listen}' -c fsync=on "
            "-c max_connections=200"
        )
        self._ctl("-o", options, "-l", self.log, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate``: as if it crashed)."""
        self._ctl("-m", mode, "-w", "stop", check=False)

    def new_database(self) -> str:
        """Create an empty database; return its address."""
        import psycopg

        with self._lock:
            self._count += 1
            name = f"t{os.getpid()}_{self._count}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def destroy(self) -> None:
        """Stop the server and remove its folder."""
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(listen: str = "") -> Cluster:
    """Create and start a cluster (``listen``: an IPv4 address it also accepts TCP
    connections on, with trust, from its /30; default none); raises
    :class:`ClusterUnavailable`."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise ClusterUnavailable("psycopg is not installed (agent-bridge[postgres])") from None
    bindir = find_bindir()
    if bindir is None:
        raise ClusterUnavailable("PostgreSQL is not installed (initdb not found)")
    runas = _runas()
    root = tempfile.mkdtemp(prefix="ab-pg-", dir="/tmp")
    if runas:
        os.chown(root, pwd.getpwnam("postgres").pw_uid, -1)
    os.chmod(root, 0o755)
    cluster = Cluster(root, bindir, runas, listen)
    try:
        subprocess.run(
            [
                *runas,
                os.path.join(bindir, "initdb"),
                "-D",
                cluster.data,
                "-A",
                "trust",
                "-U",
                USER,
                "--no-sync",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        if listen:
            import ipaddress

            network = ipaddress.ip_interface(f"{listen}/30").network
            with open(os.path.join(cluster.data, "pg_hba.conf"), "a") as hba:
                hba.write(f"host all {USER} {network} trust\n")
        cluster.start()
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        shutil.rmtree(root, ignore_errors=True)
        raise ClusterUnavailable(f"cannot start PostgreSQL: {detail.strip()[:300]}") from None
    return cluster


class Relay:
    """A byte relay on a Unix socket of its own in front of a cluster: a member given
    :meth:`url` reaches the database only through it, so a test can cut that one member
    off (:meth:`cut`: every connection dropped, new ones refused) and let it back
    (:meth:`restore`) without touching the others."""

    def __init__(self, cluster: Cluster) -> None:
        import socket

        self.cluster = cluster
        self.dir = tempfile.mkdtemp(prefix="ab-relay-", dir="/tmp")
        self._target = os.path.join(cluster.socket_dir, ".s.PGSQL.5432")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(os.path.join(self.dir, ".s.PGSQL.5432"))
        self._server.listen(64)
        self._open: list[Any] = []
        self._lock = threading.Lock()
        self.is_cut = False
        self._closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database_url: str) -> str:
        """``database_url`` (a database on the cluster) reached through this relay."""
        return database_url.replace(f"host={self.cluster.socket_dir}", f"host={self.dir}")

    def _accept(self) -> None:
        import socket

        while not self._closing:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self.is_cut:
                client.close()
                continue
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self._target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: Any, dst: Any) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.close()

    def cut(self) -> None:
        """Drop every connection through the relay and refuse new ones."""
        import socket

        self.is_cut = True
        with self._lock:
            conns, self._open = self._open, []
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def restore(self) -> None:
        """Relay new connections again."""
        self.is_cut = False

    def close(self) -> None:
        """Stop relaying and remove the socket."""
        self._closing = True
        self.cut()
        self._server.close()
        shutil.rmtree(self.dir, ignore_errors=True)
