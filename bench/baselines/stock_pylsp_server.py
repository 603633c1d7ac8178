"""Baseline: python-lsp-jsonrpc exactly as python-lsp-server uses it.

Stock ``JsonRpcStreamReader`` / ``JsonRpcStreamWriter`` (Content-Length framing, ujson,
one flush per message) around an ``Endpoint`` whose dispatcher is a ``MethodDispatcher``
subclass. Nothing is tuned: this is the "what people use today" reference point.

Methods:
  initialize            -> {}
  initialized (notif.)  -> ignored
  bridge/ping {data}    -> {data}
  bench/stream {count, size}
                        -> ``count`` notifications ``bench/event {seq, data}`` with a
                           ``size``-character ``data`` string, then {count}
  shutdown              -> null

The process exits when stdin reaches EOF.
"""

from __future__ import annotations

import sys
from typing import Any

from pylsp_jsonrpc.dispatchers import MethodDispatcher
from pylsp_jsonrpc.endpoint import Endpoint
from pylsp_jsonrpc.streams import JsonRpcStreamReader, JsonRpcStreamWriter


class StockServer(MethodDispatcher):  # type: ignore[misc]  # pylsp_jsonrpc is untyped
    def __init__(self, rx: Any, tx: Any) -> None:
        self._reader = JsonRpcStreamReader(rx)
        self._writer = JsonRpcStreamWriter(tx)
        self._endpoint = Endpoint(self, self._writer.write)

    def start(self) -> None:
        try:
            self._reader.listen(self._endpoint.consume)
        finally:
            self._endpoint.shutdown()

    # MethodDispatcher maps "bridge/ping" -> m_bridge__ping and calls it with **params.
    def m_initialize(self, **_params: Any) -> dict[str, Any]:
        return {}

    def m_initialized(self, **_params: Any) -> None:
        return None

    def m_shutdown(self, **_params: Any) -> None:
        return None

    def m_bridge__ping(self, data: Any = None, **_params: Any) -> dict[str, Any]:
        return {"data": data}

    def m_bench__stream(self, count: int = 0, size: int = 200, **_params: Any) -> dict[str, Any]:
        payload = "x" * size
        notify = self._endpoint.notify
        for seq in range(count):
            notify("bench/event", {"seq": seq, "data": payload})
        return {"count": count}


def main() -> None:
    StockServer(sys.stdin.buffer, sys.stdout.buffer).start()


if __name__ == "__main__":
    main()
