"""The vLLM backend is an optional extra; without it, choosing it says which extra to install."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from kgqa.config import ReaderSettings
from kgqa.errors import KgqaError
from kgqa.reasoning.readers import make_llm_client


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_make_llm_client_vllm_without_vllm_names_the_extra() -> None:
    settings = ReaderSettings(kind="llm", backend="vllm", model="some/model")
    with pytest.raises(ImportError, match=r"kgqa\[vllm\]") as info:
        make_llm_client(settings)
    assert isinstance(info.value, KgqaError)
    assert 'pip install "kgqa[vllm]"' in (info.value.hint or "")


def test_importing_reasoning_loads_no_model_library() -> None:
    code = (
        "import sys, kgqa.reasoning, kgqa.reasoning.readers\n"
        "print(sorted(m for m in ('torch', 'transformers', 'openai', 'vllm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
