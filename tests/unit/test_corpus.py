"""The tiny model's corpus: each env's sample texts (its profile's ``corpus`` target) and how
:func:`seed_gym.agents.corpus.build_corpus` collects them over the registered envs."""

from __future__ import annotations

import inspect

import pytest

from seed_gym import registry
from seed_gym.agents import corpus as C
from seed_gym.envs.alfworld import corpus as alfworld_corpus
from seed_gym.profile import EnvProfile, resolve
from seed_gym.registry import EnvSpec

BUILTIN_ENVS = ("alfworld", "searchqa", "webshop", "webshop-browser")
BUILTIN_TARGETS = ["seed_gym.envs.alfworld.corpus:sample_texts", "seed_gym.envs.searchqa.corpus:sample_texts",
                   "seed_gym.envs.webshop.corpus:sample_texts"]
#: Small sizes of each built-in sampler (its own keyword knobs) and the fingerprint of its seed-0
#: text at those sizes, recorded from the collector that built the texts before they moved into
#: the envs: the move kept every text byte for byte.
SMALL = {
    "seed_gym.envs.alfworld.corpus:sample_texts": ({"games": 12}, "sha256:a362776df20afe95"),
    "seed_gym.envs.searchqa.corpus:sample_texts": ({"entities": 80, "questions": 12}, "sha256:b82eae385915705d"),
    "seed_gym.envs.webshop.corpus:sample_texts": ({"products": 60, "episodes": 12}, "sha256:8a74e1f10cd8ca5b"),
}


def small_texts(target: str, seed: int = 0) -> list[str]:
    kwargs, _ = SMALL[target]
    return resolve(target)(seed, **kwargs)


@pytest.fixture(scope="module")
def small_corpus() -> list[str]:
    return [text for target in BUILTIN_TARGETS for text in small_texts(target)] + C.chat_frames()


# -- each env's sample texts -----------------------------------------------------------------
def test_builtin_profiles_declare_the_corpus_targets():
    assert sorted({registry.profile(env_id).corpus for env_id in BUILTIN_ENVS}) == BUILTIN_TARGETS
    assert registry.profile("webshop").corpus == registry.profile("webshop-browser").corpus
    assert C.corpus_sources() == BUILTIN_TARGETS  # sorted env ids, each target once


@pytest.mark.parametrize("target", BUILTIN_TARGETS)
def test_a_corpus_target_is_a_deterministic_function_of_the_seed(target: str):
    sampler = resolve(target)
    signature = inspect.signature(sampler)
    signature.bind(0)  # callable as (seed), the profile's contract; the sizes are the env's defaults
    assert all(p.default is not p.empty for p in signature.parameters.values())
    texts = small_texts(target)
    assert texts and isinstance(texts, list) and all(isinstance(t, str) and t for t in texts)
    assert small_texts(target) == texts
    assert small_texts(target, seed=1) != texts


@pytest.mark.parametrize("target", BUILTIN_TARGETS)
def test_the_env_texts_are_the_texts_of_before_the_move(target: str):
    assert C.corpus_fingerprint(small_texts(target)) == SMALL[target][1]


def test_fingerprint_sees_document_boundaries():
    assert C.corpus_fingerprint(["ab", "c"]) != C.corpus_fingerprint(["a", "bc"])


def test_corpus_has_the_text_agents_see(small_corpus: list[str]):
    text = "\n".join(small_corpus)
    for phrase in (
        # ALFWorld engine wording and the ReAct prompt
        "-= Welcome to TextWorld, ALFRED! =-", "Your task is to: ", "You arrive at ", "you see a ",
        "You are an expert agent operating in the ALFRED Embodied Environment",
        "Your admissible actions of the current situation are", "'go to ",
        # WebShop pages and actions
        "'Back to Search' [SEP] ", "click[buy now]", "search[<your query>]", "WebShop e\u2011commerce environment",
        # Search-R1 protocol
        "Answer the given question.", "<search>", "</search>", "<information>Doc 1(Title: ", "<answer>",
        # responses and skills
        "<think>", "</think>", "<action>", "</action>", '"episode_summary"', '"episode_skill"',
        "user\n", "assistant\n",
    ):
        assert phrase in text, phrase
    assert "<|im_start|>" not in text and "<|im_end|>" not in text  # specials are added whole


def test_alfworld_lists_read_like_textworld():
    assert alfworld_corpus._textworld_list([]) == "nothing"
    assert alfworld_corpus._textworld_list(["apple 1"]) == "a apple 1"
    assert alfworld_corpus._textworld_list(["apple 1", "mug 2"]) == "a apple 1, and a mug 2"
    assert alfworld_corpus._textworld_list(["apple 1", "mug 2", "fork 1"]) == "a apple 1, a mug 2, and a fork 1"


def test_corpus_prompts_are_the_prompts_model_agents_build():
    from seed_gym.agents.prompts import EpisodeView, PromptBuilder, template_for_env

    history = [("o1", "a1"), ("o2", "a2")]
    corpus = C.react_prompt("alfworld", task="t", observation="o3", admissible=["look"], history=history)
    agent = PromptBuilder(template_for_env("alfworld")).text(
        EpisodeView("t", "o1", [("o1", "a1", "r1"), ("o2", "a2", "r2")]), "o3", ["look"])
    assert corpus == agent and "Action 2: 'a2'" in corpus


# -- collecting over the registered envs ------------------------------------------------------
CALLS: list[tuple[str, int]] = []


def shared_texts(seed: int) -> list[str]:
    CALLS.append(("shared", seed))
    return [f"shared text {seed}", "shared second text"]


def other_texts(seed: int) -> list[str]:
    CALLS.append(("other", seed))
    return [f"other text {seed}"]


def not_texts(seed: int) -> str:
    return "a string, not a list"


def only_these_envs(monkeypatch: pytest.MonkeyPatch, profiles: dict[str, EnvProfile]) -> None:
    """The registry holds exactly ``profiles`` (in this insertion order) for the test."""
    specs = {env_id: EnvSpec(env_id, "x:Y", profile=p) for env_id, p in profiles.items()}
    monkeypatch.setattr(registry, "_SPECS", specs)
    monkeypatch.setattr(registry, "_entry_points_loaded", True)
    CALLS.clear()


def test_build_corpus_collects_every_distinct_target_once_in_env_id_order(monkeypatch: pytest.MonkeyPatch):
    shared = EnvProfile(corpus=f"{__name__}:shared_texts")
    only_these_envs(monkeypatch, {
        "zeta": EnvProfile(corpus=f"{__name__}:other_texts"),
        "alpha": shared, "alpha-browser": shared,  # one benchmark, one profile
        "beta": EnvProfile(corpus=f"{__name__}:shared_texts"),  # another profile, the same target
        "gamma": EnvProfile(),  # adds no text
    })
    assert C.corpus_sources() == [f"{__name__}:shared_texts", f"{__name__}:other_texts"]
    texts = C.build_corpus(C.CorpusConfig(seed=3))
    assert texts == ["shared text 3", "shared second text", "other text 3", *C.chat_frames()]
    assert CALLS == [("shared", 3), ("other", 3)]
    assert C.build_corpus(C.CorpusConfig(seed=3)) == texts
    assert C.build_corpus(C.CorpusConfig(seed=4))[0] == "shared text 4"


def test_no_env_with_a_corpus_leaves_the_chat_frames(monkeypatch: pytest.MonkeyPatch):
    only_these_envs(monkeypatch, {"plain": EnvProfile()})
    assert C.corpus_sources() == []
    assert C.build_corpus() == C.chat_frames()


def test_a_target_that_returns_no_list_of_str_is_refused(monkeypatch: pytest.MonkeyPatch):
    only_these_envs(monkeypatch, {"bad": EnvProfile(corpus=f"{__name__}:not_texts")})
    with pytest.raises(TypeError, match="not_texts"):
        C.build_corpus()


def test_config_describes_the_seed_and_version():
    assert C.CorpusConfig().describe() == {"version": C.CORPUS_VERSION, "seed": 0}
    assert C.CorpusConfig(seed=5).describe()["seed"] == 5
