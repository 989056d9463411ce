"""The OpenAI-compatible client against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from llm_fakes import ChatServer, RawServer, Step, make_items

from kgqa.config import ReaderSettings
from kgqa.errors import ConfigError, LLMUnavailableError, ReaderError
from kgqa.reasoning import LLMReader
from kgqa.reasoning.prompts import double_check_message
from kgqa.reasoning.readers import make_llm_client
from kgqa.reasoning.readers.openai_client import OpenAIClient, estimate_tokens

ITEMS = make_items(["(France,language,French)", "(France,capital,Paris)"])
MESSAGES = [{"role": "user", "content": "Question:\nCapital of France?"}]


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


def _settings(server: ChatServer, **overrides: object) -> ReaderSettings:
    values: dict[str, object] = {
        "kind": "llm",
        "backend": "openai",
        "model": "test-model",
        "base_url": server.url,
        "timeout_s": 2.0,
        "max_retries": 2,
        "max_new_tokens": 64,
        "retry_backoff_s": 0.0,
    }
    return ReaderSettings(**(values | overrides))


def _client(server: ChatServer, **overrides: object) -> OpenAIClient:
    client = make_llm_client(_settings(server, **overrides))
    assert isinstance(client, OpenAIClient)
    return client


def test_openai_client_sends_chat_request_with_placeholder_key_for_local_url(chat_server: ChatServer) -> None:
    chat_server.script = [Step("ans: Paris", usage={"prompt_tokens": 123, "completion_tokens": 7})]
    completion = _client(chat_server).complete(MESSAGES, temperature=0.0, max_tokens=64, seed=0)
    assert completion.text == "ans: Paris"
    assert (completion.prompt_tokens, completion.completion_tokens) == (123, 7)
    (request,) = chat_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer not-needed"
    body = request["body"]
    assert body["model"] == "test-model" and body["messages"] == MESSAGES
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.0, 64, 0)


def test_openai_client_estimates_tokens_when_server_sends_no_usage(chat_server: ChatServer) -> None:
    chat_server.script = [Step("ans: Paris", usage=None)]
    client = _client(chat_server)
    completion = client.complete(MESSAGES, temperature=0.0, max_tokens=64, seed=0)
    assert completion.prompt_tokens == client.count_tokens(MESSAGES) > 0
    assert completion.completion_tokens > 0


@pytest.mark.parametrize("status", [429, 500, 503])
def test_openai_client_retries_transient_status_then_succeeds(chat_server: ChatServer, status: int) -> None:
    chat_server.script = [Step(status=status), Step("ans: Paris")]
    completion = _client(chat_server).complete(MESSAGES, temperature=0.0, max_tokens=64, seed=0)
    assert completion.text == "ans: Paris"
    assert len(chat_server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404])
def test_openai_client_fails_at_once_on_client_errors(chat_server: ChatServer, status: int) -> None:
    chat_server.script = [Step(status=status)]
    with pytest.raises(ReaderError, match=f"HTTP {status}") as info:
        _client(chat_server).complete(MESSAGES, temperature=0.0, max_tokens=64, seed=0)
    assert not isinstance(info.value, LLMUnavailableError)
    assert info.value.hint
    assert len(chat_server.requests) == 1


def test_openai_client_raises_unavailable_when_tries_use_up_the_deadline(chat_server: ChatServer) -> None:
    chat_server.script = [Step(delay_s=1.5) for _ in range(3)]
    client = _client(chat_server, timeout_s=0.4, max_retries=2)
    start = time.perf_counter()
    with pytest.raises(LLMUnavailableError, match=r"within reader.timeout_s = 0.4 s \(tries: 1\)") as info:
        client.complete(MESSAGES, temperature=0.0, max_tokens=64, seed=0)
    assert time.perf_counter() - start < 1.0  # one 0.4 s try takes the whole deadline
    assert len(chat_server.requests) == 1
    assert "timeout_s" in (info.value.hint or "")
    assert "Timeout" in str(info.value)


def test_openai_client_raises_unavailable_when_nothing_listens() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAIClient(
        "m", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=1.0, max_retries=1, backoff_s=0
    )
    with pytest.raises(LLMUnavailableError, match=f"127.0.0.1:{port}"):
        client.complete(MESSAGES, temperature=0.0, max_tokens=8, seed=None)


def test_openai_client_sends_configured_api_key(chat_server: ChatServer) -> None:
    client = _client(chat_server, api_key="sk-test")
    client.complete(MESSAGES, temperature=0.0, max_tokens=8, seed=0)
    assert chat_server.requests[0]["auth"] == "Bearer sk-test"


def test_llm_reader_double_checks_once_over_http_when_reply_lacks_ans(chat_server: ChatServer) -> None:
    chat_server.script = [Step("The capital is Paris, I believe."), Step("ans: Paris")]
    settings = _settings(chat_server)
    reading = LLMReader(make_llm_client(settings), settings).read("Capital of France?", ITEMS)
    assert reading.answers == ("Paris",) and reading.retried and not reading.format_error
    assert reading.raw_replies == ("The capital is Paris, I believe.", "ans: Paris")
    assert reading.prompt_tokens == 22 and reading.completion_tokens == 6  # the server's usage, twice
    first, second = (r["body"]["messages"] for r in chat_server.requests)
    assert second[: len(first)] == first
    assert second[len(first) :] == [
        {"role": "assistant", "content": "The capital is Paris, I believe."},
        double_check_message("triples"),
    ]


def test_estimate_tokens_uses_chars_over_four_plus_framing() -> None:
    messages = [{"role": "user", "content": "x" * 40}, {"role": "system", "content": "y" * 5}]
    assert estimate_tokens(messages) == 3 + (4 + 10) + (4 + 2)


def _read_request(conn: socket.socket) -> None:
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)


def _dripping(head: bytes, drop: bytes) -> Callable[[socket.socket, threading.Event], None]:
    """A server that sends ``head`` at once, then ``drop`` every 0.1 s; hangs up after 10 s."""

    def serve(conn: socket.socket, stop: threading.Event) -> None:
        _read_request(conn)
        conn.sendall(head)
        for _ in range(100):
            if stop.wait(0.1):
                return
            conn.sendall(drop)

    return serve


_drip_body = _dripping(
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", b" "
)  # headers at once, then the body one byte at a time
_drip_headers = _dripping(b"HTTP/1.1 200 OK\r\n", b"X")  # the status line, then a header one byte at a time


def _never_answer(conn: socket.socket, stop: threading.Event) -> None:
    _read_request(conn)
    stop.wait(10)


def _not_json(conn: socket.socket, stop: threading.Event) -> None:
    _read_request(conn)
    body = b"<html>hello</html>"
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    conn.sendall(head.encode() + body)


@pytest.mark.parametrize(
    "serve", [_drip_body, _drip_headers, _never_answer], ids=["drip-body", "drip-headers", "silent"]
)
def test_openai_client_gives_up_within_its_total_deadline_when_server_stalls(
    serve: Callable[[socket.socket, threading.Event], None],
) -> None:
    with RawServer(serve) as server:
        client = OpenAIClient(
            "m", base_url=f"http://127.0.0.1:{server.port}/v1", timeout_s=1.0, max_retries=4, backoff_s=0
        )
        start = time.monotonic()
        with pytest.raises(LLMUnavailableError, match=r"within reader.timeout_s = 1 s") as info:
            client.complete(MESSAGES, temperature=0.0, max_tokens=8, seed=None)
        assert time.monotonic() - start < 2.5
        assert f"127.0.0.1:{server.port}" in str(info.value)


def test_openai_client_raises_reader_error_when_reply_is_not_json() -> None:
    with RawServer(_not_json) as server:
        client = OpenAIClient("m", base_url=f"http://127.0.0.1:{server.port}/v1", timeout_s=5.0, backoff_s=0)
        with pytest.raises(ReaderError, match="not with chat-completions JSON"):
            client.complete(MESSAGES, temperature=0.0, max_tokens=8, seed=None)


@pytest.mark.parametrize(
    "url", ["not a url", "localhost:8000/v1", "http://localhost:notaport/v1", "ftp://x/v1"]
)
def test_openai_client_refuses_base_url_that_is_not_http(url: str) -> None:
    with pytest.raises(ConfigError, match="is not an http"):
        OpenAIClient("m", base_url=url)
