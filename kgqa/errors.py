"""Every error kgqa raises on purpose, under one root so callers can catch ``KgqaError``.

Each message says what failed, on which input, and how to fix it; ``hint`` carries the fix
separately so the CLI can print it on its own line.
"""

from __future__ import annotations


class KgqaError(Exception):
    """Root of all kgqa errors."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class RetryableError(KgqaError):
    """A transient failure: retrying the same call may succeed (tenacity retries only these)."""


class ConfigError(KgqaError):
    """A configuration value, file or environment variable is invalid."""


class StoreError(KgqaError):
    """The graph store failed."""


class StoreUnavailableError(StoreError, RetryableError):
    """The store cannot be reached (server down, file locked by another writer)."""


class StoreMemoryError(StoreError):
    """The server ran out of transaction memory for one call: the same call fails again, a
    smaller one may pass (the ingest loader halves its batch)."""


class StoreAuthError(StoreError):
    """The store rejected the credentials."""


class QueryError(StoreError):
    """A Cypher kernel failed or was called with the wrong parameters."""

    def __init__(
        self,
        message: str,
        *,
        query: str | None = None,
        line: int | None = None,
        col: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.query = query
        self.line = line
        self.col = col


class SchemaMismatchError(StoreError):
    """The store was built with another embedding model, dimension or similarity."""


class MissingIndexError(StoreError):
    """An index the pipeline needs does not exist (yet) in the store."""


class QuestionNotFoundError(StoreError):
    """No saved question has the given id (``kgqa show``)."""


class IngestError(KgqaError):
    """A source file could not be read or has malformed content."""

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, hint: str | None = None
    ) -> None:
        where = f"{path}:{line}: " if path and line else (f"{path}: " if path else "")
        super().__init__(f"{where}{message}", hint=hint)
        self.path = path
        self.line = line


class EmbeddingError(KgqaError):
    """The embedding model could not be loaded or failed on its input."""


class LinkingError(KgqaError):
    """Entity linking failed."""


class EntityNotFoundError(LinkingError):
    """No entity in the store matches the question or the given id."""


class CheckpointError(KgqaError):
    """A model checkpoint is missing, corrupt or incompatible."""


class BackendNotInstalledError(ConfigError, ImportError):
    """A configured backend needs an optional extra that is not installed (the hint names it)."""


class ReaderError(KgqaError):
    """The reader (LLM or extractive) failed on a question."""


class LLMTransientError(ReaderError, RetryableError):
    """One LLM call failed in a way a retry may fix: HTTP 429/408/5xx, connection error, timeout."""


class LLMUnavailableError(ReaderError):
    """The LLM backend kept failing after every retry (server down, overloaded or too slow)."""


class AnswerParseError(ReaderError):
    """An LLM reply has no ``ans:`` line where one was required."""


class PlanError(ReaderError):
    """An LLM planner's reply is no plan that fits the store's schema (MoR)."""
