"""A real local HTTP server that plays a script, for the OpenAI-compatible clients' tests: each
POST is recorded and answered by the next scripted answer, or by the endpoint's own answer when
the script has run out."""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, dict[str, str], str]


class Script:
    """Answers to play before the endpoint's own: ``(status, headers, body)``, or ``("sleep", s)``
    (wait ``s`` seconds, then close without answering). What was asked: ``requests`` (the JSON
    bodies) and ``headers``."""

    def __init__(self) -> None:
        self.answers: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []


@contextlib.contextmanager
def scripted_server(
    endpoint: Callable[[dict[str, Any]], Answer], *, tls: ssl.SSLContext | None = None
) -> Iterator[tuple[str, Script]]:
    """A server on 127.0.0.1 (an ephemeral port), over HTTPS with ``tls`` (a server context);
    yields its ``/v1`` URL and its script."""
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append(body)
            script.headers.append(dict(self.headers))
            answer = script.answers.pop(0) if script.answers else endpoint(body)
            if answer[0] == "sleep":
                time.sleep(answer[1])
                return
            status, headers, text = answer
            data = text.encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        scheme = "http" if tls is None else "https"
        yield f"{scheme}://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()
