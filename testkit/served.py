"""The life of a stand-in HTTP server in a test: `with StandIn(...) as server:` serves it on a
daemon thread until the block ends, then shuts it down and frees its port.

A subclass calls `self.bind(Handler)` in its __init__: a ThreadingHTTPServer on a free port of
127.0.0.1. One that a test may leave running, a server a subprocess keeps calling, gives it a
`lifetime_s`, after which it shuts itself down, so that a dead test cannot hang the tier.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Served:
    server: ThreadingHTTPServer
    timer: threading.Timer | None = None

    def bind(self, handler: type[BaseHTTPRequestHandler], lifetime_s: float | None = None) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        if lifetime_s is not None:
            self.timer = threading.Timer(lifetime_s, self.server.shutdown)
            self.timer.daemon = True

    def __enter__(self):
        # poll_interval: shutdown() waits for the serving loop's next poll, 0.5 s by default
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        if self.timer is not None:
            self.timer.start()
        return self

    def __exit__(self, *exc):
        if self.timer is not None:
            self.timer.cancel()
        self.server.shutdown()
        self.server.server_close()


def send_json(handler: BaseHTTPRequestHandler, status: int, payload, headers: dict | None = None) -> None:
    """Answer one request with `payload` as JSON, as the APIs the stand-ins imitate answer."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    for name, value in {"content-type": "application/json", **(headers or {})}.items():
        handler.send_header(name, value)
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
