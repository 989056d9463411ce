"""Rebuild the quick-start slice of MetaQA from ../shared/data/metaqa.

kb.txt keeps every triple of every film linked to a handful of well-known people; questions.txt
keeps the 1-hop and 2-hop dev questions (at most 150 each) whose topic and answers all lie in that
slice, so the quick start can train a small retriever and answer with evidence inside it.

usage: python examples/metaqa_movies/make_slice.py [METAQA_DIR] [OUT_DIR]
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

SEED_PEOPLE = {
    "Tom Hanks",
    "Steven Spielberg",
    "Robert Zemeckis",
    "Christopher Nolan",
    "Meg Ryan",
    "Harrison Ford",
    "Quentin Tarantino",
    "Hayao Miyazaki",
    "Sofia Coppola",
    "Ridley Scott",
    "Sigourney Weaver",
    "Kathryn Bigelow",
}


QUESTIONS_PER_HOP = 150
BRACKET = re.compile(r"\[([^\]]+)\]")


def main() -> None:
    here = Path(__file__).resolve().parent
    metaqa = Path(sys.argv[1]) if len(sys.argv) > 1 else here.parents[2] / "shared/data/metaqa"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else here
    with gzip.open(metaqa / "kb.txt.gz", "rt", encoding="utf-8") as fh:
        triples = [line.rstrip("\n").split("|") for line in fh if line.count("|") == 2]
    films = {h for h, _, t in triples if t in SEED_PEOPLE}
    kept = sorted({"|".join(t) for t in triples if t[0] in films})
    (out / "kb.txt").write_text("\n".join(kept) + "\n", encoding="utf-8")
    entities = {x for line in kept for x in line.split("|")[::2]}
    questions = []
    for hop in (1, 2):
        lines = (metaqa / f"{hop}-hop" / "qa_dev.txt").read_text(encoding="utf-8").splitlines()
        inside = [q for q in lines if _inside(q, entities)]
        questions += inside[:QUESTIONS_PER_HOP]
    (out / "questions.txt").write_text("\n".join(questions) + "\n", encoding="utf-8")
    print(f"{len(films)} films, {len(kept)} triples, {len(questions)} questions -> {out}")


def _inside(line: str, entities: set[str]) -> bool:
    question, _, answers = line.partition("\t")
    topics = BRACKET.findall(question)
    return (
        bool(topics) and all(t in entities for t in topics) and all(a in entities for a in answers.split("|"))
    )


if __name__ == "__main__":
    main()
