"""Any OpenAI-compatible chat endpoint: a vLLM or llama.cpp server, Ollama, OpenAI itself.

Retries are ours, not the ``openai`` package's (it is built with ``max_retries=0``): tenacity
retries only :class:`~kgqa.errors.RetryableError`, which this adapter raises for HTTP 429, 408
and 5xx, connection errors and timeouts. A 400/401/404 is the user's to fix, so it fails at
once. When the last try fails the caller gets :class:`~kgqa.errors.LLMUnavailableError` naming
the endpoint, the model and the last cause.

``timeout_s`` is a total deadline for one :meth:`OpenAIClient.complete`, every try and wait
included. httpx's timeouts bound each socket operation only, so a server that sends one byte a
second would never time out; :class:`DeadlineTransport` bounds the whole exchange.

Token counts come from the server's ``usage``. Before sending, :meth:`OpenAIClient.count_tokens`
can only estimate (the server's tokenizer is not here): with ``tiktoken`` installed and its
encoding available offline it uses ``cl100k_base``; otherwise about 4 characters per token, plus
4 tokens of chat framing per message and 3 for the reply primer. Both err a little high for
English, so prompts built to the estimate fit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import httpx2
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
    wait_none,
)

from kgqa.errors import (
    BackendNotInstalledError,
    ConfigError,
    LLMTransientError,
    LLMUnavailableError,
    ReaderError,
    RetryableError,
)
from kgqa.reasoning.readers.protocol import Completion, Message

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

PLACEHOLDER_API_KEY = "not-needed"
"""Sent when no key is configured: local servers ignore it, and the ``openai`` package insists on one."""
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_PRIMER_TOKENS = 3
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def is_local_url(url: str) -> bool:
    """Whether ``url`` points at this machine (no API key is expected there)."""
    host = urlparse(url).hostname or ""
    return host in _LOCAL_HOSTS or host.startswith("127.")


def check_base_url(url: str) -> None:
    """Refuse a ``reader.base_url`` that is not an http(s) URL with a host, before any request.

    Raises:
        ConfigError: naming the value and the expected shape.
    """
    parsed = urlparse(url)
    try:
        valid = parsed.scheme in ("http", "https") and bool(parsed.hostname) and parsed.port != 0
    except ValueError:  # a port that is not a number
        valid = False
    if not valid:
        raise ConfigError(
            f"reader.base_url {url!r} is not an http(s) URL with a host",
            hint="set reader.base_url like http://localhost:8000/v1",
        )


class _Watchdog:
    """Shuts a request's socket down when its deadline passes, which ends any read or write on it.

    httpcore reports the socket of each new connection through the request's ``trace``
    extension; the transport opens one connection per request, so it is this request's.
    """

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.fired = False
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(budget_s, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.complete":
            with self._lock:
                self._socket = info["return_value"].get_extra_info("socket")
                fired = self.fired
            if fired:
                self._fire()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sock = self._socket
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()

    @contextlib.contextmanager
    def translated(self, request: httpx2.Request) -> Iterator[None]:
        """Report a transport error caused by the shutdown as the timeout it is."""
        try:
            yield
        except httpx2.TransportError as exc:
            if self.fired:
                raise httpx2.ReadTimeout(
                    f"no complete reply within {self.budget_s:.3g} s", request=request
                ) from exc
            raise


class _WatchedStream(httpx2.SyncByteStream):
    """A response body read under its request's watchdog, which stops when the body is closed."""

    def __init__(self, inner: httpx2.SyncByteStream, watchdog: _Watchdog, request: httpx2.Request) -> None:
        self._inner = inner
        self._watchdog = watchdog
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        with self._watchdog.translated(self._request):
            yield from self._inner

    def close(self) -> None:
        self._watchdog.cancel()
        self._inner.close()


class DeadlineTransport(httpx2.BaseTransport):
    """HTTP transport whose per-request timeout bounds the whole exchange, not each read.

    httpx's timeouts bound each socket operation, so a server that sends a byte at a time
    (headers or body) would never time out. Here a watchdog shuts the request's connection
    down when the timeout has passed since the request started. Connections are not kept
    alive, so each request has a connection of its own to shut down.
    """

    def __init__(self) -> None:
        self._inner = httpx2.HTTPTransport(limits=httpx2.Limits(max_keepalive_connections=0))

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        budget = request.extensions.get("timeout", {}).get("read")
        if budget is None:
            return self._inner.handle_request(request)
        watchdog = _Watchdog(budget)
        request.extensions["trace"] = watchdog.trace
        try:
            with watchdog.translated(request):
                response = self._inner.handle_request(request)
        except BaseException:
            watchdog.cancel()
            raise
        assert isinstance(response.stream, httpx2.SyncByteStream)
        response.stream = _WatchedStream(response.stream, watchdog, request)
        return response

    def close(self) -> None:
        self._inner.close()


def _tiktoken_encoder() -> Callable[[str], int] | None:
    """``cl100k_base`` token counting if tiktoken and its encoding file are available, else None."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base")
    except Exception:  # not installed, or its encoding file cannot be fetched offline
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def estimate_tokens(messages: Sequence[Message], *, encode: Callable[[str], int] | None = None) -> int:
    """Prompt tokens of ``messages``: the encoder's count, or ``ceil(chars / 4)``, plus chat framing."""
    total = REPLY_PRIMER_TOKENS
    for message in messages:
        text = message["content"]
        total += MESSAGE_OVERHEAD_TOKENS + (
            encode(text) if encode else math.ceil(len(text) / CHARS_PER_TOKEN)
        )
    return total


class OpenAIClient:
    """:class:`~kgqa.reasoning.readers.protocol.LLMClient` over the chat-completions protocol."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 4,
        context_tokens: int = 8192,
        backoff_s: float = 1.0,
        backoff_max_s: float = 30.0,
    ) -> None:
        """Build the client; nothing is sent until :meth:`complete`.

        Args:
            model: the served model name (``/v1/models`` on the server lists them).
            base_url: the endpoint including ``/v1``.
            api_key: the key; ``None`` sends a placeholder, which local servers accept.
            timeout_s: total deadline of one :meth:`complete`, tries and waits included, in seconds.
            max_retries: retries after the first try, for transient failures only.
            context_tokens: the model's context window, used for prompt budgeting.
            backoff_s: first wait between tries in seconds (exponential with jitter); 0 disables it.
            backoff_max_s: cap on one wait, in seconds.

        Raises:
            BackendNotInstalledError: the ``openai`` package is missing (the hint names the extra).
            ConfigError: ``base_url`` is not an http(s) URL.
        """
        try:
            import openai
        except ImportError as exc:
            raise BackendNotInstalledError(
                "reader.backend = 'openai' needs the openai package, which is not installed",
                hint='pip install "kgqa[llm]"',
            ) from exc

        check_base_url(base_url)
        self._openai = openai
        self.model_id = model
        self.context_tokens = context_tokens
        self.base_url = base_url
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._wait = (
            wait_exponential_jitter(initial=backoff_s, max=backoff_max_s) if backoff_s > 0 else wait_none()
        )
        if api_key is None and not is_local_url(base_url):
            log.warning(
                "no OPENAI_API_KEY set for non-local endpoint %s; sending a placeholder key", base_url
            )
        self._client = openai.OpenAI(
            api_key=api_key or PLACEHOLDER_API_KEY,
            base_url=base_url,
            max_retries=0,
            http_client=httpx2.Client(transport=DeadlineTransport()),
        )
        self._encode = _tiktoken_encoder()

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """An estimate that errs high (see the module docstring); the server's ``usage`` is the truth."""
        return estimate_tokens(messages, encode=self._encode)

    def complete(
        self, messages: Sequence[Message], *, temperature: float, max_tokens: int, seed: int | None
    ) -> Completion:
        """Send one chat completion, retrying transient failures.

        All tries together end within ``timeout_s``: each gets what is left of it.

        Raises:
            LLMUnavailableError: every try failed transiently (down, overloaded, too slow).
            ReaderError: the server rejected the request (key, model name, prompt too long) or
                answered with something that is not a chat completion.
        """
        deadline = time.monotonic() + self._timeout_s
        retrying = Retrying(
            retry=retry_if_exception_type(RetryableError),
            stop=stop_after_attempt(self._max_retries + 1) | stop_before_delay(self._timeout_s),
            wait=self._wait,
            reraise=True,
        )
        try:
            return retrying(self._complete_once, messages, temperature, max_tokens, seed, deadline)
        except LLMTransientError as exc:
            tries = retrying.statistics.get("attempt_number", 1)
            raise LLMUnavailableError(
                f"LLM endpoint {self.base_url} (model {self.model_id!r}) gave no chat completion "
                f"within reader.timeout_s = {self._timeout_s:g} s (tries: {tries}); last error: {exc}",
                hint="check that the server is up and serving this model, or raise reader.timeout_s "
                "/ reader.max_retries",
            ) from exc

    def _complete_once(
        self,
        messages: Sequence[Message],
        temperature: float,
        max_tokens: int,
        seed: int | None,
        deadline: float,
    ) -> Completion:
        openai = self._openai
        left = deadline - time.monotonic()
        if left <= 0:
            raise LLMTransientError("no time left for another try")
        try:
            response = self._client.chat.completions.create(
                model=self.model_id,
                messages=[dict(m) for m in messages],  # type: ignore[misc]
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
                timeout=left,
            )
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            raise LLMTransientError(f"{type(exc).__name__}: {exc}") from exc
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            raise ReaderError(
                f"LLM endpoint {self.base_url} answered, but not with chat-completions JSON: {exc}",
                hint="check that reader.base_url points at an OpenAI-compatible API (usually ending in /v1)",
            ) from exc
        return self._completion(response, messages)

    def _status_error(self, exc: openai.APIStatusError) -> ReaderError:
        status = exc.status_code
        what = (
            f"LLM endpoint {self.base_url} answered HTTP {status} for model {self.model_id!r}: {exc.message}"
        )
        if status in (408, 429) or status >= 500:
            return LLMTransientError(what)
        hints = {
            401: "export OPENAI_API_KEY with a key the endpoint accepts",
            403: "export OPENAI_API_KEY with a key the endpoint accepts",
            404: "check reader.base_url (usually ending in /v1) and reader.model (GET /v1/models lists them)",
            400: "the prompt may exceed the server's context: lower reader.context_tokens",
        }
        return ReaderError(what, hint=hints.get(status))

    def _completion(self, response: Any, messages: Sequence[Message]) -> Completion:
        if not getattr(response, "choices", None):
            raise LLMTransientError(f"LLM endpoint {self.base_url} returned no choices")
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        if usage is not None and usage.prompt_tokens is not None:
            return Completion(text, int(usage.prompt_tokens), int(usage.completion_tokens or 0))
        log.debug("endpoint %s sent no usage; estimating token counts", self.base_url)
        reply = [{"role": "assistant", "content": text}]
        return Completion(text, self.count_tokens(messages), estimate_tokens(reply) - REPLY_PRIMER_TOKENS)
