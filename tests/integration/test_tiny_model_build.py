"""The built tiny model folder, loaded the real way (AutoTokenizer / AutoModelForCausalLM): what it
contains, its tokenizer after reload, its chat template and generation settings, and that a build
is reproducible byte for byte from the seed (also in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import seed_gym.registry
from seed_gym.agents import corpus as C
from seed_gym.agents import tiny as T

pytestmark = pytest.mark.integration

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

ODD_TEXT = ("héllo wörld — ¿qué? 🤖🧪 中文字符 \t tab\r\n crlf \u200b zero-width \x00 nul "
            "<|im_start|>user\nfake<|im_end|> <|pad|> <think> it's 'quoted', [SEP] click[buy now]")


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path):
    return transformers.AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def model(tiny_model_dir: Path):
    return transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def env_texts() -> dict[str, list[str]]:
    """Env text the tokenizer was not trained on (another corpus seed)."""
    from seed_gym.envs.alfworld import corpus as alfworld_corpus
    from seed_gym.envs.searchqa import corpus as searchqa_corpus
    from seed_gym.envs.webshop import corpus as webshop_corpus

    return {"alfworld": alfworld_corpus.sample_texts(11, games=12),
            "webshop": webshop_corpus.sample_texts(11, products=80, episodes=12),
            "searchqa": searchqa_corpus.sample_texts(11, entities=80, questions=12)}


def test_folder_is_a_llama_checkpoint_of_the_tiny_size(tiny_model_dir: Path, model, tokenizer):
    names = {p.name for p in tiny_model_dir.iterdir()}
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
            "tokenizer_config.json", T.METADATA_FILE} <= names
    assert model.config.model_type == "llama"
    assert len(tokenizer) == model.config.vocab_size == 4096
    assert model.config.tie_word_embeddings and model.lm_head.weight is model.model.embed_tokens.weight
    assert model.config.num_key_value_heads < model.config.num_attention_heads
    assert 0.9e6 <= sum(p.numel() for p in model.parameters()) <= 1.2e6


def test_metadata_describes_the_build(tiny_model_dir: Path, model):
    meta = T.describe_model(tiny_model_dir)
    assert meta["path"] == str(tiny_model_dir)
    assert (meta["builder_version"], meta["seed"], meta["size"], meta["vocab_size"]) == (T.BUILDER_VERSION, 0,
                                                                                        "tiny", 4096)
    assert meta["parameters"] == sum(p.numel() for p in model.parameters())
    assert meta["corpus"]["fingerprint"] == C.corpus_fingerprint(C.build_corpus(C.CorpusConfig()))
    assert meta["corpus"]["sources"] == C.corpus_sources() == sorted(
        {seed_gym.registry.profile(env_id).corpus for env_id in ("alfworld", "searchqa", "webshop")})
    assert (meta["corpus"]["seed"], meta["corpus"]["version"]) == (0, C.CORPUS_VERSION)
    for name, digest in meta["files"].items():
        assert digest == T._file_fingerprint(tiny_model_dir / name)


def test_eos_is_im_end_everywhere(tiny_model_dir: Path, tokenizer, model):
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.eos_token_id == im_end
    assert tokenizer.pad_token == "<|pad|>"
    assert model.generation_config.eos_token_id == im_end == model.config.eos_token_id
    assert model.generation_config.pad_token_id == tokenizer.pad_token_id
    saved = json.loads((tiny_model_dir / "generation_config.json").read_text())
    assert (saved["eos_token_id"], saved["pad_token_id"]) == (im_end, tokenizer.pad_token_id)


def test_chat_template_after_reload(tokenizer):
    messages = [{"role": "user", "content": "go to desk 1"}, {"role": "assistant", "content": "<action>look</action>"}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>user\ngo to desk 1<|im_end|>\n<|im_start|>assistant\n<action>look</action>"
                    "<|im_end|>\n<|im_start|>assistant\n")
    ids = tokenizer(text).input_ids
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert ids.count(tokenizer.eos_token_id) == 2


def test_reloaded_tokenizer_tokenizes_exactly_like_the_trained_one(tiny_model_dir: Path, tokenizer, env_texts):
    """The transformers 5 trap: AutoTokenizer must honour tokenizer.json, not rebuild a tokenizer."""
    from tokenizers import Tokenizer

    trained = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    for texts in env_texts.values():
        for text in texts[:40]:
            assert tokenizer(text).input_ids == trained.encode(text).ids
    assert tokenizer(ODD_TEXT).input_ids == trained.encode(ODD_TEXT).ids


@pytest.mark.parametrize("env", ["alfworld", "webshop", "searchqa"])
def test_env_prompts_round_trip_exactly(tokenizer, env_texts, env: str):
    for text in env_texts[env]:
        assert tokenizer.decode(tokenizer(text).input_ids) == text


def test_odd_unicode_round_trips_and_specials_stay_whole(tokenizer):
    ids = tokenizer(ODD_TEXT).input_ids
    assert tokenizer.decode(ids) == ODD_TEXT
    for special in ("<|im_start|>", "<|im_end|>", "<|pad|>", "<think>"):
        assert ids.count(tokenizer.convert_tokens_to_ids(special)) == 1


def test_bpe_learned_multi_word_tokens_for_alfworld(tokenizer, env_texts):
    """Splitting only at punctuation lets a 4k vocabulary cover ALFWorld at several characters a token."""
    texts = env_texts["alfworld"]
    chars = sum(map(len, texts))
    tokens = sum(len(tokenizer(t).input_ids) for t in texts)
    assert chars / tokens >= 6
    assert len(tokenizer("<action>go to countertop 1</action>").input_ids) <= 4


def test_generation_runs_from_a_chat_prompt(tokenizer, model):
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "look"}], tokenize=False,
                                           add_generation_prompt=True)
    batch = tokenizer([prompt, prompt + "ok"], return_tensors="pt", padding=True)
    out = model.generate(**batch, max_new_tokens=6, do_sample=False)
    assert out.shape[0] == 2 and out.shape[1] <= batch.input_ids.shape[1] + 6
    assert isinstance(tokenizer.decode(out[0]), str)


def test_same_seed_rebuilds_identical_files_in_a_fresh_process(tiny_model_dir: Path, tmp_path: Path):
    script = ("import sys; from seed_gym.agents.tiny import build_tiny_model; "
              "build_tiny_model(sys.argv[1], seed=0, size='tiny')")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # nothing may depend on str hashing
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "again")], check=True, env=env)
    for name in ("tokenizer.json", "model.safetensors", "config.json", "generation_config.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tiny_model_dir / name).read_bytes(), name


def test_another_seed_changes_the_weights_but_not_the_tokenizer(tiny_model_dir: Path, tmp_path: Path):
    other = T.build_tiny_model(tmp_path / "seed1", seed=1, size="tiny")
    assert (other / "tokenizer.json").read_bytes() == (tiny_model_dir / "tokenizer.json").read_bytes()
    assert (other / "model.safetensors").read_bytes() != (tiny_model_dir / "model.safetensors").read_bytes()
    assert T.describe_model(other)["seed"] == 1
