"""Question write-back (``kgqa ask --save``, KGQA and MoR answers) and ``kgqa show``: evidence a
user can open in Browser.

A saved answer becomes ``(:KgqaQuestion {id, text, asked_at, answers, topic_ids, answer_ids,
evidence_heads, evidence_types, evidence_tails})``: a node of its own that touches no entity, so
saving never writes to a user's nodes. Only with ``link_entities`` (``ask --link-entities``) does
it also get ``KGQA_TOPIC`` and ``KGQA_ANSWER`` relationships to its entities (``kgqa unprepare``
removes them with the question). Label and types carry kgqa's prefix so they cannot meet a
user's own ``:Question`` nodes. The evidence is saved as (head id, type, tail id) keys, not
element ids: Neo4j reuses element ids after deletes and does not keep them across a store
copy, so a Browser drawing from saved element ids could show other edges.
``cypher/question_browser.cypher`` matches the keys and draws the whole evidence subgraph, the
topics and the answers in one row. Everything is written in one transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kgqa.answer import Answer
from kgqa.errors import QuestionNotFoundError
from kgqa.store import queries
from kgqa.store.mapping import GraphMapping
from kgqa.store.protocol import GraphStore, Statement


@dataclass(frozen=True, slots=True)
class SavedQuestion:
    """A question read back from the store, with its evidence relationships."""

    id: str
    text: str
    asked_at: str
    answers: tuple[str, ...]
    evidence: tuple[tuple[str, str, str], ...]  # (head id, relationship type, tail id), saved order
    browser_cypher: str  # what to paste into Neo4j Browser (browser_cypher())

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "asked_at": self.asked_at,
            "answers": list(self.answers),
            "evidence": [dict(zip(("head", "relation", "tail"), e, strict=True)) for e in self.evidence],
            "browser_cypher": self.browser_cypher,
        }


def new_question_id() -> str:
    return "q-" + uuid.uuid4().hex[:12]


def save_answer(
    store: GraphStore, answer: Answer, *, question_id: str | None = None, link_entities: bool = False
) -> Answer:
    """Write ``answer`` as a Question node with its topics and grounded answers (as ids; linked by
    relationships only with ``link_entities``).

    Returns:
        the answer with ``question_id`` set.
    """
    qid = question_id or new_question_id()
    _save(
        store,
        qid,
        answer.question,
        answers=[a.id or a.name for a in answer.answers],
        evidence=answer.evidence_keys(),
        topic_ids=[t.id for t in answer.topics],
        answer_ids=[a.id for a in answer.answers if a.id is not None],
        link_entities=link_entities,
    )
    return replace(answer, question_id=qid)


def _save(
    store: GraphStore,
    qid: str,
    text: str,
    *,
    answers: list[str],
    evidence: list[tuple[str, str, str]],
    topic_ids: list[str],
    answer_ids: list[str],
    link_entities: bool = False,
) -> None:
    """The KgqaQuestion node and, with ``link_entities``, its KGQA_TOPIC and KGQA_ANSWER links, in
    one transaction."""
    statements = [
        Statement(
            queries.get("question_save"),
            {
                "id": qid,
                "text": text,
                "asked_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "answers": answers,
                "topic_ids": topic_ids,
                "answer_ids": answer_ids,
                "evidence_heads": [h for h, _, _ in evidence],
                "evidence_types": [r for _, r, _ in evidence],
                "evidence_tails": [t for _, _, t in evidence],
            },
        )
    ]
    if link_entities:
        statements += [
            Statement(queries.get("question_link_topics"), {"id": qid, "entity_ids": topic_ids}),
            Statement(queries.get("question_link_answers"), {"id": qid, "entity_ids": answer_ids}),
        ]
    store.write(statements)


def load_saved(store: GraphStore, question_id: str) -> SavedQuestion:
    """Read a saved question and its evidence back.

    Raises:
        QuestionNotFoundError: no KgqaQuestion with that id.
    """
    rows = store.run(queries.get("question_get"), {"id": question_id})
    if not rows:
        raise QuestionNotFoundError(
            f"no saved question with id {question_id!r}",
            hint="ids are printed by 'kgqa ask --save'; to list them, put "
            "'MATCH (q:KgqaQuestion) RETURN q.id AS id, q.text AS text' under a '// questions: ...' and "
            "'// returns: id, text' header in questions.cypher and run 'kgqa cypher questions.cypher'",
        )
    row = rows[0]
    evidence = store.run(queries.get("question_evidence"), {"id": question_id})
    return SavedQuestion(
        id=row["id"],
        text=row["text"],
        asked_at=row["asked_at"],
        answers=tuple(row["answers"] or ()),
        evidence=tuple((e["h_id"], e["rel_type"], e["t_id"]) for e in evidence),
        browser_cypher=browser_cypher(question_id, store.mapping),
    )


def browser_cypher(question_id: str, mapping: GraphMapping) -> str:
    """What to paste into Neo4j Browser to draw the question's evidence subgraph, as printed.

    Browser reads ``:param`` and the query as one statement unless ``;`` ends each, so both do;
    tests/cypher/test_lint.py lints this text with Neo4j's own parser. The query is rendered
    with the store's ``mapping``, as the store runs it.
    """
    quoted = question_id.replace("\\", "\\\\").replace('"', '\\"')
    return f':param id => "{quoted}";\n\n{mapping.render(queries.get("question_browser")).body};'
