"""Run a command in a network namespace with only loopback and log every DNS lookup.

Used by ``tests/loopback_netns.py`` (for the silent-probe and ACP agent tests); run as root::

    unshare --net --mount python tests/netns_dns.py --log OUT.json -- CMD ARGS...

Inside the new namespaces this brings ``lo`` up, bind-mounts a ``resolv.conf`` that names
127.0.0.1 over ``/etc/resolv.conf`` (only in this mount namespace), answers every DNS
query on 127.0.0.1:53 (UDP and TCP) with ``REFUSED`` after logging its name, runs the
command and writes ``{"rc": N, "queries": [name, ...]}`` to ``OUT.json``.  No other
network exists in the namespace, so a connection anywhere but loopback fails at once.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading


def _qname(packet: bytes) -> str:
    labels = []
    i = 12
    while i < len(packet):
        length = packet[i]
        if length == 0:
            break
        labels.append(packet[i + 1 : i + 1 + length].decode("ascii", "replace"))
        i += 1 + length
    return ".".join(labels)


def _refused(packet: bytes) -> bytes:
    if len(packet) < 12:
        return b""
    flags = struct.unpack("!H", packet[2:4])[0]
    reply_flags = 0x8000 | (flags & 0x7900) | 0x0080 | 5  # QR, opcode+RD kept, RA, REFUSED
    return packet[:2] + struct.pack("!H", reply_flags) + packet[4:12] + packet[12:]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    resolv = tempfile.NamedTemporaryFile("w", suffix=".resolv", delete=False)  # noqa: SIM115
    resolv.write("nameserver 127.0.0.1\noptions attempts:1 timeout:1\n")
    resolv.close()
    subprocess.run(["mount", "--bind", resolv.name, "/etc/resolv.conf"], check=True)

    queries: list[str] = []
    lock = threading.Lock()

    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 53))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("127.0.0.1", 53))
    tcp.listen(16)

    def serve_udp() -> None:
        while True:
            packet, peer = udp.recvfrom(4096)
            with lock:
                queries.append(_qname(packet))
            udp.sendto(_refused(packet), peer)

    def serve_tcp() -> None:
        while True:
            conn, _ = tcp.accept()
            with conn:
                head = conn.recv(2)
                if len(head) < 2:
                    continue
                packet = conn.recv(struct.unpack("!H", head)[0])
                with lock:
                    queries.append(_qname(packet))
                reply = _refused(packet)
                conn.sendall(struct.pack("!H", len(reply)) + reply)

    threading.Thread(target=serve_udp, daemon=True).start()
    threading.Thread(target=serve_tcp, daemon=True).start()

    rc = subprocess.run(command, check=False).returncode
    with lock:
        result = {"rc": rc, "queries": list(queries)}
    with open(args.log, "w") as fh:
        json.dump(result, fh)
    os.unlink(resolv.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
