"""Schema mapping: run kgqa's kernels on a graph kgqa did not ingest, with its own labels,
properties and relationship types.

The kernels in ``cypher/`` are written for kgqa's own graph model: ``(:Entity {id, name, text})``
nodes joined by fact relationships, kgqa-owned ``name_norm``/``embedding``/``embedding_model``
properties, ``:RelationType`` nodes and indexes named ``entity_*``. A ``GraphMapping`` names
what a user's graph uses instead (``store.entity_label``, ``store.entity_id_property``, ...) and
``render`` rewrites a kernel's text to it, once per kernel, inside the store adapters; the rest
of kgqa keeps calling the same kernels with the same parameters.

Why a rendering step and not Cypher parameters: labels, relationship types and property keys
cannot be parameters in a pattern. Neo4j 5.26+ accepts dynamic labels ``(n:$(label))`` and
property access ``n[$key]``, but its planner cannot turn them into index seeks: 5.26 to 2025.07
plan an ``AllNodesScan``, 2025.08+ a token-lookup scan, never a property-index seek (Cypher
manual, MATCH, "Performance caveats"); on a 10M-node graph every ``{id: $id}`` lookup would
scan. Rendered static names keep every lookup an index seek on both backends.

What ``render`` rewrites (in code only; comments, strings and quoted names are left alone, except
the index-name strings noted below), and nothing else:

- the label ``Entity`` becomes the mapped label, backtick-quoted; ``RelationType`` becomes
  ``KgqaRelationType``, so kgqa's relation-type nodes never meet a user's own label;
- on variables bound to the entity label (``(e:Entity``), on ``node`` yielded by an ``entity_*``
  index procedure, and on ``startNode(r)``/``endNode(r)``: ``.id``, ``.name``, ``.text``, ``.type``
  and ``.embedding`` become the mapped properties, and the kgqa-owned ``.name_norm`` and
  ``.embedding_model`` become ``kgqa_name_norm`` and ``kgqa_embedding_model``; keys of a map in
  an entity node pattern (``(e:Entity {id: ...})``) likewise;
- with ``fact_types`` set, every untyped relationship pattern (``-[r]-``, ``--``) gets those
  types, so subgraphs, evidence and statistics see only the user's KG facts;
- kgqa's index and constraint names (``entity_name``, ...) get a ``kgqa_`` prefix, in DDL and in
  the ``'entity_name'`` strings that index procedures take; the string ``'embedding'`` (the
  property argument of ``db.create.setNodeVectorProperty``) becomes the mapped embedding property.

The default mapping renders nothing, so a store kgqa ingested itself runs the kernels verbatim.
tests/cypher/test_mapping.py renders every kernel under a mapping with awkward names, lints each
with Neo4j's parser and runs each on the embedded store.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, replace

from kgqa.errors import ConfigError
from kgqa.store.queries import Query

DEFAULT_LABEL = "Entity"
RELATION_TYPE_LABEL = "RelationType"
MAPPED_RELATION_TYPE_LABEL = "KgqaRelationType"
#: kgqa's index and constraint names; prefixed with ``kgqa_`` on a mapped graph.
KGQA_INDEX_NAMES = frozenset(
    {
        "entity_id",
        "entity_name_norm",
        "entity_name",
        "entity_text",
        "entity_embedding",
        "relation_type_embedding",
        "relation_type_name",
    }
)
INDEX_PREFIX = "kgqa_"

# String literals, quoted names and comments: masked while the code is rewritten.
_NOT_CODE = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|//[^\n]*|/\*.*?\*/", re.S)
_MASK = re.compile(r"\x00(\d+)\x00")
_ENTITY_VAR = re.compile(r"\(\s*([A-Za-z_]\w*)\s*:\s*Entity\b")
_ENTITY_MAP = re.compile(r"(:\s*Entity\s*\{)([^{}]*)(\})")
_MAP_KEY = re.compile(r"(^|,)(\s*)([A-Za-z_]\w*)(\s*:)")
_ENDPOINT_PROP = re.compile(r"\b((?:startNode|endNode)\(\s*\w+\s*\))\.([A-Za-z_]\w*)\b")
_LABEL = re.compile(r"(:\s*)(Entity|RelationType)\b")
_UNTYPED_REL = re.compile(r"-\[\s*([A-Za-z_]\w*)\s*\]-")
_ANONYMOUS_REL = re.compile(r"\)(\s*<?)--(>?\s*)\(")
_INDEX_DDL = re.compile(r"\b(INDEX|CONSTRAINT)(\s+)([A-Za-z_]\w*)")
_ENTITY_INDEX_CALL = re.compile(r"queryNodes\(\s*\x00(\d+)\x00")
_NAME = re.compile(r"[^\x00]+")


@functools.lru_cache(maxsize=4096)
def _rendered(mapping: GraphMapping, text: str) -> str:
    return mapping._render_text(text)


def quote(name: str) -> str:
    """``name`` as a Cypher identifier: backtick-quoted, embedded backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True, slots=True)
class GraphMapping:
    """Which label, properties and relationship types of a graph kgqa reads as its KG.

    Attributes:
        entity_label: the label of entity nodes (one label; give several node kinds a common
            label first).
        id_property: a unique, string-valued property identifying an entity.
        name_property: the entity's display name (linked against, embedded).
        text_property: an optional description (embedded with the name, searched by MoR).
        type_property: the entity's type as a string (``Disease``, ``Gene``): what MoR's typed
            plans, traversal and text matching filter on.
        embedding_property: where kgqa writes the entity's vector (``kgqa_embedding`` on a
            mapped graph unless named, so a user's own vectors are never overwritten).
        fact_types: relationship types that are KG facts; empty means every type.
    """

    entity_label: str = DEFAULT_LABEL
    id_property: str = "id"
    name_property: str = "name"
    text_property: str = "text"
    embedding_property: str = "embedding"
    fact_types: tuple[str, ...] = ()
    type_property: str = "type"

    def __post_init__(self) -> None:
        names = {
            "store.entity_label": self.entity_label,
            "store.entity_id_property": self.id_property,
            "store.entity_name_property": self.name_property,
            "store.entity_text_property": self.text_property,
            "store.entity_embedding_property": self.embedding_property,
            "store.entity_type_property": self.type_property,
            **{f"store.fact_types[{i}]": t for i, t in enumerate(self.fact_types)},
        }
        for key, name in names.items():
            if not _NAME.fullmatch(name or ""):
                raise ConfigError(
                    f"{key} = {name!r} is not a usable Neo4j name (empty, or holds a NUL)",
                    hint="name the label/property/type exactly as SHOW/CALL db.labels() lists it",
                )
        if self.entity_label == RELATION_TYPE_LABEL or self.entity_label.startswith("Kgqa"):
            raise ConfigError(
                f"store.entity_label = {self.entity_label!r} is one of kgqa's own labels",
                hint="name the label your entity nodes carry",
            )

    @classmethod
    def of(
        cls,
        *,
        entity_label: str = DEFAULT_LABEL,
        id_property: str = "id",
        name_property: str = "name",
        text_property: str = "text",
        embedding_property: str | None = None,
        fact_types: tuple[str, ...] = (),
        type_property: str = "type",
    ) -> GraphMapping:
        """A mapping from settings; an unnamed embedding property is ``embedding`` on kgqa's own
        graph and ``kgqa_embedding`` on a mapped one."""
        draft = cls(
            entity_label, id_property, name_property, text_property, "embedding", fact_types, type_property
        )
        if embedding_property is None and not draft.is_default:
            return replace(draft, embedding_property="kgqa_embedding")
        return replace(draft, embedding_property=embedding_property or "embedding")

    @property
    def is_default(self) -> bool:
        """kgqa's own graph model: kernels run verbatim."""
        return self == DEFAULT_MAPPING

    @property
    def name_norm_property(self) -> str:
        return "name_norm" if self.is_default else "kgqa_name_norm"

    def index_name(self, name: str) -> str:
        """The name kgqa's index or constraint ``name`` has under this mapping."""
        return name if self.is_default or name not in KGQA_INDEX_NAMES else INDEX_PREFIX + name

    def entity_property(self, name: str) -> str:
        """The property that holds kgqa's entity property ``name`` under this mapping."""
        return {
            "id": self.id_property,
            "name": self.name_property,
            "text": self.text_property,
            "type": self.type_property,
            "embedding": self.embedding_property,
            "name_norm": self.name_norm_property,
            "embedding_model": "embedding_model" if self.is_default else "kgqa_embedding_model",
        }.get(name, name)

    def to_json(self) -> str:
        """The mapping as the JSON ``kgqa prepare`` records in the store (its fingerprint)."""
        return json.dumps(
            {
                "entity_label": self.entity_label,
                "id_property": self.id_property,
                "name_property": self.name_property,
                "text_property": self.text_property,
                "embedding_property": self.embedding_property,
                "fact_types": list(self.fact_types),
                "type_property": self.type_property,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> GraphMapping:
        """The mapping ``to_json`` wrote.

        Raises:
            ConfigError: the text is not such a mapping (a store written by something else).
        """
        try:
            data = json.loads(text)
            return cls(**{**data, "fact_types": tuple(data["fact_types"])})
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(
                f"the schema mapping recorded in the store is unreadable: {text[:200]!r}",
                hint="the :KgqaMeta node was changed by hand; remove its 'mapping' property and re-run "
                "'kgqa prepare'",
            ) from exc

    def differences(self, other: GraphMapping) -> list[str]:
        """What changes from this mapping to ``other``, as ``key: old -> new`` lines."""
        keys = {
            "store.entity_label": "entity_label",
            "store.entity_id_property": "id_property",
            "store.entity_name_property": "name_property",
            "store.entity_text_property": "text_property",
            "store.entity_embedding_property": "embedding_property",
            "store.fact_types": "fact_types",
            "store.entity_type_property": "type_property",
        }
        return [
            f"{key}: {getattr(self, attr)!r} -> {getattr(other, attr)!r}"
            for key, attr in keys.items()
            if getattr(self, attr) != getattr(other, attr)
        ]

    def render(self, query: Query) -> Query:
        """``query`` with this mapping's names in place of kgqa's (unchanged for the default).

        The text is rewritten once per mapping and kernel text (cached), not at every call."""
        if self.is_default:
            return query
        return replace(query, text=_rendered(self, query.text))

    def _render_text(self, text: str) -> str:
        masked: list[str] = []

        def mask(match: re.Match[str]) -> str:
            masked.append(match.group())
            return f"\x00{len(masked) - 1}\x00"

        code = _NOT_CODE.sub(mask, text)
        entity_vars = set(_ENTITY_VAR.findall(code))
        for call in _ENTITY_INDEX_CALL.finditer(code):
            if masked[int(call.group(1))].strip("'\"").startswith("entity_"):
                entity_vars.add("node")
        for var in entity_vars:
            code = re.sub(rf"\b({re.escape(var)})\.([A-Za-z_]\w*)\b", self._property_access, code)
        code = _ENDPOINT_PROP.sub(self._property_access, code)
        code = _ENTITY_MAP.sub(self._map_keys, code)
        code = _LABEL.sub(self._label, code)
        if self.fact_types:
            types = "|".join(quote(t) for t in self.fact_types)
            code = _UNTYPED_REL.sub(lambda m: f"-[{m.group(1)}:{types}]-", code)
            code = _ANONYMOUS_REL.sub(lambda m: f"){m.group(1)}-[:{types}]-{m.group(2)}(", code)
        code = _INDEX_DDL.sub(lambda m: m.group(1) + m.group(2) + self.index_name(m.group(3)), code)
        return _MASK.sub(lambda m: self._literal(masked[int(m.group(1))]), code)

    def _property_access(self, match: re.Match[str]) -> str:
        mapped = self.entity_property(match.group(2))
        return f"{match.group(1)}.{quote(mapped) if mapped != match.group(2) else mapped}"

    def _map_keys(self, match: re.Match[str]) -> str:
        def key(m: re.Match[str]) -> str:
            mapped = self.entity_property(m.group(3))
            name = quote(mapped) if mapped != m.group(3) else mapped
            return m.group(1) + m.group(2) + name + m.group(4)

        return match.group(1) + _MAP_KEY.sub(key, match.group(2)) + match.group(3)

    def _label(self, match: re.Match[str]) -> str:
        if match.group(2) == DEFAULT_LABEL:
            return match.group(1) + quote(self.entity_label)
        return match.group(1) + MAPPED_RELATION_TYPE_LABEL

    def _literal(self, literal: str) -> str:
        """A masked literal, with kgqa's index names and the vector property argument mapped."""
        if literal[:1] in "'\"" and literal[1:-1] in KGQA_INDEX_NAMES:
            return literal[0] + self.index_name(literal[1:-1]) + literal[0]
        if literal == "'embedding'":
            return "'" + self.embedding_property.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return literal


#: kgqa's own graph model (``Entity``, ``id``, ``name``, ...): what a store kgqa ingested uses.
DEFAULT_MAPPING = GraphMapping()
