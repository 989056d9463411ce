"""Reasoning over retrieved evidence: the SubgraphRAG prompt, answer parsing, the LLM readers and
the extractive reader (:mod:`kgqa.reasoning.extractive`).

Importing this package loads no model library; backends are built by
:func:`kgqa.reasoning.readers.make_llm_client`.
"""

from __future__ import annotations

from kgqa.reasoning.llm_reader import LLMReader, LLMReading
from kgqa.reasoning.parse import ParsedAnswers, parse_answers
from kgqa.reasoning.prompts import Form, Prompt, build_prompt, double_check_message

__all__ = [
    "Form",
    "LLMReader",
    "LLMReading",
    "ParsedAnswers",
    "Prompt",
    "build_prompt",
    "double_check_message",
    "parse_answers",
]
