"""``seed-gym train``: SFT and the RL algorithms on the shared rollout harness, resumable.

RL, per update k (seed-method.md §5 "per-update loop"):

1. roll out ``tasks_per_update`` train tasks x ``group`` with the current policy (θ_old) through the
   same rollout engine and model agent evaluation uses, into ``rollouts/update-k`` (records);
2. turn the records into step samples; the algorithm's teacher source adds privileged prompts
   (SEED: the policy writes a hindsight skill per trajectory);
3. :func:`~seed_gym.training.update.rl_update`: GRPO + the algorithm's distillation term;
4. the rollout engine takes the new weights (:mod:`.weight_sync`: nothing to do for ``hf``, an
   in-place load into the colocated engine, checked by a probe, for ``vllm``);
5. checkpoint (``save_pretrained``), and every ``eval_every`` updates evaluate the checkpoint on the
   seen and unseen splits with a plain prompt (no skills at inference, §8), played by the rollout
   engine; then log the update's metrics row and make the checkpoint LATEST.

``rollout_backend`` picks the engine that generates steps 1, 2 (SEED's analyzer) and 5: ``hf``
(transformers ``generate`` on the training weights) or ``vllm`` (a vLLM engine in this process; on
GPUs it frees its memory during steps 3-4). Log-probs for the loss are always the trainer's own;
with ``vllm`` the rollouts keep the engine's log-probs too, and ``sampling_logprob_gap`` is their
mean absolute difference from θ_old's. ``sync/probe_gap`` is the check of step 4.

Per-phase cost (:mod:`.costs`): every update row, and its console line, carries ``time/<phase>_s``
and a count per phase — ``time/env_s`` + ``env/steps``, ``time/generate_s`` + ``tokens/generate``,
``time/analyzer_s`` + ``tokens/analyzer``, ``time/old_logprobs_s`` + ``tokens/old_logprobs``,
``time/ref_logprobs_s`` + ``tokens/ref_logprobs``, ``time/teacher_logprobs_s`` +
``tokens/teacher_logprobs``, ``time/update_s`` + ``tokens/update``, ``time/sync_s`` +
``sync/bytes``, ``time/eval_s`` + ``tokens/eval`` (generated tokens count for generation, the
analyzer and evaluation; tokens fed through the model, prompt and response, for the log-prob
passes and the update).

A killed run resumes from ``checkpoints/LATEST``: metrics and evaluations of updates after it are
dropped and those updates redone; rollouts already on disk are reused (never replayed); evaluations
resume like any ``seed-gym eval``. Everything random is seeded by (run seed, update).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch

from seed_gym.agent import AgentSpec
from seed_gym.agents.model import ModelAgent
from seed_gym.pools import make_pool
from seed_gym.evaluate import EvalConfig, evaluate
from seed_gym.records import EpisodeRecord, RunDir
from seed_gym.registry import make
from seed_gym.rollout import RolloutClock, plan_episodes, run_rollouts
from seed_gym.training.algorithms import SFT
from seed_gym.training.batch import samples_from_records
from seed_gym.training.config import ConfigError, TrainConfig
from seed_gym.training.costs import PhaseCosts, TokenMeter
from seed_gym.training.distributed import SINGLE, DataParallel
from seed_gym.training.losses import LossConfig
from seed_gym.training.policy import Policy
from seed_gym.training.runs import TrainRun
from seed_gym.training.teachers import TeacherSource
from seed_gym.training.update import UpdateSettings, rl_update
from seed_gym.training.weight_sync import RolloutEngine, start_engine

OnRow = Callable[[dict[str, Any]], None]
OnStatus = Callable[[str], None]  # a one-line progress message (the CLI shows it in its status line)


@dataclass
class Resumed:
    update: int            # last finished update (0 = none)
    model_dir: str         # the weights to start from
    optimizer_state: Any = None


def resume_point(run: TrainRun, config: TrainConfig) -> Resumed:
    latest = run.latest()
    if latest is None:
        return Resumed(0, config.model)
    state = json.loads((latest / "trainer_state.json").read_text())
    optimizer = torch.load(latest / "optimizer.pt", weights_only=True) if (latest / "optimizer.pt").exists() else None
    return Resumed(int(state["update"]), str(latest), optimizer)


def write_checkpoint(run: TrainRun, policy: Policy, optimizer: Any, update: int,
                     parallel: DataParallel = SINGLE) -> Path:
    """Write ``checkpoints/update-N`` (rank 0; under fsdp every rank helps gather it) without
    pointing LATEST at it yet: :meth:`TrainRun.commit_checkpoint` does, once the update is logged."""
    weights, optimizer_state = parallel.checkpoint_weights(policy), parallel.optimizer_state(policy, optimizer)
    folder = run.checkpoint_dir(update)
    if parallel.is_main:
        with run.staged_checkpoint(update) as staging:  # written whole, then renamed into place
            policy.save(staging, weights)
            torch.save(optimizer_state, staging / "optimizer.pt")
            (staging / "trainer_state.json").write_text(json.dumps({"update": update}))  # written last: complete
    return folder


def save_checkpoint(run: TrainRun, policy: Policy, optimizer: Any, update: int, keep: int) -> Path:
    folder = write_checkpoint(run, policy, optimizer, update)
    run.commit_checkpoint(update, keep)
    return folder


def agent_params(config: TrainConfig, *, temperature: float, tokens: bool) -> dict[str, str]:
    params = {"temperature": str(temperature), "max_new_tokens": str(config.new_tokens()),
              "prompt_tokens": str(config.prompt_tokens()), "projection": config.projection}
    if config.history is not None:
        params["history"] = str(config.history)
    if config.observation_tokens is not None:
        params["observation_tokens"] = str(config.observation_tokens)
    if tokens:
        params["tokens"] = "1"  # records keep the sampled ids; rl_update recomputes θ_old log-probs
    return params


def pool_options(config: TrainConfig) -> dict[str, Any]:
    """Where env workers run and how they are guarded, the same for rollouts, data collection and evaluation."""
    return {"call_timeout": config.env_call_timeout, "recycle_after": config.env_recycle_after,
            "ray_address": config.ray_address}


def spec_string(kind: str, target: str, params: dict[str, str]) -> str:
    return str(AgentSpec(kind, target, tuple(sorted(params.items()))))


# -- evaluation ----------------------------------------------------------------------------------
def evaluate_checkpoint(config: TrainConfig, run: TrainRun, update: int, checkpoint: Path,
                        on_row: OnRow | None = None, engine: RolloutEngine | None = None,
                        backend: Any = None) -> list[dict[str, Any]]:
    """Plain-prompt evaluation of a checkpoint on every eval split (seen / unseen); one metrics row each.
    With the run's rollout ``engine`` (which holds the checkpoint's weights) and its ``backend``, the
    engine plays; otherwise the checkpoint is loaded with ``hf``. Ranked choice needs scores vLLM
    does not give, so a vllm run ranks with ``hf`` on the checkpoint."""
    if engine is not None and engine.kind == "vllm" and config.eval_choose == "rank":
        engine = backend = None
    kind = engine.kind if engine is not None else "hf"
    agent = spec_string(kind, str(checkpoint), {**agent_params(config, temperature=config.eval_temperature,
                                                                tokens=False), "dtype": engine_dtype(config, kind),
                                                **eval_choice_params(config)})
    rows = []
    for split in config.eval_splits or default_eval_splits(config):
        summary = evaluate(EvalConfig(env=config.env, split=split, agent=agent, out=run.eval_dir(update, split),
                                      n=config.eval_n, seed=config.seed, max_steps=config.eval_max_steps,
                                      backend=config.env_backend, workers=config.workers,
                                      live_episodes=config.eval_batch,
                                      env_kwargs=config.env_args, waves=config.waves, **pool_options(config)),
                           backend=backend)
        row = {"update": update, "split": split, "episodes": summary["episodes"],
               "success_rate": summary["success_rate"], "mean_score": summary["mean_score"],
               "mean_steps": summary["mean_steps"], "invalid_action_rate": summary["invalid_action_rate"],
               "ci95": summary.get("ci95", {}).get("success_rate"), "run_dir": summary["run_dir"]}
        run.log(row)
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def eval_choice_params(config: TrainConfig) -> dict[str, str]:
    """Agent options for ranked-choice evaluation."""
    return choice_params(config.eval_choose, config.eval_rank_by)


def choice_params(choose: str, rank_by: str) -> dict[str, str]:
    """Agent options of a choice rule; none for generation, so its spec stays as before."""
    return {} if choose == "generate" else {"choose": choose, "rank_by": rank_by}


def default_eval_splits(config: TrainConfig) -> list[str]:
    """Seen and unseen where the env has them; else its test split and unseen."""
    env = make(config.env, **config.env_args)
    try:
        names = set(env.task_set().names())
    finally:
        env.close()
    wanted = ["seen", "unseen"] if "seen" in names else ["test", "unseen"]
    return [name for name in wanted if name in names]


def evaluate_initial(config: TrainConfig, run: TrainRun, start: int, on_row: OnRow | None,
                     state: "RLRun | None" = None) -> list[dict[str, Any]]:
    """The starting model as update 0 of the learning curve (when asked, and not resuming)."""
    if not config.eval_initial or start != 0 or config.eval_every <= 0:
        return []
    if state is None:
        return evaluate_checkpoint(config, run, 0, Path(config.model), on_row)
    return evaluate_checkpoint(config, run, 0, Path(config.model), on_row, state.engine, state.meter)


def engine_dtype(config: TrainConfig, kind: str) -> str:
    """The weights dtype the rollout engine of ``kind`` runs in."""
    return (config.engine_dtype or config.dtype) if kind == "vllm" else config.dtype


def engine_options(config: TrainConfig, policy: Policy) -> dict[str, Any]:
    """How the ``vllm`` rollout engine is built (:class:`~.weight_sync.ColocatedVLLM`)."""
    if config.rollout_backend != "vllm":
        return {}
    context = config.engine_max_model_len or min(8192, int(getattr(policy.model.config, "max_position_embeddings",
                                                                   2048)))
    return {"dtype": engine_dtype(config, "vllm"), "max_model_len": context,
            "max_num_seqs": max(config.live_episodes, config.eval_batch), "memory_fraction": config.engine_memory_fraction,
            "sleep": config.engine_sleep, "tolerance": config.sync_tolerance, "seed": config.seed}


def due(update: int, every: int, last: int) -> bool:
    return update == last or (every > 0 and update % every == 0)


# -- RL ------------------------------------------------------------------------------------------
@dataclass
class RLRun:
    """What an RL run holds from one update to the next; :func:`rl_step` advances it by one update."""

    config: TrainConfig
    run: TrainRun
    parallel: DataParallel
    policy: Policy
    reference: Policy | None   # frozen start weights, for the KL term (None when kl_coef is 0)
    optimizer: Any
    loss_config: LossConfig
    settings: UpdateSettings
    teachers: TeacherSource
    train_ids: list[str]
    engine: RolloutEngine      # generates rollouts, skills and evaluations (training/weight_sync.py)
    meter: TokenMeter          # the engine's backend, counting the tokens it generates
    pool: Any = None           # the env pool, open while updates run


def rollout_rank_dir(state: RLRun, update: int) -> Path:
    """The run directory of this rank's rollouts of one update."""
    folder = state.run.rollout_dir(update)
    return folder / f"rank-{state.parallel.rank}" if state.parallel.enabled else folder


def collect_rollouts(state: RLRun, update: int, costs: PhaseCosts | None = None) -> list[EpisodeRecord]:
    """This update's episodes of this rank, played by the current policy (or read back after a kill)."""
    config, parallel = state.config, state.parallel
    rng = random.Random(f"{config.seed}:{update}")
    tasks = parallel.shard(rng.sample(state.train_ids, min(config.rl_tasks(), len(state.train_ids))))
    episodes = plan_episodes(tasks, group=config.group, seed=config.seed * 100_003 + update)
    rundir = RunDir(rollout_rank_dir(state, update))
    rundir.open({"update": update, "tasks": tasks, "group": config.group}, {"algo": config.algo})
    done = rundir.finished()
    todo = [e for e in episodes if e.episode_id not in done]
    if todo:
        params = (agent_params(config, temperature=config.temperature, tokens=True)
                  | choice_params(config.rollout_choose, config.rollout_rank_by))
        if state.engine.kind == "vllm":
            params["logprobs"] = "1"  # the engine's own log-probs: sampling_logprob_gap
        agent = ModelAgent(AgentSpec(state.engine.kind, str(state.policy.path), tuple(sorted(params.items()))),
                           seed=config.seed * 7919 + update * 31, backend=state.meter, env_id=config.env)
        clock, generated = RolloutClock(), state.meter.tokens
        run_rollouts(state.pool, agent, todo, on_records=rundir.append, waves=config.waves, clock=clock)
        if costs is not None:
            costs.add("env", clock.env_s, clock.steps)
            costs.add("generate", clock.agent_s, state.meter.tokens - generated)
    finished = rundir.finished()
    return [finished[e.episode_id] for e in episodes if e.episode_id in finished]


def rollout_stats(records: list[EpisodeRecord], parallel: DataParallel = SINGLE) -> dict[str, float]:
    """Success, score, length and invalid rate of an update's episodes over all ranks."""
    ok = [r for r in records if r.status != "error"]
    sums = [parallel.sum(value) for value in (
        len(ok), len(records) - len(ok), sum(r.won for r in ok), sum(r.score for r in ok),
        sum(r.num_steps for r in ok), sum(r.num_invalid for r in ok))]
    episodes, errors, won, score, steps, invalid = sums
    return {"episodes": episodes, "errors": errors, "success_rate": won / max(1.0, episodes),
            "mean_score": score / max(1.0, episodes), "episode_length": steps / max(1.0, episodes),
            "invalid_action_rate": invalid / max(1.0, steps)}


def loss_config_of(config: TrainConfig) -> LossConfig:
    overrides = {k: getattr(config, k) for k in ("clip", "kl_coef", "opd_coef", "gate_beta", "pg_coef",
                                                 "step_adv_coef", "gamma", "adv_std")
                 if getattr(config, k) is not None}
    return LossConfig.for_algo(config.algo, **overrides)


def start_rl(config: TrainConfig, run: TrainRun, parallel: DataParallel, env: Any) -> tuple[RLRun, int]:
    """Load the policy (or the checkpoint to resume), its reference, optimizer, rollout engine and
    teacher source; returns the run state and the last finished update."""
    resumed = resume_point(run, config)
    torch.manual_seed(config.seed)
    device = parallel.device(config.device)
    policy = Policy.load(resumed.model_dir, dtype=config.dtype, device=device,
                         max_prompt_tokens=config.prompt_tokens())
    loss_config = loss_config_of(config)
    reference = Policy.load(config.model, dtype=config.dtype, device=device).frozen_copy() if loss_config.kl_coef else None
    for model in (policy, reference):
        if model is not None:
            parallel.prepare(model)  # fsdp: shard it; ddp: nothing
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    if resumed.optimizer_state is not None:
        parallel.load_optimizer_state(policy, optimizer, resumed.optimizer_state)
    engine = start_engine(config.rollout_backend, policy, sharded=policy.sharded, **engine_options(config, policy))
    meter = TokenMeter(engine.backend)
    teachers = TeacherSource(config.algo, config.env, policy_backend=meter, env=env,
                             analyzer=config.analyzer, analyzer_url=config.analyzer_url,
                             analyzer_model=config.analyzer_model, skill_bank=config.skill_bank,
                             analyzer_max_new_tokens=config.analyzer_max_new_tokens,
                             analyzer_max_chars=config.analyzer_max_chars,
                             frozen_backend=frozen_analyzer_backend(config, device))
    settings = UpdateSettings(micro_batch=config.micro_batch, mini_batches=config.mini_batches,
                              grad_clip=config.grad_clip)
    state = RLRun(config, run, parallel, policy, reference, optimizer, loss_config, settings, teachers,
                  env.task_set().split(config.train_split).task_ids, engine, meter)
    return state, resumed.update


def frozen_analyzer_backend(config: TrainConfig, device: Any) -> Any:
    """SEED without self-evolution: the starting weights θ_sft (``model``, also on resume) write the
    skills for the whole run; None unless ``analyzer = "frozen"``."""
    if config.analyzer != "frozen":
        return None
    frozen = Policy.load(config.model, dtype=config.dtype, device=device).frozen_copy()
    return TokenMeter(frozen.backend())


def train_rl(config: TrainConfig, run: TrainRun, on_row: OnRow | None = None,
             parallel: DataParallel = SINGLE) -> list[dict[str, Any]]:
    env = make(config.env, **config.env_args)
    state = None
    try:
        state, last = start_rl(config, run, parallel, env)
        if parallel.is_main:
            run.truncate_metrics(last)
            run.drop_evals_after(last)
        rows: list[dict[str, Any]] = evaluate_initial(config, run, last, on_row, state) if parallel.is_main else []
        parallel.barrier()
        # Every episode of an update is live at once, up to ``live_episodes`` env instances per rank.
        slots = max(1, min(-(-config.rl_tasks() // parallel.world) * config.group, config.live_episodes))
        env_kwargs = {**config.env_args, "max_steps": config.rl_max_steps()}
        with make_pool(config.env_backend, config.env, env_kwargs, num_slots=slots, workers=config.workers,
                       **pool_options(config)) as state.pool:
            for update in range(last + 1, config.updates + 1):
                costs = PhaseCosts()
                row = rl_step(state, update, costs)
                evaluations = checkpoint_and_evaluate(state, update, costs, on_row)
                row.update(costs.row())
                if parallel.is_main:
                    run.log(row)  # before the checkpoint is committed: a kill in between redoes the update
                    if on_row:
                        on_row(row)
                commit(state, update)
                rows += [row, *evaluations]
    finally:
        if state is not None:
            state.engine.close()
        env.close()
    return rows


def rl_step(state: RLRun, update: int, costs: PhaseCosts | None = None) -> dict[str, Any]:
    """Rollouts -> samples -> teachers -> one update -> weight sync; returns the update's metrics
    row (``costs`` gets each phase's seconds and tokens)."""
    config, parallel = state.config, state.parallel
    costs = costs if costs is not None else PhaseCosts()
    started = time.perf_counter()
    records = collect_rollouts(state, update, costs)
    rolled = time.perf_counter()
    ok = [r for r in records if r.status != "error"]
    samples = samples_from_records(ok, state.policy.tokenizer, config.env)
    keep_sampling_logprobs(samples, ok)
    with costs.phase("analyzer", state.meter):
        teacher_messages, skill_stats = state.teachers.teacher_messages(records, samples)
    state.engine.release()  # GPUs: the engine's memory is the trainer's until the sync
    state.teachers.save_context(rollout_rank_dir(state, update))  # what `seed-gym view` shows as the skill
    stats = rl_update(state.policy, state.reference, samples, teacher_messages, state.optimizer, state.loss_config,
                      state.settings, seed=config.seed * 1_000_003 + update, parallel=parallel, costs=costs)
    with costs.phase("sync"):
        synced = state.engine.sync(state.policy)
    costs.add("sync", count=synced.bytes)
    seconds = time.perf_counter() - started
    update_seconds = seconds - (rolled - started)
    if parallel.enabled:  # parse rates over all ranks
        parsed = parallel.sum(skill_stats.get("skills_parsed", 0.0))
        analyzed = parallel.sum(float(len(records)) if "skills_parsed" in skill_stats else 0.0)
        cut_rate = skill_stats.get("skill_cut_rate")
        skill_stats = {"skills_parsed": parsed, "skill_parse_rate": parsed / analyzed} if analyzed else {}
        if cut_rate is not None:  # every rank runs the same analyzer settings: the mean of the ranks' rates
            skill_stats["skill_cut_rate"] = parallel.sum(cut_rate) / parallel.world
    return {"update": update, "algo": config.algo, "ranks": parallel.world, **rollout_stats(records, parallel),
            **skill_stats, **stats, "rollout_backend": state.engine.kind, "sync/probe_gap": synced.probe_gap,
            "rollout_seconds": rolled - started, "update_seconds": update_seconds,
            "seconds": seconds, "train_tokens_per_s": stats["response_tokens"] / max(1e-9, update_seconds)}


def keep_sampling_logprobs(samples: list[Any], records: list[EpisodeRecord]) -> None:
    """Give each step sample the log-probs its rollout engine recorded for the sampled tokens (when it
    did: vllm rollouts), for ``sampling_logprob_gap``. Samples follow the records' steps in order."""
    steps = [step for record in records for step in record.steps]
    for sample, step in zip(samples, steps):
        if step.logprobs is not None and not step.retokenize:
            sample.extra["sampling_logprobs"] = list(step.logprobs)


def checkpoint_and_evaluate(state: RLRun, update: int, costs: PhaseCosts,
                            on_row: OnRow | None) -> list[dict[str, Any]]:
    """Write the checkpoint when due (every rank takes part), then rank 0 evaluates it when due;
    every rank waits for it. The checkpoint becomes LATEST later, in :func:`commit`."""
    config, run, parallel = state.config, state.run, state.parallel
    rows: list[dict[str, Any]] = []
    if checkpoint_due(config, update):
        checkpoint = write_checkpoint(run, state.policy, state.optimizer, update, parallel)
        if evaluation_due(config, update) and parallel.is_main:
            with costs.phase("eval", state.meter):
                rows = evaluate_checkpoint(config, run, update, checkpoint, on_row, state.engine, state.meter)
    parallel.barrier()
    return rows


def commit(state: RLRun, update: int) -> None:
    """Point LATEST at this update's checkpoint, if one was written (rank 0); every rank waits."""
    if state.parallel.is_main and checkpoint_due(state.config, update):
        state.run.commit_checkpoint(update, state.config.keep_checkpoints)
    state.parallel.barrier()


def evaluation_due(config: TrainConfig, update: int) -> bool:
    return config.eval_every > 0 and due(update, config.eval_every, config.updates)


def checkpoint_due(config: TrainConfig, update: int) -> bool:
    """An update writes a checkpoint when one is due, and when it is evaluated (the evaluation names it)."""
    return evaluation_due(config, update) or due(update, config.save_every, config.updates)


# -- SFT -----------------------------------------------------------------------------------------
def sft_records(config: TrainConfig, run: TrainRun) -> list[EpisodeRecord]:
    """The SFT data: the episodes collected for this run, then those of ``sft_runs`` (read first, so
    a bad folder fails before any collection)."""
    reused = [record for path in config.sft_runs for record in recorded_episodes(path, config.env)]
    return (collected_sft_records(config, run) if config.sft_tasks else []) + reused


def recorded_episodes(path: str, env_id: str, field: str = "sft_runs") -> list[EpisodeRecord]:
    """The finished episodes of an existing run folder (a finished or interrupted eval) of ``env_id``."""
    run_dir = RunDir(path)
    if not run_dir.exists():
        raise ConfigError(f"{field}: {path} is not a run folder (no manifest.json)")
    recorded_env = run_dir.read_manifest().get("identity", {}).get("env")
    if recorded_env != env_id:
        raise ConfigError(f"{field}: {path} holds {recorded_env!r} episodes, not {env_id!r}")
    return list(run_dir.finished().values())


def collected_sft_records(config: TrainConfig, run: TrainRun) -> list[EpisodeRecord]:
    """Episodes collected into ordinary run directories: expert demonstrations, or base-policy
    episodes (for hindsight-skill labels). Resumable like any eval."""
    if config.sft_data == "expert":
        agent, group, out = "expert", 1, run.out / "data" / "expert"
    else:
        agent, group, out = base_policy_agent(config), config.group, run.out / "data" / "base-policy"
    evaluate(EvalConfig(env=config.env, split=config.train_split, agent=agent, out=out, n=config.sft_tasks,
                        group=group, seed=config.seed, max_steps=config.max_steps, backend=config.env_backend,
                        workers=config.workers, env_kwargs=config.env_args, waves=config.waves,
                        **pool_options(config)))
    return list(RunDir(out).finished().values())


def base_policy_agent(config: TrainConfig) -> str:
    """The agent that plays skill SFT's base-policy episodes: the starting weights, acting as RL's
    rollouts will (rollout_choose), so the analyzer learns on the episodes it will read in training."""
    params = agent_params(config, temperature=config.temperature, tokens=False) \
        | choice_params(config.rollout_choose, config.rollout_rank_by)
    return spec_string("hf", config.model, {**params, "dtype": config.dtype})


def sft_examples(config: TrainConfig, policy: Policy, records: list[EpisodeRecord]) -> tuple[list[Any], int]:
    """The SFT examples, and how many skill labels were dropped for running past the analyzer's limit."""
    from seed_gym.training.sft import skill_examples, within_limit

    if config.sft_data == "expert":
        return cloning_examples(config, policy, records), 0
    from seed_gym.training.analyzer import analyzer_prompt, ground_truth_from_env, make_analyzer

    # a live env only to look up the answer key, when the labels may read it
    env = make(config.env, **config.env_args) if config.skill_labels == "ground-truth" else None
    try:
        kind = "rule" if config.analyzer in ("policy", "frozen") else config.analyzer
        analyzer = make_analyzer(kind, env_id=config.env, base_url=config.analyzer_url, model=config.analyzer_model,
                                 ground_truth=ground_truth_from_env(env) if env else None)
        labelled = skill_examples(records, analyzer.analyze(records), policy,
                                  partial(analyzer_prompt, max_chars=config.analyzer_max_chars))
    finally:
        if env is not None:
            env.close()
    kept, over = within_limit(labelled, config.analyzer_max_new_tokens)
    if labelled and not kept:
        shortest = min(len(e.target_ids) for e in labelled)
        raise ConfigError(f"all {len(labelled)} skill labels are longer than analyzer_max_new_tokens="
                          f"{config.analyzer_max_new_tokens} (the shortest is {shortest} tokens): the analyzer could "
                          f"never finish one; raise analyzer_max_new_tokens to at least {shortest}")
    return kept, over


def cloning_examples(config: TrainConfig, policy: Policy, records: list[EpisodeRecord]) -> list[Any]:
    """(step prompt, expert response) pairs of the won episodes, in the prompts the agent sees."""
    from seed_gym.agents.prompts import PromptBuilder, template_for_env
    from seed_gym.training.sft import expert_examples

    return expert_examples(records, policy, PromptBuilder(template_for_env(config.env), config.history))


def replay_examples(config: TrainConfig, policy: Policy) -> list[Any]:
    """Cloning examples from ``sft_replay_runs`` mixed into skill SFT: ``sft_replay_examples`` of them,
    drawn with the run's seed, or all."""
    records = [record for path in config.sft_replay_runs
               for record in recorded_episodes(path, config.env, "sft_replay_runs")]
    examples = cloning_examples(config, policy, records)
    if config.sft_replay_runs and not examples:
        raise ConfigError(f"sft_replay_runs: no won episodes to clone in {', '.join(config.sft_replay_runs)}")
    if config.sft_replay_examples is not None and config.sft_replay_examples < len(examples):
        examples = random.Random(config.seed).sample(examples, config.sft_replay_examples)
    return examples


def train_sft_run(config: TrainConfig, run: TrainRun, on_row: OnRow | None = None,
                  on_status: OnStatus | None = None) -> list[dict[str, Any]]:
    """SFT, one checkpoint per epoch (``update`` = epoch); resumes at the next epoch."""
    from seed_gym.training.sft import resolve_autocast, train_sft

    resumed = resume_point(run, config)
    run.truncate_metrics(resumed.update)
    records = sft_records(config, run)
    policy = Policy.load(resumed.model_dir, dtype=config.dtype, device=config.device,
                         max_prompt_tokens=config.prompt_tokens())
    examples, over_limit = sft_examples(config, policy, records)
    replayed = replay_examples(config, policy)
    examples += replayed
    if not examples:
        raise ConfigError(f"no SFT examples in {len(records)} episodes (cloning needs won episodes, skill SFT "
                          "analyzed ones); set sft_tasks > 0 or point sft_runs at runs that have some")
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=config.sft_lr, weight_decay=config.weight_decay)
    if resumed.optimizer_state is not None:
        optimizer.load_state_dict(resumed.optimizer_state)
    rows = evaluate_initial(config, run, resumed.update, on_row)
    batches = -(-len(examples) // config.sft_batch)
    autocast = resolve_autocast(config.autocast, policy.device)
    for epoch in range(resumed.update + 1, config.sft_epochs + 1):
        started, losses, tokens = time.perf_counter(), [], 0

        def on_step(stats: Any) -> None:
            nonlocal tokens
            losses.append(stats.loss)
            tokens += stats.tokens
            if on_status:
                on_status(f"sft epoch {epoch}/{config.sft_epochs}: batch {stats.step}/{batches}, "
                          f"loss {sum(losses[-50:]) / len(losses[-50:]):.3f}")

        train_sft(policy, examples, epochs=1, lr=config.sft_lr, batch_size=config.sft_batch,
                  seed=config.seed * 1_000_003 + epoch, grad_clip=config.grad_clip, on_step=on_step,
                  prompt_weight=config.sft_prompt_weight, autocast=autocast, optimizer=optimizer)
        seconds = time.perf_counter() - started
        row = {"update": epoch, "algo": "sft", "sft_data": config.sft_data, "episodes": len(records),
               "examples": len(examples), "autocast": autocast,
               "target_tokens_max": max(len(e.target_ids) for e in examples),
               **({"labels_over_limit": over_limit, "skill_labels": config.skill_labels,
                   "replay_examples": len(replayed)} if config.sft_data == "skills" else {}),
               "loss": sum(losses) / max(1, len(losses)), "loss_last": losses[-1] if losses else None,
               "target_tokens": tokens, "seconds": seconds, "train_tokens_per_s": tokens / max(seconds, 1e-9)}
        run.log(row)
        rows.append(row)
        if on_row:
            on_row(row)
        checkpoint = save_checkpoint(run, policy, optimizer, epoch, config.keep_checkpoints)
        if config.eval_every > 0 and due(epoch, config.eval_every, config.sft_epochs):
            rows += evaluate_checkpoint(config, run, epoch, checkpoint, on_row)
    return rows


def train(config: TrainConfig, on_row: OnRow | None = None,
          on_status: OnStatus | None = None) -> list[dict[str, Any]]:
    parallel = DataParallel(config.parallel)  # torchrun sets WORLD_SIZE; alone it is a single process
    run = TrainRun(config.out, config.loggers)
    try:
        if parallel.is_main:
            run.open(config.identity(), config.model_dump(), config.identity_defaults())
        parallel.barrier()
        if config.algo == SFT:
            if parallel.enabled:
                raise ValueError("SFT runs in one process; launch it without torchrun")
            return train_sft_run(config, run, on_row, on_status)
        return train_rl(config, run, on_row, parallel)
    finally:
        run.close()
        parallel.close()
