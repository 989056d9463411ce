"""Readers for KGQA question files: one ``QAExample`` per question, whatever the source format.

Formats (``fmt``):

- ``metaqa``: ``question<TAB>ans1|ans2``, the topic entity marked ``[like this]``. The question
  template comes from the sibling ``<stem>_qtype.txt`` when present (``qa_dev.txt`` ->
  ``qa_dev_qtype.txt``, same line order); it names the gold relation path
  (``movie_to_director_to_movie`` -> ``directed_by, directed_by``).
- ``pathquestion``: ``question<TAB>answer(alt1/alt2/)<TAB>subj#r1#e1#r2#ans#<end>#ans`` (PQ; PQL
  paths have no ``<end>`` part). Gold path: consecutive (h, r, t) hops up to ``<end>``.
- ``wc2014``: ``question<TAB>answer<TAB>path[*path]<TAB>all/answers/<TAB>context[<TAB>topic1/topic2]``
  (WC-P2, WC-C). Conjunctive questions join two paths with ``*``; ``*_inverse`` relations stay as
  written (the WC2014 KB holds those triples too).
- ``rog-jsonl``: JSON lines ``{id, question, answer: [...], q_entity: [...], a_entity: [...]}``,
  optionally ``relation_paths: [["directed_by", ...], ...]`` (gold relation names, topic first).
- ``stark``: STaRK's CSV ``id,query,answer_ids`` (answer ids a JSON or Python list of node ids),
  optionally ``template`` (-> ``qtype``), ``metapath`` and ``text_constraint`` (planner
  supervision, see ``QAExample``); other columns are ignored. Line numbers count data rows (the
  header is not one), since a quoted query may span physical lines.

Line numbers are 0-based physical lines (what ``qa_dev_consistent_idx.txt`` and ``lines`` use);
error messages give the 1-based line, as editors do.
"""

from __future__ import annotations

import ast
import csv
import gzip
import hashlib
import itertools
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, TextIO, get_args

from kgqa.atomic_write import atomic_write
from kgqa.errors import ConfigError, IngestError
from kgqa.gzip_check import READ_ERRORS, check_gzip, is_gzip
from kgqa.types import ParsedQuestion, QAExample

QuestionFormat = Literal["metaqa", "pathquestion", "wc2014", "rog-jsonl", "stark"]
FORMATS: tuple[str, ...] = get_args(QuestionFormat)

_PATH_END = "<end>"
_INVERSE = "_inverse"
_SNIPPET_CHARS = 80

Hop = tuple[str, str, str]
_Parser = Callable[[str, str, int], QAExample]

#: MetaQA's KB relation for each non-movie slot of a qtype (every MetaQA relation links a movie).
METAQA_SLOT_RELATIONS = {
    "actor": "starred_actors",
    "director": "directed_by",
    "writer": "written_by",
    "genre": "has_genre",
    "language": "in_language",
    "year": "release_year",
    "tag": "has_tags",
    "tags": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}


def read_questions(
    path: Path,
    fmt: str,
    *,
    lines: Collection[int] | None = None,
    limit: int | None = None,
) -> Iterator[QAExample]:
    """Stream the questions of one file.

    Args:
        path: the question file (``.gz`` is read through gzip).
        fmt: one of ``FORMATS``.
        lines: keep only these 0-based line numbers (e.g. from ``read_line_numbers``).
        limit: stop after this many examples (counted after the ``lines`` filter).

    Returns:
        A generator of ``QAExample``; ``qid`` is ``"<file stem>:<line>"`` unless the file gives ids.
        Blank lines are skipped.

    Raises:
        ConfigError: ``fmt`` is not a known format (raised at once, before iteration).
        IngestError: the file is missing or unreadable (at once), or a line is malformed (while
            iterating; the message names ``path:line``).
    """
    parser = _PARSERS.get(fmt)
    if parser is None and fmt != "stark":
        raise ConfigError(f"unknown question format '{fmt}'", hint=f"use one of: {', '.join(FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise IngestError("question file not found", path=str(path), hint="check the path")
    if parser is None:
        return _iter_stark(path, lines=lines, limit=limit)
    qtypes = _read_qtypes(path) if fmt == "metaqa" else []
    return _iter_questions(path, parser, qtypes, lines=lines, limit=limit)


def read_line_numbers(path: Path) -> set[int]:
    """0-based line numbers listed one per line (MetaQA ``qa_dev_consistent_idx.txt``).

    Raises:
        IngestError: the file is missing or a line is not a non-negative integer.
    """
    path = Path(path)
    if not path.is_file():
        raise IngestError("line-number file not found", path=str(path))
    numbers: set[int] = set()
    with _open(path) as handle:
        for index, text in enumerate(handle):
            text = text.strip()
            if not text:
                continue
            if not text.isdigit():
                raise IngestError(
                    f"expected a 0-based line number, got {_snippet(text)}", path=str(path), line=index + 1
                )
            numbers.add(int(text))
    return numbers


def split_train_val(
    examples: Sequence[QAExample],
    *,
    val_fraction: float,
    seed: int,
    key: Callable[[QAExample], str] | None = None,
) -> tuple[list[QAExample], list[QAExample]]:
    """Deterministic train/validation split by a seeded hash of each example's key.

    An example's side depends only on its key and the seed, so the split is stable when the file
    grows or is reordered. Input order is kept within each side.

    Args:
        examples: the examples to split.
        val_fraction: expected share of validation examples, in [0, 1].
        seed: changes the assignment; the same seed always gives the same split.
        key: what identifies an example; its ``qid`` when None.

    Returns:
        ``(train, val)``.

    Raises:
        ConfigError: ``val_fraction`` is outside [0, 1].
    """
    if not 0.0 <= val_fraction <= 1.0:
        raise ConfigError(f"val_fraction must be in [0, 1], got {val_fraction}")
    train: list[QAExample] = []
    val: list[QAExample] = []
    for example in examples:
        name = example.qid if key is None else key(example)
        (val if _unit_hash(f"{seed}:{name}") < val_fraction else train).append(example)
    return train, val


def sample(examples: Sequence[QAExample], n: int | None, *, seed: int = 0) -> list[QAExample]:
    """A fixed pseudo-random sample of ``n`` examples (all of them when ``n`` is None), in input order.

    Question files are often grouped by question type (MetaQA's dev files are sorted by it), so
    the first ``n`` lines would cover only a few types. Ranking by a seeded hash of the qid picks a
    representative sample that is the same on every run and grows by adding examples as ``n`` grows.
    """
    if n is None or n >= len(examples):
        return list(examples)
    ranked = sorted(range(len(examples)), key=lambda i: _unit_hash(f"sample:{seed}:{examples[i].qid}"))
    return [examples[i] for i in sorted(ranked[: max(n, 0)])]


def _unit_hash(text: str) -> float:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64


def _open(path: Path) -> TextIO:
    """The file for text reads; a ``.gz`` one is checked whole first (:func:`check_gzip`)."""
    try:
        if is_gzip(path):
            check_gzip(path, what="question file")
            return gzip.open(path, "rt", encoding="utf-8-sig", newline="\n")
        return path.open(encoding="utf-8-sig", newline="\n")
    except OSError as exc:
        raise IngestError(f"cannot open question file: {exc.strerror or exc}", path=str(path)) from exc


def _iter_questions(
    path: Path,
    parser: _Parser,
    qtypes: Sequence[str],
    *,
    lines: Collection[int] | None,
    limit: int | None,
) -> Iterator[QAExample]:
    if limit is not None and limit <= 0:
        return
    wanted = set(lines) if lines is not None else None
    count = 0
    stem = file_stem(path)
    reading = _Reading(path)
    with _open(path) as handle:
        try:
            for index, raw in enumerate(handle):
                if wanted is not None and index not in wanted:
                    continue
                text = raw.rstrip("\r\n")
                if not text.strip():
                    continue
                try:
                    example = parser(text, stem, index)
                except _Malformed as exc:
                    raise IngestError(str(exc), path=str(path), line=index + 1) from None
                if index < len(qtypes):
                    example = _with_qtype(example, qtypes[index])
                yield reading.unique(example, index + 1)
                count += 1
                if limit is not None and count >= limit:
                    return
        except (UnicodeDecodeError, *READ_ERRORS) as exc:
            raise reading.failed(exc) from exc


def file_stem(path: Path) -> str:
    """The name a file's derived question ids start with: ``qa_dev.txt.gz`` -> ``qa_dev``."""
    return Path(path.stem).stem if is_gzip(path) else path.stem


class _Reading:
    """What every question reader checks as it goes: that no question id repeats (two questions
    on one id would share one log record, split side and plan), and how a failed read is told."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._first_line: dict[str, int] = {}

    def unique(self, example: QAExample, line: int) -> QAExample:
        """``example``, read at 1-based ``line``, after checking its id is new.

        Raises:
            IngestError: the id was read before (the message names both lines).
        """
        first = self._first_line.setdefault(example.qid, line)
        if first != line:
            raise IngestError(
                f"question id {example.qid!r} repeats the one on line {first}",
                path=str(self.path),
                line=line,
                hint="give each question its own id (eval logs, splits and plans are keyed by it)",
            )
        return example

    def failed(self, exc: Exception) -> IngestError:
        """The error for a read that failed (text is decoded a block at a time, so no line)."""
        reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else "truncated or corrupt"
        return IngestError(
            f"question file is {reason} ({exc})",
            path=str(self.path),
            hint="save the file as UTF-8 text (or re-download it)",
        )


def _with_qtype(example: QAExample, qtype: str) -> QAExample:
    path = metaqa_relation_path(qtype)
    return replace(example, qtype=qtype, relation_paths=(path,) if path else ())


def metaqa_relation_path(qtype: str) -> tuple[str, ...]:
    """The KB relations a MetaQA qtype walks, () for a qtype outside MetaQA's schema.

    ``actor_to_movie_to_director`` -> ``("starred_actors", "directed_by")``: each step joins a
    movie and one other slot, and that slot names the relation (direction is the walker's job).
    """
    slots = qtype.split("_to_")
    path = []
    for a, b in zip(slots, slots[1:], strict=False):
        other = b if a == "movie" else a if b == "movie" else None
        if other not in METAQA_SLOT_RELATIONS:
            return ()
        path.append(METAQA_SLOT_RELATIONS[other])
    return tuple(path)


def _relation_paths(gold_paths: tuple[tuple[Hop, ...], ...]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(relation for _, relation, _ in hops) for hops in gold_paths)


def _with_inverse_twins(paths: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
    """Every path with each step also as its ``_inverse`` twin (WC2014 stores both directions).

    A walk crosses triples either way, so ``plays_in_club`` walked backwards is the same step as
    ``plays_in_club_inverse``; labelling only one of two such parallel triples would teach the
    scorer to tell apart two statements of one fact.
    """

    def twins(relation: str) -> tuple[str, str]:
        base = relation.removesuffix(_INVERSE)
        return (base, base + _INVERSE)

    combos = (combo for path in paths for combo in itertools.product(*(twins(r) for r in path)))
    return tuple(dict.fromkeys(combos))


def _read_qtypes(path: Path) -> list[str]:
    """Lines of the sibling ``<stem>_qtype.txt`` (MetaQA), or [] when there is none."""
    sibling = path.with_name(f"{file_stem(path)}_qtype.txt")
    if not sibling.is_file():
        return []
    with _open(sibling) as handle:
        return [line.strip() for line in handle]


class _Malformed(Exception):
    """A line does not fit its format; turned into IngestError with path and line by the caller."""


def _snippet(text: str) -> str:
    return repr(text if len(text) <= _SNIPPET_CHARS else text[:_SNIPPET_CHARS] + "...")


def _fields(text: str, *, at_least: int, at_most: int, fmt: str) -> list[str]:
    fields = text.split("\t")
    if not at_least <= len(fields) <= at_most:
        want = str(at_least) if at_least == at_most else f"{at_least}-{at_most}"
        raise _Malformed(f"{fmt}: expected {want} tab-separated fields, got {len(fields)}: {_snippet(text)}")
    return fields


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def _parse_metaqa(text: str, stem: str, line: int) -> QAExample:
    raw_question, answers = _fields(text, at_least=2, at_most=2, fmt="metaqa")
    parsed = ParsedQuestion.parse(raw_question)
    topics, question = list(parsed.bracketed), parsed.text
    if not question:
        raise _Malformed(f"metaqa: empty question: {_snippet(text)}")
    gold = _unique(a.strip() for a in answers.split("|"))
    if not gold:
        raise _Malformed(f"metaqa: no answers after the tab: {_snippet(text)}")
    return QAExample(
        qid=f"{stem}:{line}", question=question, topic_ids=_unique(topics), answers=gold, line=line
    )


def _path_hops(path: str, fmt: str) -> tuple[Hop, ...]:
    """``s#r1#e1#r2#e2#<end>#e2`` -> ((s, r1, e1), (e1, r2, e2))."""
    parts = path.strip().split("#")
    if _PATH_END in parts:
        parts = parts[: parts.index(_PATH_END)]
    if len(parts) < 3 or len(parts) % 2 == 0 or not all(parts):
        raise _Malformed(f"{fmt}: gold path is not entity#relation#entity[#...]: {_snippet(path)}")
    return tuple((parts[i], parts[i + 1], parts[i + 2]) for i in range(0, len(parts) - 2, 2))


def _pq_answers(field: str) -> tuple[str, ...]:
    """``main(alt1/alt2/)`` -> (main, alt1, alt2), deduplicated; the main answer may hold parentheses."""
    field = field.strip()
    if field.endswith(")"):
        fallback: tuple[str, ...] | None = None
        for index, char in enumerate(field):
            if char != "(":
                continue
            main, inner = field[:index], field[index + 1 : -1]
            if not main or not inner.endswith("/"):
                continue
            alts = [a for a in inner.split("/") if a]
            if main in alts:
                return _unique([main, *alts])
            fallback = fallback or _unique([main, *alts])
        if fallback:
            return fallback
    return _unique([field])


def _parse_pathquestion(text: str, stem: str, line: int) -> QAExample:
    question, answer, path = _fields(text, at_least=3, at_most=3, fmt="pathquestion")
    hops = _path_hops(path, "pathquestion")
    answers = _pq_answers(answer)
    if not question.strip() or not answers:
        raise _Malformed(f"pathquestion: empty question or answer: {_snippet(text)}")
    return QAExample(
        qid=f"{stem}:{line}",
        question=question.strip(),
        topic_ids=(hops[0][0],),
        answers=answers,
        line=line,
        gold_paths=(hops,),
        relation_paths=_relation_paths((hops,)),
    )


def _parse_wc2014(text: str, stem: str, line: int) -> QAExample:
    fields = _fields(text, at_least=4, at_most=6, fmt="wc2014")
    question, answer, paths, all_answers = (f.strip() for f in fields[:4])
    gold_paths = tuple(_path_hops(p, "wc2014") for p in paths.split("*"))
    if len(fields) >= 6 and fields[5].strip():
        topics = _unique(t.strip() for t in fields[5].split("/"))
    else:
        topics = _unique(p[0][0] for p in gold_paths)
    answers = _unique([answer, *(a.strip() for a in all_answers.split("/"))])
    if not question or not answers:
        raise _Malformed(f"wc2014: empty question or answer: {_snippet(text)}")
    return QAExample(
        qid=f"{stem}:{line}",
        question=question,
        topic_ids=topics,
        answers=answers,
        line=line,
        gold_paths=gold_paths,
        relation_paths=_with_inverse_twins(_relation_paths(gold_paths)),
    )


def _id_list(value: Any, field: str) -> list[str]:
    """A list of ids, or the keys of an ``{id: name}`` object (some dumps use that shape)."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [str(k) for k in value]
    if isinstance(value, list) and all(isinstance(v, str | int) for v in value):
        return [str(v) for v in value]
    raise _Malformed(f"rog-jsonl: '{field}' must be a list of strings, got {type(value).__name__}")


def _rog_relation_paths(value: Any) -> tuple[tuple[str, ...], ...]:
    """The optional ``relation_paths`` field: a list of non-empty lists of relation names."""
    if value is None:
        return ()
    if isinstance(value, list) and all(
        isinstance(p, list) and p and all(isinstance(r, str) and r for r in p) for p in value
    ):
        return tuple(tuple(p) for p in value)
    raise _Malformed("rog-jsonl: 'relation_paths' must be a list of non-empty lists of relation names")


def _parse_rog(text: str, stem: str, line: int) -> QAExample:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Malformed(f"rog-jsonl: invalid JSON ({exc.msg}): {_snippet(text)}") from None
    if not isinstance(record, dict):
        raise _Malformed(f"rog-jsonl: expected a JSON object, got {type(record).__name__}")
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise _Malformed("rog-jsonl: missing or empty 'question'")
    answers = _id_list(record.get("a_entity"), "a_entity") or _id_list(record.get("answer"), "answer")
    qid = record.get("id")
    return QAExample(
        qid=str(qid) if qid not in (None, "") else f"{stem}:{line}",
        question=question.strip(),
        topic_ids=_unique(_id_list(record.get("q_entity"), "q_entity")),
        answers=_unique(answers),
        line=line,
        relation_paths=_rog_relation_paths(record.get("relation_paths")),
    )


STARK_COLUMNS = ("id", "query", "answer_ids")


def _stark_ids(value: str) -> tuple[str, ...]:
    """``["a", "b"]`` (JSON) or ``['a', 'b']`` / ``[1, 2]`` (Python, as STaRK's own CSVs write them)."""
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise _Malformed(f"stark: answer_ids is not a JSON or Python list: {_snippet(value)}") from None
    if not isinstance(parsed, list | tuple) or not all(isinstance(v, str | int) for v in parsed):
        raise _Malformed(f"stark: answer_ids must be a list of node ids: {_snippet(value)}")
    return _unique(str(v) for v in parsed)


def _iter_stark(path: Path, *, lines: Collection[int] | None, limit: int | None) -> Iterator[QAExample]:
    if limit is not None and limit <= 0:
        return
    wanted = set(lines) if lines is not None else None
    count = 0
    reading = _Reading(path)
    with _open(path) as handle:
        reader = csv.DictReader(handle)
        try:
            missing = [c for c in STARK_COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise IngestError(f"stark: header lacks the columns {missing}", path=str(path), line=1)
            for index, row in enumerate(reader):
                if wanted is not None and index not in wanted:
                    continue
                try:
                    example = _parse_stark(row, index)
                except _Malformed as exc:
                    raise IngestError(str(exc), path=str(path), line=reader.line_num) from None
                yield reading.unique(example, reader.line_num)
                count += 1
                if limit is not None and count >= limit:
                    return
        except (UnicodeDecodeError, *READ_ERRORS) as exc:
            raise reading.failed(exc) from exc


def _parse_stark(row: dict[str, str], index: int) -> QAExample:
    query = (row.get("query") or "").strip()
    qid = (row.get("id") or "").strip()
    if not query or not qid:
        raise _Malformed("stark: empty id or query")
    answers = _stark_ids(row.get("answer_ids") or "")
    if not answers:
        raise _Malformed(f"stark: question {qid} has no answer ids")
    constraint = (row.get("text_constraint") or "").strip()
    return QAExample(
        qid=qid,
        question=query,
        topic_ids=(),
        answers=answers,
        line=index,
        qtype=(row.get("template") or "").strip(),
        metapath=(row.get("metapath") or "").strip(),
        text_constraints=(constraint,) if constraint else (),
    )


_PARSERS: dict[str, _Parser] = {
    "metaqa": _parse_metaqa,
    "pathquestion": _parse_pathquestion,
    "wc2014": _parse_wc2014,
    "rog-jsonl": _parse_rog,
}


def without_gold_paths(examples: Iterable[QAExample]) -> list[QAExample]:
    """``examples`` with no relation paths (``--no-gold-paths``): every label and metric that reads
    them falls back to shortest topic -> answer paths, as for a file that names none. Hop counts
    (MetaQA qtype, PathQuestion path length) stay; ``--hops N`` fixes those too."""
    return [replace(e, relation_paths=()) for e in examples]


def rog_record(example: QAExample) -> dict[str, Any]:
    """``example`` as one ``rog-jsonl`` object (what :func:`read_questions` reads back)."""
    record: dict[str, Any] = {
        "id": example.qid,
        "question": example.question,
        "q_entity": list(example.topic_ids),
        "a_entity": list(example.answers),
    }
    if example.relation_paths:
        record["relation_paths"] = [list(p) for p in example.relation_paths]
    return record


def write_rog_jsonl(path: Path, examples: Iterable[QAExample]) -> None:
    """Write ``examples`` as ``rog-jsonl``, one object a line (the parent folder is created);
    atomically, so a failed or killed write keeps the file that was there."""
    with atomic_write(path) as out:
        for example in examples:
            out.write((json.dumps(rog_record(example), ensure_ascii=False) + "\n").encode("utf-8"))
