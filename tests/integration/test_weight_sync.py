"""The vLLM rollout engine follows the trainer's weights: after k GRPO updates, each followed by the
in-place sync, the engine's greedy generations and token log-probs equal the trainer's on real
ALFWorld, WebShop and Search-QA first-step prompts; after k more updates without the sync they do
not, and the sync's probe check raises :class:`WeightSyncError`.

Tolerance (float32 on both sides, where the two engines agree token for token): every prompt's
greedy tokens identical, and every token's log-prob within ``LOGPROB_TOL`` of the trainer's
teacher-forced value (measured gaps are about 1e-6). The updates move the weights far beyond it
(lr 1e-3), which the test checks, so a skipped sync cannot pass by accident.

This file is also the script (bottom) that runs the check in a child process (the ``vllm_child``
fixture: vLLM never starts inside pytest).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

UPDATES = 2
LOGPROB_TOL = 1e-3
MAX_NEW_TOKENS = 16
ENVS = {"alfworld": ("unseen", {"sizes": {"unseen": 2}}), "webshop": ("test", {}), "searchqa": ("test", {})}
PER_ENV = 2


@pytest.fixture(scope="module")
def child(tiny_model_dir, vllm_child):
    return vllm_child(__file__, str(tiny_model_dir))


@pytest.fixture(scope="module")
def report(child):
    return child[0]


def test_before_any_update_both_engines_agree(report):
    before = report["before"]
    assert before["prompts"] == PER_ENV * len(ENVS) and before["identical"]
    assert before["max_logprob_gap"] < LOGPROB_TOL


def test_after_k_synced_updates_generations_and_logprobs_match_the_trainer(report):
    synced = report["synced"]
    assert len(report["updates"]) == UPDATES and all(u["probe_gap"] < LOGPROB_TOL for u in report["updates"])
    assert synced["identical"], (synced["engine_tokens"], synced["trainer_tokens"])
    assert synced["max_logprob_gap"] < LOGPROB_TOL
    # the updates really changed the policy: the log-probs of its first greedy tokens moved
    assert report["moved"] > 10 * LOGPROB_TOL


def test_the_sync_does_not_log_vllms_false_alarm_about_the_rotary_cache(child, report):
    from seed_gym.agents.backends.vllm import ROPE_RELOAD_WARNING

    _, log = child
    assert len(report["updates"]) == UPDATES  # each one reloaded the engine's weights
    assert "Successfully reset prefix cache" in log  # vLLM's log was captured
    assert ROPE_RELOAD_WARNING not in log


def test_skipping_the_sync_is_detected(report):
    stale = report["unsynced"]
    assert not stale["identical"] or stale["max_logprob_gap"] > LOGPROB_TOL
    assert stale["max_logprob_gap"] > 10 * LOGPROB_TOL
    assert report["verify_error"] and "did not take effect" in report["verify_error"]


# -- the child process --------------------------------------------------------------------------
def main(model: str, out: str) -> None:
    from seed_gym.agents.bench import first_step_prompts
    from seed_gym.training.weight_sync import sync_check

    prompts = [p for env, (split, kwargs) in ENVS.items()
               for p in first_step_prompts(env, split, PER_ENV, env_kwargs=kwargs)]
    report = sync_check(model, prompts, updates=UPDATES, max_new_tokens=MAX_NEW_TOKENS)
    Path(out).write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
