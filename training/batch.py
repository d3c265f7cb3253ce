"""Episode records -> training samples: one sample per env step.

This is the only door from the harness into training: every algorithm (SFT, GRPO, OPSD, SDAR,
SEED) reads :class:`~seed_gym.records.EpisodeRecord` objects — the same ones evaluation writes —
and turns them into :class:`StepSample` objects here.

Rules:

* A sample is the prompt the policy saw at that step (chat messages, rebuilt from the record: the
  step's ``system`` text, its ``prompt`` and a continued assistant turn's ``continuation``
  segments) and the response tokens it sampled. The record keeps the sampled ``token_ids`` when
  the agent ran with ``@tokens=1`` or ``@logprobs=1`` (training always does); otherwise the
  response text is re-tokenised, plus EOS when the generation's ``finish_reason`` was ``stop``. A
  step marked ``retokenize`` (Search-R1) trains on its recorded response as the env took it,
  re-tokenised without EOS, as Search-R1 does. (The fields: :class:`~seed_gym.records.ActionTrace`.)
* The reward of a step sample is the episode reward (the env profile's ``reward_scale`` x won)
  minus the profile's ``invalid_penalty`` when that step's response was format-invalid
  (seed-method.md §3). ``group_id`` is the task id: GRPO normalises over all step
  samples of a task.
* For GiGPO's step-level advantage a sample also keeps ``anchor`` (the observation it acted on,
  whitespace-normalised: identical text is an identical state), ``episode_reward`` (R(τ) of its
  trajectory, no penalty) and ``step_reward`` (r_t: the episode reward on the last step only, minus
  the step's own format penalty).
* Error records (the env failed) carry no steps and give no samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seed_gym.agents.parsing import response_is_action
from seed_gym.agents.prompts import EpisodeView, PromptBuilder
from seed_gym.records import EpisodeRecord, StepRecord
from seed_gym.registry import profile


def reward_rule(env_id: str) -> tuple[float, float]:
    """(episode reward scale, per-step format penalty) of an env: its profile's ``reward_scale``
    and ``invalid_penalty`` (seed-method.md §3)."""
    env_profile = profile(env_id)
    return env_profile.reward_scale, env_profile.invalid_penalty


@dataclass
class StepSample:
    messages: list[dict[str, Any]]
    response_ids: list[int]
    episode_id: str
    group_id: str
    reward: float
    valid_format: bool = True
    family: str = ""
    step: int = 0
    anchor: str = ""
    episode_reward: float = 0.0
    step_reward: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_text(self) -> str:
        return self.messages[-1]["content"]


def step_messages(step: StepRecord) -> list[dict[str, Any]]:
    if step.prompt is None:
        raise ValueError("this record kept only prompt hashes (record_prompt=hash); training needs full prompts")
    messages: list[dict[str, Any]] = [{"role": "system", "content": step.system}] if step.system else []
    messages.append({"role": "user", "content": step.prompt})
    if step.continuation:
        messages.append({"role": "assistant", "content": "".join(s["text"] for s in step.continuation),
                         "continue": True, "segments": list(step.continuation)})
    return messages


def response_ids(step: StepRecord, tokenizer: Any) -> list[int]:
    if step.retokenize:
        return tokenizer(step.response or "", add_special_tokens=False)["input_ids"]
    if step.token_ids is not None:
        return list(step.token_ids)
    ids = tokenizer(step.response or "", add_special_tokens=False)["input_ids"]
    if step.finish_reason == "stop" and tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return ids


def samples_from_records(records: Iterable[EpisodeRecord], tokenizer: Any, env_id: str) -> list[StepSample]:
    """Model-agent records (prompts and responses recorded) -> RL step samples."""
    scale, penalty = reward_rule(env_id)
    samples = []
    for record in records:
        reward = scale * float(record.won)  # losses.episode_reward, without importing torch here
        for index, step in enumerate(record.steps):
            step_penalty = 0.0 if step.valid_format else penalty
            last = index == len(record.steps) - 1
            samples.append(StepSample(
                messages=step_messages(step), response_ids=response_ids(step, tokenizer),
                episode_id=record.episode_id, group_id=record.task["id"],
                reward=reward - step_penalty,
                valid_format=step.valid_format, family=record.task.get("family", ""), step=step.t,
                anchor=" ".join(step.observation.split()), episode_reward=reward,
                step_reward=(reward if last else 0.0) - step_penalty))
    return samples


def rebuilt_prompts(record: EpisodeRecord, builder: PromptBuilder,
                    responses: Sequence[str] | None = None) -> list[list[dict[str, str]]]:
    """The prompts a model agent with ``builder``'s template would have seen along this episode.

    Works for any record (scripted agents keep no prompts): it replays the history window from the
    recorded observations, actions and admissible actions — how expert trajectories become SFT
    data. ``responses`` (one per step) stand in for the model's text in history items that show it
    (Search-R1 transcripts); by default the recorded response, else the action."""
    first = record.steps[0].observation if record.steps else ""
    episode = EpisodeView(str(record.task.get("instruction", "")), first, [])
    prompts = []
    for index, step in enumerate(record.steps):
        prompts.append(builder.build(episode, step.observation, step.admissible_actions))
        said = responses[index] if responses is not None else (step.response or step.action)
        # Where the response is the action (Search-R1), history shows what the model would have said.
        action = said if response_is_action(builder.template.parser) else step.action
        episode.steps.append((step.observation, action, said))
    return prompts


def group_of(samples: Sequence[StepSample]) -> list[str]:
    return [s.group_id for s in samples]
