"""The tiny offline model: a byte-level BPE tokenizer trained on env text and a small, randomly
initialised Llama, saved as an ordinary transformers checkpoint folder. No model hub is involved.

Rules:

* **Loads the real way.** ``out`` holds ``config.json``, ``generation_config.json``,
  ``model.safetensors``, ``tokenizer.json`` and ``tokenizer_config.json`` (plus the chat template);
  ``AutoTokenizer.from_pretrained(out)`` and ``AutoModelForCausalLM.from_pretrained(out)`` load it.
  The config is ``model_type: llama``: transformers 5 rebuilds a ``qwen2`` tokenizer from Qwen's
  own regex and ignores the saved pre-tokenizer, while ``llama`` honours ``tokenizer.json``.
* **Deterministic.** The same arguments give byte-identical ``tokenizer.json`` and
  ``model.safetensors``: the corpus is a pure function of its config and the registered envs
  (:mod:`.corpus`), BPE training is deterministic (tested in a fresh process), and the weights come
  from ``torch.manual_seed(seed)`` inside a forked RNG (the caller's global RNG state is left as it
  was). The tokenizer does not depend on ``seed``, so models of one size and vocabulary share a
  tokenizer.
* **Tokenizer.** Byte level, so every string encodes and ``decode(encode(x)) == x`` exactly (no
  normaliser, no prefix space, no clean-up of spaces). Pre-tokenization splits only at
  punctuation, quotes outside words, brackets, newlines and the ReAct/Search-R1 tags, so BPE learns
  multi-word tokens ("take apple 1 from countertop 1"). Special tokens ``<|pad|>`` (0),
  ``<|im_start|>`` (1), ``<|im_end|>`` (2, EOS) are never split; the tags ``<think>``,
  ``</think>``, ``<action>``, ``</action>``, ``<search>``, ``</search>``, ``<answer>``,
  ``</answer>``, ``<information>``, ``</information>`` are single ordinary tokens (kept by
  ``skip_special_tokens``). No BOS is added. ``len(tokenizer) == vocab_size``.
* **Chat template.** ChatML: ``<|im_start|>{role}\\n{content}<|im_end|>\\n`` per message, and
  ``<|im_start|>assistant\\n`` with ``add_generation_prompt``. Generation stops at ``<|im_end|>``
  (``generation_config.eos_token_id``).
* ``seed_gym_model.json`` records the builder version, seed, size, shape, parameter count, corpus
  fingerprint and sources (the env profiles' ``corpus`` targets the text came from) and file
  fingerprints; :func:`describe_model` reads it for run manifests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from seed_gym.agents.corpus import CorpusConfig, build_corpus, corpus_fingerprint, corpus_sources

#: Bump whenever this code would build different files from the same arguments and corpus (the
#: corpus fingerprint tracks the env text and prompt templates separately).
BUILDER_VERSION = "1"
METADATA_FILE = "seed_gym_model.json"

PAD, IM_START, IM_END = "<|pad|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = (PAD, IM_START, IM_END)
TAGS = ("<think>", "</think>", "<action>", "</action>", "<search>", "</search>", "<answer>", "</answer>",
        "<information>", "</information>")

# Split points (each kept as its own piece): the tags, newline runs, and runs of punctuation —
# sentence marks, brackets, quotes that open or close (not the apostrophe in "it's") — with the
# spaces and tabs around them ("', '" is one piece). Everything between two split points, spaces
# included, is one piece, so BPE can merge across words ("take apple 1 from countertop 1").
SPLIT_PATTERN = (r"</?(?:think|action|search|answer|information)>|\n+"
                 r"|(?:[ \t]*(?:[.,;:!?\"()\[\]{}]|'(?!\w)|(?<!\w)'))+[ \t]*")

_TAG_RE = re.compile("|".join(re.escape(t) for t in TAGS))

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


@dataclass(frozen=True)
class ModelShape:
    """A Llama shape: tied embeddings, grouped-query attention (``kv_heads`` < ``heads``)."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    max_positions: int = 4096

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


#: Named sizes (parameter counts at vocabulary 4,096): tiny ≈ 1.0M, small ≈ 5.0M, base ≈ 20M.
SIZES: dict[str, ModelShape] = {
    "tiny": ModelShape(hidden=128, layers=2, heads=4, kv_heads=2, intermediate=512),
    "small": ModelShape(hidden=256, layers=5, heads=4, kv_heads=2, intermediate=768),
    "base": ModelShape(hidden=512, layers=6, heads=8, kv_heads=2, intermediate=1536),
}


@dataclass(frozen=True)
class TinyModelConfig:
    """Everything that decides the files :func:`build_tiny_model` writes."""

    seed: int = 0
    size: str = "tiny"
    vocab_size: int = 4096
    corpus: CorpusConfig = CorpusConfig()

    @property
    def shape(self) -> ModelShape:
        if self.size not in SIZES:
            raise ValueError(f"unknown size {self.size!r}; known: {', '.join(SIZES)}")
        return SIZES[self.size]


# -- tokenizer -------------------------------------------------------------------------------
def new_tokenizer() -> Any:
    """An untrained byte-level BPE ``tokenizers.Tokenizer`` with the split rules above."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def train_tokenizer(texts: list[str], vocab_size: int = 4096) -> Any:
    """A byte-level BPE of exactly ``vocab_size`` entries: specials, then BPE, then the tags.

    The tags are cut out of the training text (they are added whole afterwards, and a text is
    split at them before BPE sees it). Raises ``ValueError`` when the corpus is too small to fill
    the vocabulary.
    """
    from tokenizers import AddedToken, pre_tokenizers, trainers

    reserved = len(SPECIAL_TOKENS) + len(TAGS)
    if vocab_size < 256 + reserved + 1:
        raise ValueError(f"vocab_size must be > {256 + reserved} (bytes, specials, tags), got {vocab_size}")
    tokenizer = new_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(TAGS), min_frequency=2, show_progress=False,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    pieces = (piece for text in texts for piece in _TAG_RE.split(text) if piece)
    tokenizer.train_from_iterator(pieces, trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAGS])
    if tokenizer.get_vocab_size(with_added_tokens=True) != vocab_size:
        raise ValueError(f"the corpus fills only {tokenizer.get_vocab_size(with_added_tokens=True)} of "
                         f"{vocab_size} vocabulary entries; use a larger corpus or a smaller vocab_size")
    return tokenizer


def wrap_tokenizer(tokenizer: Any, max_length: int = 4096) -> Any:
    """The transformers tokenizer around a trained ``tokenizers.Tokenizer``, with the chat template."""
    from transformers import PreTrainedTokenizerFast

    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token=IM_END, pad_token=PAD,
        additional_special_tokens=[IM_START], clean_up_tokenization_spaces=False,
        model_max_length=max_length, padding_side="left")
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


# -- model -----------------------------------------------------------------------------------
def llama_config(shape: ModelShape, vocab_size: int) -> Any:
    from transformers import LlamaConfig

    pad_id, eos_id = SPECIAL_TOKENS.index(PAD), SPECIAL_TOKENS.index(IM_END)
    return LlamaConfig(
        vocab_size=vocab_size, hidden_size=shape.hidden, intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads, head_dim=shape.head_dim,
        max_position_embeddings=shape.max_positions, tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=eos_id, pad_token_id=pad_id)


def parameter_count(shape: ModelShape, vocab_size: int = 4096) -> int:
    """Parameters of a shape (tied embeddings counted once), without allocating any weights."""
    import torch
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM(llama_config(shape, vocab_size))
    return sum(p.numel() for p in model.parameters())


def init_model(shape: ModelShape, vocab_size: int, seed: int) -> Any:
    """A randomly initialised Llama; the weights depend only on (shape, vocab_size, seed)."""
    import torch
    from transformers import GenerationConfig, LlamaForCausalLM

    config = llama_config(shape, vocab_size)
    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG as it was
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id, bos_token_id=None)
    return model.eval()


# -- building --------------------------------------------------------------------------------
def _file_fingerprint(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _library_versions() -> dict[str, str]:
    import tokenizers
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__}


@contextlib.contextmanager
def _quiet_progress() -> Iterator[None]:
    """No "Writing model shards" bar for a 4 MB file; the caller's setting is restored."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def build_tiny_model(out: str | Path, *, seed: int = 0, size: str = "tiny", vocab_size: int = 4096,
                     corpus: CorpusConfig | None = None, overwrite: bool = False) -> Path:
    """Train the tokenizer, initialise the model and save both into ``out``; returns ``out``.

    The folder appears complete or not at all (built beside it, then renamed). An existing
    non-empty ``out`` is an error unless ``overwrite``.
    """
    config = TinyModelConfig(seed=int(seed), size=size, vocab_size=int(vocab_size), corpus=corpus or CorpusConfig())
    shape = config.shape
    out = Path(out).expanduser().resolve()
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} exists and is not empty (pass overwrite=True to replace it)")

    sources = corpus_sources()
    texts = build_corpus(config.corpus)
    tokenizer = wrap_tokenizer(train_tokenizer(texts, config.vocab_size), shape.max_positions)
    model = init_model(shape, config.vocab_size, config.seed)

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        tokenizer.save_pretrained(staging)
        with _quiet_progress():
            model.save_pretrained(staging)
        metadata = {
            "builder": "seed_gym.agents.tiny", "builder_version": BUILDER_VERSION,
            "model_type": "llama", "seed": config.seed, "size": config.size, "shape": asdict(shape),
            "vocab_size": config.vocab_size, "parameters": sum(p.numel() for p in model.parameters()),
            "corpus": {**config.corpus.describe(), "fingerprint": corpus_fingerprint(texts),
                       "sources": sources, "documents": len(texts), "chars": sum(map(len, texts))},
            "special_tokens": {"pad": PAD, "eos": IM_END, "im_start": IM_START},
            "files": {name: _file_fingerprint(staging / name) for name in ("tokenizer.json", "model.safetensors")},
            "built_with": _library_versions(),
        }
        (staging / METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n")
        # mkdtemp (and the weights writer) make private files; a model folder is for sharing.
        os.chmod(staging, 0o755)
        for path in staging.iterdir():
            os.chmod(path, 0o644)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def describe_model(model_dir: str | Path) -> dict[str, Any]:
    """What a run manifest records about a model folder.

    A tiny-model folder gives its ``seed_gym_model.json`` plus ``path``; any other folder gives
    ``path``, ``builder: None`` and its ``model_type`` when ``config.json`` names one.
    """
    folder = Path(model_dir).expanduser()
    description: dict[str, Any] = {"path": str(folder)}
    metadata = folder / METADATA_FILE
    if metadata.is_file():
        return {**json.loads(metadata.read_text()), **description}
    description["builder"] = None
    config = folder / "config.json"
    if config.is_file():
        try:
            description["model_type"] = json.loads(config.read_text()).get("model_type")
        except (OSError, ValueError):
            pass
    return description
