"""Reader for Freebase subsets in the RoG / SubgraphRAG JSONL shape (WebQSP, CWQ question graphs).

Each line is one question with its retrieved subgraph::

    {"id": ..., "question": ..., "answer": [...], "q_entity": [...], "a_entity": [...],
     "graph": [[head, relation, tail], ...]}

The KB is the union of all ``graph`` fields. Lines overlap heavily (neighbouring questions share
subgraphs); the reader does not deduplicate because that would need memory proportional to the KB,
and the loader ``MERGE``s anyway.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.readers.source_files import parsed_lines, require_file
from kgqa.types import BadLine, EntityRecord, SourceItem, TripleRecord

# Fields that may map entity ids to display names ({"m.0abc": "Paris"}). In RoG dumps ``q_entity`` and
# ``a_entity`` are plain lists of the same strings the graph uses as ids, which need no record; some
# dumps (and WebQSP's ``topic_entity``) give them as id -> name objects instead.
NAME_FIELDS = ("entity_names", "topic_entity", "q_entity", "a_entity")
_ROLES = ("head", "relation", "tail")


def read_rog_jsonl(path: str | Path) -> Iterator[SourceItem]:
    """Stream entities and triples from a RoG-style JSONL file.

    Per line, in this order: one ``EntityRecord(id, name)`` per id named in an id -> name object
    (see ``NAME_FIELDS``; first name wins within a line), then one ``TripleRecord`` per well-formed
    ``graph`` entry (MIDs such as ``m.02mjmr`` kept as ids, relations verbatim such as
    ``people.person.nationality``), then at most one ``BadLine`` that names the first malformed part
    (``graph[3]: ...``) and counts the rest. The well-formed triples of a partly bad line are still
    yielded, so one broken entry does not drop a question's whole subgraph.

    Args:
        path: the ``.jsonl`` or ``.jsonl.gz`` file.

    Returns:
        A generator of ``EntityRecord``, ``TripleRecord`` and ``BadLine`` numbered by physical line.

    Raises:
        IngestError: the file does not exist (raised here, before iteration) or is corrupt.
    """
    return parsed_lines(require_file(path), _parse_line)


def _parse_line(line: int, text: str) -> Iterator[SourceItem]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        yield BadLine(line, f"invalid JSON: {exc.msg} (column {exc.colno})")
        return
    if not isinstance(record, dict):
        yield BadLine(line, f"expected a JSON object, got {_kind(record)}")
        return
    yield from _line_items(record, line)


def _line_items(record: dict[str, Any], line: int) -> Iterator[SourceItem]:
    problems: list[str] = []
    names: dict[str, str] = {}
    for field in NAME_FIELDS:
        value = record.get(field)
        if isinstance(value, dict):
            for entity_id, name in value.items():
                if not entity_id:
                    problems.append(f"{field}: empty entity id")
                elif isinstance(name, str) and name:
                    names.setdefault(entity_id, name)
                else:
                    problems.append(f"{field}[{entity_id!r}]: expected a non-empty name, got {_kind(name)}")
        elif field == "entity_names" and value is not None:
            problems.append(f"entity_names: expected an object mapping ids to names, got {_kind(value)}")
    for entity_id, name in names.items():
        yield EntityRecord(entity_id, name, line)

    graph = record.get("graph")
    if not isinstance(graph, list):
        problems.append(
            "missing field 'graph'"
            if graph is None
            else f"graph: expected a list of [head, relation, tail] lists, got {_kind(graph)}"
        )
        graph = []
    for position, entry in enumerate(graph):
        problem = _entry_problem(entry, position)
        if problem:
            problems.append(problem)
        else:
            yield TripleRecord(entry[0], entry[1], entry[2], line)

    if problems:
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
        yield BadLine(line, problems[0] + (more if len(problems) > 1 else ""))


def _entry_problem(entry: object, position: int) -> str | None:
    if not isinstance(entry, list) or len(entry) != 3:
        shape = f"list of {len(entry)}" if isinstance(entry, list) else _kind(entry)
        return f"graph[{position}]: expected a [head, relation, tail] list, got {shape}"
    for role, value in zip(_ROLES, entry, strict=True):
        if not isinstance(value, str) or not value:
            return f"graph[{position}]: {role} must be a non-empty string, got {_kind(value)}"
    return None


def _kind(value: object) -> str:
    """Name a JSON value's type the way a user reading the file would (``string``, ``list``)."""
    if isinstance(value, str):
        return "empty string" if not value else "string"
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", list: "list", dict: "object"}.get(
        type(value), type(value).__name__
    )
