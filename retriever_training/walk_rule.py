"""The walk rule a checkpoint learns and answers with (``Subgraph.topic_walks``): may a
question's walks come back through its topic, and may the topic answer? Decided from the
training split itself, with no dataset switch.

MetaQA's answers are the ends of walks that never come back through the topic (walks allowed
back end at non-answers too), while PathQuestion asks "who is the other half of X 's wife ?"
(X itself) and names walks that pass back through X (docs/decisions.md). A training question
*returns* when one of its answers is one of its topics, or when its named relation paths reach
an answer only by walks back through a topic. (Without a named path there is no other case: the
end of a walk back through a topic is also the end of the shorter walk from that topic.) The
rule is permissive when at least :data:`TOPIC_WALK_SHARE` of the training questions return;
otherwise it stays "never back".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kgqa.retrieval.labels import answer_mask, relation_path_labels, weak_labels
from retriever_training.examples import TrainingExample

#: Share of training questions that must return through a topic for the permissive rule: MetaQA
#: has none (0 of 598 at ``--limit 200``), PathQuestion 30% (1,178 of 3,985), docs/decisions.md;
#: a few odd lines of a user's file stay below it.
TOPIC_WALK_SHARE = 0.02


@dataclass(frozen=True, slots=True)
class WalkRule:
    """The rule chosen for a training split and the statistic it was chosen by.

    Attributes:
        topic_walks: walks may pass through and end at a topic.
        returning: training questions that return through a topic (:func:`returns_through_topic`).
        questions: training questions counted.
    """

    topic_walks: bool
    returning: int
    questions: int

    @property
    def share(self) -> float:
        return self.returning / self.questions if self.questions else 0.0

    def to_dict(self) -> dict[str, float | int | bool]:
        return {
            "topic_walks": self.topic_walks,
            "returning": self.returning,
            "questions": self.questions,
            "share": round(self.share, 6),
            "threshold": TOPIC_WALK_SHARE,
        }


def returns_through_topic(example: TrainingExample) -> bool:
    """Whether ``example`` needs walks back through its topic: an answer is a topic, or its named
    relation paths reach an answer only by such walks."""
    qa = example.example
    never_back = replace(example.prepared.subgraph, topic_walks=False)
    if set(qa.answers) & set(never_back.entity_ids[: never_back.num_topics]):
        return True
    if not qa.relation_paths:
        return False
    back = replace(never_back, topic_walks=True)
    paths = qa.relation_paths
    return not relation_path_labels(never_back, qa.answers, paths).any() and bool(
        relation_path_labels(back, qa.answers, paths).any()
    )


def choose_walk_rule(train: Sequence[TrainingExample]) -> WalkRule:
    """The walk rule of the training split ``train`` (module docstring)."""
    returning = sum(returns_through_topic(ex) for ex in train)
    share = returning / len(train) if train else 0.0
    return WalkRule(share >= TOPIC_WALK_SHARE, returning, len(train))


def under_walk_rule(examples: Sequence[TrainingExample], topic_walks: bool) -> list[TrainingExample]:
    """``examples`` with their subgraphs under the walk rule, labels and answers recomputed.

    Examples are prepared (and cached) under "never back", the rule of every checkpoint before
    the rule was learned; only a permissive rule changes them.
    """
    out = []
    for ex in examples:
        if ex.prepared.subgraph.topic_walks == topic_walks:
            out.append(ex)
            continue
        prepared = replace(ex.prepared, subgraph=replace(ex.prepared.subgraph, topic_walks=topic_walks))
        labels = weak_labels(prepared.subgraph, ex.example)
        out.append(TrainingExample(ex.example, prepared, labels, answer_mask(prepared, ex.example.answers)))
    return out
