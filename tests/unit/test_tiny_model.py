"""The tiny model's parts: the pre-tokenizer, BPE training, the transformers wrapper with its chat
template, model shapes and the metadata reader. The corpus is tested in tests/unit/test_corpus.py,
the full build in tests/integration/test_tiny_model_build.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seed_gym.agents import corpus as C
from seed_gym.agents import tiny as T
from seed_gym.envs.alfworld import corpus as alfworld_corpus
from seed_gym.envs.searchqa import corpus as searchqa_corpus
from seed_gym.envs.webshop import corpus as webshop_corpus

ODD_TEXT = ("héllo wörld — ¿qué? 🤖🧪 中文字符 \t tab\r\n crlf \u200b zero-width \x00 nul "
            "<|im_start|>user\nfake<|im_end|> <|pad|> <think> it's 'quoted', [SEP] click[buy now]")


#: Small sizes of the built-in envs' samplers (their own keyword knobs): for training, and smaller
#: for unseen text.
SMALL = {"games": 12, "products": 60, "episodes": 12, "entities": 80, "questions": 12}
SMALLER = {"games": 6, "products": 40, "episodes": 6, "entities": 60, "questions": 6}


def small_corpus_texts(seed: int, sizes: dict[str, int]) -> list[str]:
    """A small corpus from the built-in envs' samplers, plus the chat frames."""
    return [*alfworld_corpus.sample_texts(seed, games=sizes["games"]),
            *webshop_corpus.sample_texts(seed, products=sizes["products"], episodes=sizes["episodes"]),
            *searchqa_corpus.sample_texts(seed, entities=sizes["entities"], questions=sizes["questions"]),
            *C.chat_frames()]


@pytest.fixture(scope="module")
def small_corpus() -> list[str]:
    return small_corpus_texts(0, SMALL)


@pytest.fixture(scope="module")
def small_tokenizer(small_corpus: list[str]):
    return T.train_tokenizer(small_corpus, vocab_size=1024)


# -- pre-tokenizer ----------------------------------------------------------------------------
def pieces(text: str) -> list[str]:
    pre = T.new_tokenizer().pre_tokenizer
    return [piece.replace("Ġ", " ").replace("Ċ", "\n") for piece, _ in pre.pre_tokenize_str(text)]


def test_words_are_not_split_so_bpe_can_merge_across_them():
    assert pieces("take apple 1 from countertop 1") == ["take apple 1 from countertop 1"]
    assert pieces("Now it's your turn") == ["Now it's your turn"]


def test_split_at_punctuation_runs_quotes_brackets_newlines_and_tags():
    assert pieces("You arrive at drawer 1. The drawer 1 is closed.") == [
        "You arrive at drawer 1", ". ", "The drawer 1 is closed", "."]
    assert pieces("['go to desk 1', 'look']") == ["['", "go to desk 1", "', '", "look", "']"]
    assert pieces("<think>hmm</think>\n\n<action>click[buy now]</action>") == [
        "<think>", "hmm", "</think>", "\n\n", "<action>", "click", "[", "buy now", "]", "</action>"]


def test_an_admissible_action_splits_the_same_in_the_list_and_in_the_answer():
    listed = pieces("Your admissible actions are: ['take mug 2 from shelf 1', 'look'].")
    answered = pieces("<action>take mug 2 from shelf 1</action>")
    assert "take mug 2 from shelf 1" in listed and "take mug 2 from shelf 1" in answered


# -- BPE --------------------------------------------------------------------------------------
def test_vocabulary_has_exactly_the_requested_size_with_fixed_special_ids(small_tokenizer):
    assert small_tokenizer.get_vocab_size(with_added_tokens=True) == 1024
    assert [small_tokenizer.token_to_id(t) for t in T.SPECIAL_TOKENS] == [0, 1, 2]
    for tag in T.TAGS:
        assert small_tokenizer.encode(f"x{tag}y").tokens.count(tag) == 1


def test_special_tokens_are_never_split(small_tokenizer):
    ids = small_tokenizer.encode("a<|im_start|>b<|im_end|><|pad|>c").ids
    for special_id in (0, 1, 2):
        assert ids.count(special_id) == 1


@pytest.mark.parametrize("text", [ODD_TEXT, "", " ", "\n\n\n", "x" * 5000, "\U0010ffff\ufffd", "é" * 7])
def test_any_text_round_trips_exactly(small_tokenizer, text: str):
    assert small_tokenizer.decode(small_tokenizer.encode(text).ids, skip_special_tokens=False) == text


def test_env_text_round_trips_exactly(small_tokenizer):
    unseen = small_corpus_texts(7, SMALLER)
    for text in unseen:
        assert small_tokenizer.decode(small_tokenizer.encode(text).ids, skip_special_tokens=False) == text


def test_a_corpus_too_small_for_the_vocabulary_is_refused():
    with pytest.raises(ValueError, match="fills only"):
        T.train_tokenizer(["tiny corpus"], vocab_size=1024)
    with pytest.raises(ValueError, match="vocab_size"):
        T.train_tokenizer(["tiny corpus"], vocab_size=200)


def test_bpe_training_is_deterministic(small_corpus: list[str], small_tokenizer):
    assert T.train_tokenizer(small_corpus, vocab_size=1024).to_str() == small_tokenizer.to_str()


# -- transformers wrapper and chat template ---------------------------------------------------
def test_chat_template_is_chatml(small_tokenizer):
    pytest.importorskip("transformers")
    tokenizer = T.wrap_tokenizer(small_tokenizer)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "look"}]
    assert tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nlook<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.apply_chat_template(messages, tokenize=False) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nlook<|im_end|>\n")


def test_wrapper_has_eos_and_pad_and_adds_no_bos(small_tokenizer):
    pytest.importorskip("transformers")
    tokenizer = T.wrap_tokenizer(small_tokenizer)
    assert (tokenizer.eos_token, tokenizer.eos_token_id) == ("<|im_end|>", 2)
    assert (tokenizer.pad_token, tokenizer.pad_token_id) == ("<|pad|>", 0)
    assert tokenizer("look").input_ids == small_tokenizer.encode("look").ids
    assert tokenizer.decode(tokenizer("<think>a</think><|im_end|>").input_ids, skip_special_tokens=True) == (
        "<think>a</think>")


# -- model shapes and metadata ----------------------------------------------------------------
@pytest.mark.parametrize("size, low, high", [("tiny", 0.9e6, 1.2e6), ("small", 4.5e6, 5.5e6)])
def test_sizes_have_their_advertised_parameter_counts(size: str, low: float, high: float):
    pytest.importorskip("transformers")
    assert low <= T.parameter_count(T.SIZES[size], 4096) <= high


def test_shapes_use_grouped_query_attention():
    for shape in T.SIZES.values():
        assert shape.kv_heads < shape.heads and shape.heads % shape.kv_heads == 0
        assert shape.hidden % shape.heads == 0


def test_weights_depend_on_the_seed_only_and_leave_the_global_rng_alone():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    state = torch.random.get_rng_state()
    first = T.init_model(T.SIZES["tiny"], 512, seed=3).state_dict()
    assert torch.equal(torch.random.get_rng_state(), state)
    again = T.init_model(T.SIZES["tiny"], 512, seed=3).state_dict()
    other = T.init_model(T.SIZES["tiny"], 512, seed=4).state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not torch.equal(first["model.embed_tokens.weight"], other["model.embed_tokens.weight"])


def test_unknown_size_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="unknown size"):
        T.build_tiny_model(tmp_path / "m", size="huge")


def test_a_non_empty_folder_is_not_overwritten_silently(tmp_path: Path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        T.build_tiny_model(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_describe_model_reads_the_metadata(tmp_path: Path):
    (tmp_path / T.METADATA_FILE).write_text(json.dumps({"builder_version": "1", "seed": 5}))
    assert T.describe_model(tmp_path) == {"builder_version": "1", "seed": 5, "path": str(tmp_path)}


def test_describe_model_of_a_foreign_checkpoint(tmp_path: Path):
    assert T.describe_model(tmp_path) == {"path": str(tmp_path), "builder": None}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    assert T.describe_model(tmp_path) == {"path": str(tmp_path), "builder": None, "model_type": "qwen2"}
