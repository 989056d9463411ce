"""Helpers for the reasoning tests: a scripted LLMClient fake and a real local chat-completions server.

Not a conftest.py: tests/integration import `conftest` by name, and a second conftest.py would
shadow tests/conftest.py there. Test modules import from here and declare their own fixtures.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kgqa.reasoning.readers.protocol import Completion, Message
from kgqa.retrieval.evidence.items import EvidenceItem


def make_items(texts: Sequence[str]) -> list[EvidenceItem]:
    """Evidence items in the given (prompt) order, scores rising so the last is the best."""
    return [EvidenceItem(text, (i,), (), float(i)) for i, text in enumerate(texts)]


def count_lines(messages: Sequence[Message]) -> int:
    """A fake token counter: one token per line of every message, so each evidence line costs one."""
    return sum(len(m["content"].split("\n")) for m in messages)


class ScriptedLLM:
    """An LLMClient fake that returns canned replies in order and records every call."""

    def __init__(self, replies: Sequence[str], *, context_tokens: int = 100_000) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []
        self.model_id = "scripted"
        self.context_tokens = context_tokens

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return count_lines(messages)

    def complete(
        self, messages: Sequence[Message], *, temperature: float, max_tokens: int, seed: int | None
    ) -> Completion:
        self.calls.append(
            {"messages": [dict(m) for m in messages], "temperature": temperature, "max_tokens": max_tokens}
        )
        text = self.replies[len(self.calls) - 1]
        return Completion(text, self.count_tokens(messages), len(text.split()))


@dataclass
class Step:
    """What the local server does for one request: reply with text, fail with a status, or stall."""

    text: str = "ans: Paris"
    status: int = 200
    delay_s: float = 0.0
    usage: dict[str, int] | None = field(
        default_factory=lambda: {"prompt_tokens": 11, "completion_tokens": 3}
    )


class ChatServer:
    """A chat-completions endpoint on 127.0.0.1 that plays a script and records requests."""

    def __init__(self) -> None:
        self.script: list[Step] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append(
                        {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                    )
                    step = server.script.pop(0) if server.script else Step()
                time.sleep(step.delay_s)
                if step.status == 200:
                    payload: dict[str, Any] = {
                        "id": "cmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": step.text},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                    if step.usage is not None:
                        payload["usage"] = {**step.usage, "total_tokens": sum(step.usage.values())}
                else:
                    payload = {"error": {"message": f"scripted {step.status}", "type": "test"}}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(step.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class RawServer:
    """A TCP server on 127.0.0.1 that hands each connection to ``serve(conn, stop)`` in a thread.

    For misbehaving endpoints (dripping bytes, never answering, speaking another protocol).
    ``serve`` must return once ``stop`` is set; leaving the ``with`` block sets it and closes all.
    """

    def __init__(self, serve: Callable[[socket.socket, threading.Event], None]) -> None:
        self._serve = serve
        self.stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                self._serve(conn, self.stop)
            except OSError:  # the client hung up
                pass

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()
