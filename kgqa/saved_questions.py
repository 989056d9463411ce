"""Question write-back (``kgqa ask --save``, KGQA and MoR answers) and ``kgqa show``: evidence a
user can open in Browser.

A saved answer becomes ``(:Question {id, text, asked_at, answers, evidence_rels})`` with
``TOPIC`` and ``ANSWER`` relationships to its entities; ``evidence_rels`` holds the element ids
of the evidence relationships, so ``cypher/question_browser.cypher`` draws the whole evidence
subgraph. Everything is written in one transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kgqa.answer import Answer
from kgqa.errors import QuestionNotFoundError
from kgqa.retrieval.mor.retriever import MorResult
from kgqa.store import queries
from kgqa.store.protocol import GraphStore, Statement


@dataclass(frozen=True, slots=True)
class SavedQuestion:
    """A question read back from the store, with its evidence relationships."""

    id: str
    text: str
    asked_at: str
    answers: tuple[str, ...]
    evidence: tuple[tuple[str, str, str, str], ...]  # (head id, relationship type, tail id, element id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "asked_at": self.asked_at,
            "answers": list(self.answers),
            "evidence": [
                dict(zip(("head", "relation", "tail", "rel_eid"), e, strict=True)) for e in self.evidence
            ],
            "browser_cypher": browser_cypher(self.id),
        }


def new_question_id() -> str:
    return "q-" + uuid.uuid4().hex[:12]


def save_answer(store: GraphStore, answer: Answer, *, question_id: str | None = None) -> Answer:
    """Write ``answer`` as a Question node linked to its topics and grounded answers.

    Returns:
        the answer with ``question_id`` set.
    """
    qid = question_id or new_question_id()
    _save(
        store,
        qid,
        answer.question,
        answers=[a.id or a.name for a in answer.answers],
        evidence_rels=answer.evidence_rel_eids(),
        topic_ids=[t.id for t in answer.topics],
        answer_ids=[a.id for a in answer.answers if a.id is not None],
    )
    return replace(answer, question_id=qid)


def save_mor_result(
    store: GraphStore, question: str, result: MorResult, *, question_id: str | None = None
) -> str:
    """Write a MoR answer like :func:`save_answer`: its answer nodes, the anchors its evidence
    trajectories start from as topics, and their relationships as evidence.

    Returns:
        the question id.
    """
    qid = question_id or new_question_id()
    trajectories = [t for node in result.nodes for t in node.trajectories]
    _save(
        store,
        qid,
        question,
        answers=[n.id for n in result.nodes],
        evidence_rels=list(dict.fromkeys(r for t in trajectories for r in t.rels)),
        topic_ids=list(dict.fromkeys(t.nodes[0] for t in trajectories if t.rels)),
        answer_ids=[n.id for n in result.nodes],
    )
    return qid


def _save(
    store: GraphStore,
    qid: str,
    text: str,
    *,
    answers: list[str],
    evidence_rels: list[str],
    topic_ids: list[str],
    answer_ids: list[str],
) -> None:
    """The Question node and its TOPIC and ANSWER links, in one transaction."""
    statements = [
        Statement(
            queries.get("question_save"),
            {
                "id": qid,
                "text": text,
                "asked_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "answers": answers,
                "evidence_rels": evidence_rels,
            },
        ),
        Statement(
            queries.get("question_link_entities"), {"id": qid, "role": "TOPIC", "entity_ids": topic_ids}
        ),
        Statement(
            queries.get("question_link_entities"), {"id": qid, "role": "ANSWER", "entity_ids": answer_ids}
        ),
    ]
    store.write(statements)


def load_saved(store: GraphStore, question_id: str) -> SavedQuestion:
    """Read a saved question and its evidence back.

    Raises:
        QuestionNotFoundError: no Question with that id.
    """
    rows = store.run(queries.get("question_get"), {"id": question_id})
    if not rows:
        raise QuestionNotFoundError(
            f"no saved question with id {question_id!r}",
            hint="ids are printed by 'kgqa ask --save'; to list them, put "
            "'MATCH (q:Question) RETURN q.id AS id, q.text AS text' under a '// questions: ...' and "
            "'// returns: id, text' header in questions.cypher and run 'kgqa cypher questions.cypher'",
        )
    row = rows[0]
    evidence = store.run(queries.get("question_evidence"), {"id": question_id})
    order = {eid: i for i, eid in enumerate(row["evidence_rels"] or [])}
    ranked = sorted(evidence, key=lambda e: order.get(e["rel_eid"], len(order)))
    return SavedQuestion(
        id=row["id"],
        text=row["text"],
        asked_at=row["asked_at"],
        answers=tuple(row["answers"] or ()),
        evidence=tuple((e["h_id"], e["rel_type"], e["t_id"], e["rel_eid"]) for e in ranked),
    )


def browser_cypher(question_id: str) -> str:
    """What to paste into Neo4j Browser to draw the question's evidence subgraph."""
    quoted = question_id.replace("\\", "\\\\").replace('"', '\\"')
    return f':param id => "{quoted}"\n\n{queries.get("question_browser").body}'
