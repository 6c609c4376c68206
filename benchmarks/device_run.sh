#!/usr/bin/env bash
# The whole issue-5 GPU check in ONE device call (budget: 540 s of wall time):
#   (a) kernel tests (gpu_suite.sh SUITE=tests) + the whole test suite on cupy   <= 200 s
#   (b) benchmarks/gpt_train.py --device gpu: ours vs torch eager, fp32/tf32/mixed <= 150 s
#   (c) the shakespeare-char recipe for the remaining time, val loss vs wall time
# Expects data/tinyshakespeare.txt in the repo root (git-ignored /data/; carry it).
# Logs under $OUT; a compact summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tricycle-device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=ci
export TRICYCLE_DATA_DIR="$PWD/data"
BUDGET=${BUDGET:-540}
RECIPE_PRECISION=${RECIPE_PRECISION:-tf32}
T0=$SECONDS
left() { echo $((BUDGET - (SECONDS - T0))); }

# (a) tests: kernel groups + precision, then everything else (cupy backends), 200 s together
echo "== (a) tests, $(left) s left" | tee "$OUT/summary.log"
timeout 130 env SUITE=tests OUT="$OUT" bash benchmarks/gpu_suite.sh >"$OUT/suite.log" 2>&1
echo "gpu_suite tests: rc=$?" | tee -a "$OUT/summary.log"
grep -E "^== |rc=|passed|failed" "$OUT/suite.log" | tail -40 >>"$OUT/summary.log"
a_left=$((200 - (SECONDS - T0)))
[ "$a_left" -lt 20 ] && a_left=20
timeout "$a_left" python3 -m pytest tests -q -p no:cacheprovider -m "not slow" \
    >"$OUT/pytest_all.log" 2>&1
echo "pytest tests (cupy): rc=$? ($(tail -1 "$OUT/pytest_all.log"))" | tee -a "$OUT/summary.log"

# (b) GPT training benchmark on the GPU
echo "== (b) gpt_train --device gpu, $(left) s left" | tee -a "$OUT/summary.log"
timeout 150 python3 benchmarks/gpt_train.py --device gpu --warmup 5 --steps 20 \
    2>&1 | tee "$OUT/gpt_train.log"
echo "gpt_train: rc=${PIPESTATUS[0]}" | tee -a "$OUT/summary.log"
sed -n '/^mode /,$p' "$OUT/gpt_train.log" >>"$OUT/summary.log"

# (c) shakespeare-char for the rest of the budget (minus 25 s for start-up, checkpoint, exit)
secs=$(($(left) - 25))
echo "== (c) shakespeare-char, --max-seconds $secs ($RECIPE_PRECISION)" | tee -a "$OUT/summary.log"
if [ ! -f data/tinyshakespeare.txt ]; then
    echo "data/tinyshakespeare.txt missing: skipped" | tee -a "$OUT/summary.log"
elif [ "$secs" -gt 20 ]; then
    timeout $((secs + 20)) python3 train_smol_gpt.py --config shakespeare-char \
        --dataset shakespeare-char --device gpu --precision "$RECIPE_PRECISION" \
        --data-dir data --max-seconds "$secs" --out-dir /tmp/shakespeare-char \
        --no-progress --sample-tokens 0 2>&1 | tee "$OUT/shakespeare.log"
    echo "recipe: rc=${PIPESTATUS[0]}" | tee -a "$OUT/summary.log"
    grep -E "val loss|max-seconds|diverged|Error" "$OUT/shakespeare.log" >>"$OUT/summary.log"
    cp /tmp/shakespeare-char/metrics.jsonl "$OUT/shakespeare_metrics.jsonl"
    python3 - "$OUT/shakespeare_metrics.jsonl" <<'PY' >>"$OUT/summary.log" 2>&1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
val = [(r["step"], r["wall_time"], r["val_loss"]) for r in rows if r["val_loss"] is not None]
print("val loss vs wall time:", " ".join(f"{s}:{w:.0f}s:{v:.3f}" for s, w, v in val))
hit = [v for v in val if v[2] <= 1.47]
print("first val <= 1.47:", hit[0] if hit else "not reached", "| steps", rows[-1]["step"])
PY
fi
echo "== total $((SECONDS - T0)) s" | tee -a "$OUT/summary.log"
echo "================ SUMMARY"; cat "$OUT/summary.log"
