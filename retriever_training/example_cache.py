"""On-disk cache of prepared training examples, keyed by what they are made of.

Why: preparing examples (embedding the questions, extracting each subgraph, its DDE and weak
labels) is the part of ``kgqa train`` that reads the store, and it gives the same examples
every time the same questions meet the same KB with the same settings; a second run (another
``--epochs``, a planner-only retrain) should not pay for it again.

The key hashes the KB's fingerprint (:func:`kb_fingerprint`), the embedder's settings (the
model and its dtype give the question vectors), every field of every question in the part, the
field names of the pickled example classes, and the caller's ``settings`` (subgraph caps, hop
choice, anything else that changes the examples): any change is a new file, never a stale
example. Table rows are not stored: they index the in-process
:class:`~kgqa.retrieval.graph.tables.EntityTable`, which a new process fills in another order, so
a loaded example gets its rows again from its subgraph's entity and relation ids.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import torch

from kgqa.atomic_write import atomic_write
from kgqa.config import EmbedderSettings
from kgqa.retrieval.features import PreparedQuestion
from kgqa.retrieval.graph.subgraph import Subgraph
from kgqa.retrieval.graph.tables import EntityTable, RelationTable
from kgqa.store.protocol import GraphStore
from kgqa.store.stats import collect_stats
from kgqa.types import QAExample
from retriever_training.examples import TrainingExample

log = logging.getLogger(__name__)

#: Bumped whenever how an example is prepared changes meaning (2: subgraphs carry their walk
#: rule; 3: question views include the walk-order relation mentions; 4-6: new slots, before the
#: key held the field names). A new or renamed field changes the key by itself (:func:`_fields`):
#: a word-run field (now in ``WordRuns``) came without a bump, and a cache of before it then failed to load.
CACHE_FORMAT = 7


def kb_fingerprint(store: GraphStore) -> dict[str, Any]:
    """What identifies the KB's content: location, embedding model, counts by label and type."""
    stats = collect_stats(store)
    return {
        "location": stats.info.location,
        "embedding": asdict(stats.info.embedding) if stats.info.embedding else None,
        "labels": stats.labels,
        "relationship_types": stats.relationship_types,
        "embedded_entities": stats.embedded_entities,
    }


def cache_key(
    kb: Mapping[str, Any],
    embedder: EmbedderSettings,
    questions: Sequence[QAExample],
    settings: Mapping[str, Any],
) -> str:
    """Hex digest over everything the examples of ``questions`` depend on (module docstring)."""
    digest = hashlib.sha256()
    head = {
        "format": CACHE_FORMAT,
        "fields": _fields(),
        "kb": kb,
        "embedder": embedder.model_dump(mode="json", exclude={"batch_size", "batch_tokens"}),
        "settings": settings,
    }
    digest.update(json.dumps(head, sort_keys=True, default=str).encode())
    for question in questions:
        digest.update(json.dumps(asdict(question), sort_keys=True, default=str).encode())
    return digest.hexdigest()[:24]


def _fields() -> dict[str, list[str]]:
    """The field names of what a cached example pickles: a new slot is a new key."""
    return {
        cls.__name__: [f.name for f in fields(cls)] for cls in (TrainingExample, PreparedQuestion, Subgraph)
    }


def _without_rows(example: TrainingExample) -> TrainingExample:
    empty = torch.zeros(0, dtype=torch.long)
    return replace(example, prepared=replace(example.prepared, entity_rows=empty, relation_rows=empty))


def _with_rows(example: TrainingExample, tables: tuple[EntityTable, RelationTable]) -> TrainingExample:
    sub = example.prepared.subgraph
    prepared = replace(
        example.prepared,
        entity_rows=tables[0].rows(sub.entity_ids),
        relation_rows=tables[1].rows(sub.relation_types),
    )
    return replace(example, prepared=prepared)


def cached_examples(
    path: Path,
    tables: tuple[EntityTable, RelationTable],
    build: Callable[[], list[TrainingExample]],
) -> tuple[list[TrainingExample], bool]:
    """The examples stored at ``path``, else ``build()``'s, then stored there; and whether cached.

    The file is written atomically (:func:`~kgqa.atomic_write.atomic_write`), so an interrupted
    run never leaves a half-written cache. A file that cannot be read is rebuilt (and
    overwritten), with a warning.
    """
    if path.is_file():
        try:
            stored = torch.load(path, weights_only=False)
        except (OSError, EOFError, RuntimeError, ValueError, pickle.UnpicklingError) as exc:
            log.warning("example cache %s unreadable (%s); preparing again", path, exc)
        else:
            # One query for every entity first, then each example's rows are lookups.
            tables[0].rows([e for ex in stored for e in ex.prepared.subgraph.entity_ids])
            return [_with_rows(ex, tables) for ex in stored], True
    examples = build()
    with atomic_write(path) as handle:
        torch.save([_without_rows(ex) for ex in examples], handle)
    return examples, False
