"""Rebuild kb.txt, the quick-start slice of the MetaQA KB, from ../shared/data/metaqa/kb.txt.gz.

The slice keeps every triple of every film linked to a handful of well-known people, so the
quick-start questions ("who directed Cast Away?") have their answers and evidence inside it.

usage: python examples/metaqa_movies/make_slice.py [KB_GZ] [OUT]
"""

from __future__ import annotations

import gzip
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


def main() -> None:
    here = Path(__file__).resolve().parent
    kb = Path(sys.argv[1]) if len(sys.argv) > 1 else here.parents[2] / "shared/data/metaqa/kb.txt.gz"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else here / "kb.txt"
    with gzip.open(kb, "rt", encoding="utf-8") as fh:
        triples = [line.rstrip("\n").split("|") for line in fh if line.count("|") == 2]
    films = {h for h, _, t in triples if t in SEED_PEOPLE}
    kept = sorted({"|".join(t) for t in triples if t[0] in films})
    out.write_text("\n".join(kept) + "\n", encoding="utf-8")
    print(f"{len(films)} films, {len(kept)} triples -> {out}")


if __name__ == "__main__":
    main()
