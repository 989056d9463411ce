"""An append-only JSONL file of LLM replies keyed by the hash of what was asked.

The key covers everything that changes a reply (model, messages, temperature, token limit, seed),
so a changed prompt or model asks again while an unchanged one never does. Each reply is appended
and flushed as soon as it arrives, from any thread, so a killed run loses at most the line it was
writing; a torn last line is skipped on the next open.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path

from kgqa.reasoning.readers.protocol import Message


def judgement_key(
    model_id: str, messages: Sequence[Message], temperature: float, max_tokens: int, seed: int | None
) -> str:
    """sha256 of the request's content, as hex."""
    content = json.dumps(
        {
            "model": model_id,
            "messages": list(messages),
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


class JudgementCache:
    """Replies by key, loaded from ``path`` and appended to it (the parent folder is created)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._replies: dict[str, str] = {}
        self._lock = threading.Lock()
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                    self._replies[str(record["key"])] = str(record["reply"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line torn by a kill
        path.parent.mkdir(parents=True, exist_ok=True)

    def __len__(self) -> int:
        return len(self._replies)

    def get(self, key: str) -> str | None:
        return self._replies.get(key)

    def put(self, key: str, reply: str) -> None:
        """Record ``reply`` and append it to the file at once."""
        line = json.dumps({"key": key, "reply": reply}, ensure_ascii=False)
        with self._lock:
            self._replies[key] = reply
            with self.path.open("a", encoding="utf-8") as out:
                if out.tell() > 0 and not self._ends_with_newline():
                    out.write("\n")  # after a torn line
                out.write(line + "\n")
                out.flush()

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as f:
            f.seek(-1, 2)
            return f.read(1) == b"\n"
