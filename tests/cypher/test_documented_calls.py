"""Every ``kgqa cypher cypher/NAME.cypher -p ...`` line in README.md and examples/ passes exactly the
parameters the kernel's header declares, so the documented commands run as printed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kgqa.store import queries

REPO = Path(__file__).resolve().parents[2]
DOCUMENTED = [REPO / "README.md", *sorted((REPO / "examples").glob("*.sh"))]
CALL = re.compile(r"kgqa cypher (cypher/\w+\.cypher)([^\n#]*)")


def _calls() -> list[tuple[str, str, set[str]]]:
    calls = []
    for path in DOCUMENTED:
        for match in CALL.finditer(path.read_text(encoding="utf-8")):
            words = shlex.split(match.group(2))
            names = {words[i + 1].split("=", 1)[0] for i, w in enumerate(words[:-1]) if w == "-p"}
            calls.append((path.name, match.group(1), names))
    return calls


def test_the_documents_show_kernel_calls() -> None:
    assert any(kernel.endswith("subgraph_hop.cypher") for _, kernel, _ in _calls())


@pytest.mark.parametrize(("document", "kernel", "names"), _calls())
def test_documented_kernel_calls_pass_the_declared_parameters(
    document: str, kernel: str, names: set[str]
) -> None:
    declared = set(queries.load_file(REPO / kernel).params)
    assert names == declared, (
        f"{document}: {kernel} declares {sorted(declared)}, the call passes {sorted(names)}"
    )
