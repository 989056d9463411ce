"""MoR's LLM planner: an LLM, prompted with the store's schema, writes the question's plan.

The reply must be JSON ``{"metapath": "<plan in the notation of kgqa.retrieval.mor.plan>"}``.
It is never executed blindly: names are matched to the schema's (case and separators ignored), a
hop the schema has only the other way round is turned around, and a plan that still does not
fit the schema (:func:`~kgqa.retrieval.mor.plan.validate`) is rejected: the fallback planner
(the trained one) answers instead, or, without one, :class:`~kgqa.errors.PlanError` is raised.
"""

from __future__ import annotations

import json
import re

from kgqa.errors import ConfigError, PlanError
from kgqa.reasoning.readers.protocol import LLMClient
from kgqa.retrieval.mor.plan import Chain, Hop, Metapath, PlanNode, Schema, parse_metapath, validate
from kgqa.retrieval.mor.retriever import Planner, QuestionReading

SYSTEM = """You plan retrieval over a typed knowledge graph. Given the graph schema and a question, \
write the question's plan as JSON {"metapath": "..."} and nothing else.

Notation: one or more chains joined by " AND ", each starting at the answer node, written \
"type*" (or "type*[text]" when the question describes the answer itself). Hops follow the \
stored direction: "-REL->" forward, "<-REL-" backward, "-REL{1,2}->" for one or two steps of a \
type joining a node type to itself. The chain ends at the node the question gives: \
"type[name]" when named, "type[text]" when only described. At most 3 hops in all.

Example (with a schema holding those types): "Which genes are linked to Marfan syndrome and to a \
finding described as 'tall stature'?" -> {"metapath": "Gene* <-DISEASE_PROTEIN- Disease[name] \
AND Gene* -PHENOTYPE_PROTEIN-> Phenotype[text]"}"""

_JSON = re.compile(r"\{.*\}", re.S)


def schema_prompt(schema: Schema) -> str:
    """The schema as the prompt shows it: one ``(Source)-[:TYPE]->(Target)`` line per triple."""
    return "\n".join(f"({s})-[:{r}]->({t})" for s, r, t in sorted(schema.triples))


def _canonical(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def repair(plan: Metapath, schema: Schema) -> Metapath:
    """``plan`` with node and relationship names matched to the schema's and hops the schema has
    only the other way round turned around; what cannot be matched is left as written."""
    labels = {_canonical(label): label for label in schema.labels}
    rels = {_canonical(r): r for _, r, _ in schema.triples}
    chains = []
    for chain in plan.chains:
        nodes = tuple(PlanNode(labels.get(_canonical(n.type), n.type), n.restriction) for n in chain.nodes)
        hops = []
        for hop, (a, b) in zip(chain.hops, zip(nodes, nodes[1:], strict=False), strict=True):
            rel = rels.get(_canonical(hop.rel_type), hop.rel_type)
            forward = hop.forward
            as_written = (a.type, rel, b.type) if forward else (b.type, rel, a.type)
            turned = (b.type, rel, a.type) if forward else (a.type, rel, b.type)
            if as_written not in schema.triples and turned in schema.triples:
                forward = not forward
            hops.append(Hop(rel, forward, hop.max_hops))
        chains.append(Chain(nodes, tuple(hops)))
    return Metapath(tuple(chains))


class LLMPlanner:
    """A :class:`~kgqa.retrieval.mor.retriever.Planner` backed by an LLM client.

    Args:
        client: any chat backend (OpenAI-compatible server, vLLM, transformers).
        schema: the store's schema the plan must fit.
        fallback: the planner used when the reply is no valid plan (None: raise PlanError).
    """

    def __init__(self, client: LLMClient, schema: Schema, *, fallback: Planner | None = None) -> None:
        self.client = client
        self.schema = schema
        self.fallback = fallback

    def plans(self, question: str, reading: QuestionReading) -> list[tuple[Metapath, float]]:
        """The LLM's one plan (probability 1), or the fallback's plans when it wrote none valid."""
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Schema:\n{schema_prompt(self.schema)}\n\nQuestion: {question}"},
        ]
        reply = self.client.complete(messages, temperature=0.0, max_tokens=200, seed=0).text
        try:
            plan = self.parse(reply)
        except PlanError:
            if self.fallback is None:
                raise
            return self.fallback.plans(question, reading)
        return [(plan, 1.0)]

    def parse(self, reply: str) -> Metapath:
        """The repaired plan in ``reply``.

        Raises:
            PlanError: no JSON object with a ``metapath`` string, a malformed plan, or one that
                does not fit the schema after repair (the message lists why).
        """
        match = _JSON.search(reply)
        try:
            data = json.loads(match.group(0)) if match else None
        except json.JSONDecodeError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("metapath"), str):
            raise PlanError(f"the LLM planner's reply holds no {{'metapath': ...}} JSON: {reply[:200]!r}")
        try:
            plan = repair(parse_metapath(data["metapath"].strip()), self.schema)
        except ConfigError as exc:
            raise PlanError(f"the LLM planner wrote a malformed plan: {exc}") from exc
        problems = validate(plan, self.schema)
        if problems:
            raise PlanError(f"the LLM planner's plan {plan} does not fit the store: {'; '.join(problems)}")
        return plan
