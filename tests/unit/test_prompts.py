"""Prompt templates: data files, a history window, and the same prompt for every backend."""


import pytest

from seed_gym import registry
from seed_gym.agents.prompts import EpisodeView, PromptBuilder, TemplateError, load_template, template_for_env
from seed_gym.envs.alfworld import PROFILE as ALFWORLD

#: seed-gym's earlier ALFWorld wording, kept for comparison next to verl-agent's layout.
ALFWORLD_TEMPLATE = ALFWORLD.prompt_template.parent / "alfworld.toml"


@pytest.mark.parametrize("env_id", [s.env_id for s in registry.list_envs() if s.profile.prompt_template])
def test_every_declared_template_loads_and_names_a_known_parser(env_id):
    template = template_for_env(env_id)
    assert template.parser in {"react", "search-r1"}
    assert template.stop and (template.history_length > 0 or template.history_length == -1)
    assert len(template.sha) == 16


def test_an_env_whose_profile_declares_no_template_gets_the_generic_react_one(monkeypatch):
    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))
    registry.register("my-plugin-env", "my_plugin.env:MyEnv")
    assert template_for_env("my-plugin-env").id == "generic-react-v1"


def test_an_agent_not_yet_bound_to_an_env_uses_the_generic_template():
    from seed_gym.agents.model import ModelAgent

    assert template_for_env(None).id == "generic-react-v1"
    assert ModelAgent().template.id == "generic-react-v1"


def test_alfworld_step_zero_has_no_history_and_lists_admissible_actions():
    builder = PromptBuilder(template_for_env("alfworld"))
    text = builder.text(EpisodeView("put a mug in the sink", "You are in a kitchen.", []), "You are in a kitchen.",
                        ["go to sink 1", "look"])
    assert text.startswith("\nYou are an expert agent operating in the ALFRED Embodied Environment.")
    assert "['go to sink 1'\n 'look']" in text
    assert "Prior to this step" not in text
    assert "<think> </think>" in text and "<action> </action>" in text


def test_the_history_window_keeps_only_the_last_k_steps_with_their_results():
    steps = [(f"obs {i}", f"act {i}", f"resp {i}") for i in range(1, 8)]
    builder = PromptBuilder(template_for_env("alfworld"), history_length=2)
    text = builder.text(EpisodeView("task", "obs 1", steps), "obs 8", ["look"])
    assert "[Observation 6: 'obs 6', Action 6: 'act 6']" in text
    assert "[Observation 7: 'obs 7', Action 7: 'act 7']" in text
    assert "Observation 5:" not in text
    assert "already taken 7 step(s)" in text and "most recent 2 observations" in text
    assert "You are now at step 8 and your current observation is: obs 8" in text


def test_history_zero_shows_no_past_steps():
    builder = PromptBuilder(load_template(ALFWORLD_TEMPLATE), history_length=0)
    text = builder.text(EpisodeView("task", "o", [("o", "a", "r")]), "o2", ["look"])
    assert "Observation 1" not in text and "most recent 0 observations" in text


def test_search_r1_prompts_append_the_transcript_of_turns_as_the_env_took_them():
    builder = PromptBuilder(template_for_env("searchqa"))
    first = "Answer the given question. ... Question: who?\n"
    info = "\n\n<information>Doc 1(Title: X) text</information>\n\n"
    episode = EpisodeView("who?", first, [(first, "<think>hm</think><search> x </search>",
                                           "<think>hm</think><search> x </search> and more")])
    text = builder.text(episode, info, None)
    assert text == first + "<think>hm</think><search> x </search>" + info


def test_prompts_are_chat_messages_with_an_optional_system_message(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('id = "mine"\nsystem = "Be brief."\nfirst = "{observation}"\nstep = "{observation} after {step_count}"\n')
    builder = PromptBuilder(load_template(path))
    messages = builder.build(EpisodeView("t", "hello", []), "hello", None)
    assert messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]


def test_a_template_with_an_unknown_field_fails_at_load_naming_the_field(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('id = "bad"\nfirst = "{observaton}"\nstep = "{observation}"\n')
    with pytest.raises(TemplateError, match="observaton"):
        load_template(path)


def test_a_template_with_unknown_keys_or_missing_parts_is_refused(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('id = "bad"\nfirts = "x"\nstep = "y"\n')
    with pytest.raises(TemplateError, match="missing.*first.*unknown keys.*firts"):
        load_template(path)
    with pytest.raises(TemplateError, match="does not exist"):
        load_template(tmp_path / "nope.toml")


def test_the_template_sha_changes_with_its_wording(tmp_path):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('id = "x"\nfirst = "{observation}"\nstep = "{observation}"\n')
    b.write_text('id = "x"\nfirst = "{observation}!"\nstep = "{observation}"\n')
    assert load_template(a).sha != load_template(b).sha


def test_observations_with_braces_are_inserted_verbatim():
    builder = PromptBuilder(template_for_env("alfworld"))
    text = builder.text(EpisodeView("t", "{weird} {0}", []), "{weird} {0}", ["look"])
    assert "{weird} {0}" in text


# -- the history window (issue #22, item 1) -------------------------------------------------------
@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 8])
@pytest.mark.parametrize("taken", range(0, 11))
def test_the_window_shows_min_k_and_steps_taken_past_steps_the_most_recent_ones(k, taken):
    steps = [(f"obs {i}", f"act {i}", f"resp {i}") for i in range(1, taken + 1)]
    builder = PromptBuilder(load_template(ALFWORLD_TEMPLATE), history_length=k)
    shown = builder._window(EpisodeView("task", "obs 1", steps), f"obs {taken + 1}")
    expected = list(range(max(1, taken - k + 1), taken + 1)) if k else []
    assert [item["step"] for item in shown] == expected
    if taken:
        text = builder.text(EpisodeView("task", "obs 1", steps), f"obs {taken + 1}", ["look"])
        assert f"most recent {len(expected)} observations" in text
        assert all(f"[Observation {i}: 'obs {i}', Action {i}: 'act {i}']" in text for i in expected)


def test_history_minus_one_shows_every_past_step():
    steps = [(f"obs {i}", f"act {i}", f"resp {i}") for i in range(1, 13)]
    builder = PromptBuilder(load_template(ALFWORLD_TEMPLATE), history_length=-1)
    assert [item["step"] for item in builder._window(EpisodeView("t", "obs 1", steps), "obs 13")] == list(range(1, 13))
    with pytest.raises(TemplateError):
        PromptBuilder(load_template(ALFWORLD_TEMPLATE), history_length=-2)
