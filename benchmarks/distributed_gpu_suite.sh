#!/usr/bin/env bash
# Data parallelism on a 2-GPU machine, in one command (issue 28), about 8 minutes:
#
#   bash benchmarks/distributed_gpu_suite.sh           # faults, tests, the end, the scaling table
#   SUITE=faults|tests|end|scaling bash ...            # one part;  COMPILE=1: torch.compile too
#
# Faults (TRICYCLE_DIST_TIMEOUT=10): rank 1 hangs, is killed or raises an error in the
# training script's step, eager, captured and captured with ZeRO-1, or (the training
# script) rank 0 alone finds --out-dir taken; each must end every rank within 15 s (hang)
# or 10 s (the others), with a message naming the rank (and, hung, the collective).
# Tests: the GPU tests of the deadline keeper and of the captured data-parallel step.
# End (issue 44): the shakespeare-char recipe, 1000 steps, on 1 and 2 GPUs: the seconds
# from its last line to the exit (<= 5), and its metrics' tokens/s against the wall clock
# between evaluations (within 5%) (benchmarks/distributed_end.py). Scaling: tokens/s of tricycle's
# training-script step (captured, and eager), the overlapped and after-backward reductions,
# a PyTorch user's loop on tricycle's DistributedDataParallel, and PyTorch DDP under torchrun, at the shakespeare size and GPT-2 124M, bf16, 1 and 2
# GPUs; then the ratios. Logs and results.jsonl go to $OUT (or /tmp/tricycle-dist).
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
OUT=${OUT:-/tmp/tricycle-dist}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
BIN=$(dirname "$(command -v "$PY")")
MPI=${MPIEXEC:-$([ -x "$BIN/mpiexec" ] && echo "$BIN/mpiexec" || echo mpiexec)}
read -ra MPI_ARGS <<<"${MPIEXEC_ARGS:-}"  # e.g. Open MPI as root: --allow-run-as-root -x PATH
TORCHRUN=${TORCHRUN:-$([ -x "$BIN/torchrun" ] && echo "$BIN/torchrun" || echo torchrun)}
SUITE=${SUITE:-all}
R="$OUT/results.jsonl"

run() {  # run NAME LIMIT COMMAND...: log to $OUT/NAME.log, keep its RESULT lines
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc=$rc, $((SECONDS - start)) s"
    grep '^RESULT ' "$OUT/$name.log" | cut -c8- >>"$R"
    grep -v '^RESULT ' "$OUT/$name.log" | grep -iE "tokens/s|ok|mismatch|error|abort|timed out|ending|killed|step " | tail -n 12
}

if [ "$SUITE" = all ] || [ "$SUITE" = faults ]; then
    for step in eager captured zero; do
        for fault in hang kill raise; do
            TRICYCLE_DIST_TIMEOUT=10 run "fault_${fault}_$step" 60 "$MPI" "${MPI_ARGS[@]}" -n 2 \
                "$PY" benchmarks/distributed_gpu.py --fault "$fault" --fault-step $step --precision bf16
        done
    done
    rm -rf "$OUT/taken" && mkdir -p "$OUT/taken" && echo '{"step": 1}' >"$OUT/taken/metrics.jsonl"
    run fault_usage 60 "$MPI" "${MPI_ARGS[@]}" -n 2 "$PY" train_smol_gpt.py --config debug --device gpu \
        --out-dir "$OUT/taken" --no-progress
fi
if [ "$SUITE" = all ] || [ "$SUITE" = tests ]; then
    run gpu_tests 300 "$PY" -m pytest -n 0 -q -p no:cacheprovider tests/test_deadline.py \
        tests/test_distributed_gpu.py tests/test_cuda_graph.py
    tail -n 3 "$OUT/gpu_tests.log"
fi
if [ "$SUITE" = all ] || [ "$SUITE" = end ]; then
    RECIPE=(train_smol_gpt.py --config shakespeare-char --dataset shakespeare-char --device gpu
        --precision bf16 --stop-after 1000 --eval-interval 250 --no-progress --sample-tokens 0)
    rm -rf "$OUT/end_1" "$OUT/end_2"
    run end_1 300 "$PY" benchmarks/distributed_end.py --run-dir "$OUT/end_1" -- \
        "$PY" "${RECIPE[@]}" --out-dir "$OUT/end_1"
    run end_2 300 "$PY" benchmarks/distributed_end.py --run-dir "$OUT/end_2" -- \
        "$MPI" "${MPI_ARGS[@]}" -n 2 "$PY" "${RECIPE[@]}" --out-dir "$OUT/end_2"
    grep -hE "^status|between evaluations|^training:" "$OUT/end_1.log" "$OUT/end_2.log"
fi
if [ "$SUITE" = all ] || [ "$SUITE" = scaling ]; then
    : >"$R"
    A=(--precision bf16 --json --steps 20 --warmup 5 --repeats 1)
    T=(--json --steps 20 --warmup 5 --repeats 1)
    for m in shakespeare gpt2; do
        check=$([ $m = gpt2 ] && echo --no-check)
        run "tricycle_${m}_1" 150 "$PY" benchmarks/distributed_gpu.py --model $m "${A[@]}" \
            --no-check --settings "script captured,script eager,torch-style DDP"
        run "tricycle_${m}_2" 180 "$MPI" "${MPI_ARGS[@]}" -n 2 "$PY" benchmarks/distributed_gpu.py --model $m \
            "${A[@]}" $check
        run "torch_${m}_1" 90 "$PY" benchmarks/torch_ddp_gpu.py --model $m "${T[@]}"
        run "torch_${m}_2" 90 "$TORCHRUN" --standalone --nproc_per_node 2 \
            benchmarks/torch_ddp_gpu.py --model $m "${T[@]}"
        if [ "${COMPILE:-0}" = 1 ]; then
            run "torchc_${m}_2" 150 "$TORCHRUN" --standalone --nproc_per_node 2 \
                benchmarks/torch_ddp_gpu.py --model $m --compile "${T[@]}"
        fi
    done
    "$PY" - "$R" <<'EOF2'
import json, sys
rates = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    for label, value in r["tokens_per_s"].items():
        rates[(r["model"], r["gpus"], label)] = value
for model in ("shakespeare", "gpt2"):
    print(f"--- {model}, bf16 (tokens/s, all GPUs)")
    for (m, gpus, label), value in sorted(rates.items()):
        if m == model:
            print(f"  {gpus} GPU(s) {label:<22} {value:>12,.0f}")
    get = lambda g, label: rates.get((model, g, label))
    def ratio(name, a, b, target):
        if a and b:
            print(f"  {name:<48} {a / b:6.2f}x (target {target})")
    ratio("tricycle 2 GPUs / 1 GPU (script, captured)", get(2, "script captured"), get(1, "script captured"), ">= 1.9")
    ratio("tricycle 2 GPUs / 1 GPU (script, eager)", get(2, "script eager"), get(1, "script eager"), "")
    ratio("tricycle 2 GPUs / 1 GPU (torch-style DDP)", get(2, "torch-style DDP"), get(1, "torch-style DDP"), "")
    ratio("overlapped / after backward (2 GPUs)", get(2, "overlapped"), get(2, "after backward"), "> 1")
    ratio("overlapped 4 MiB / after backward (2 GPUs)", get(2, "overlapped 4 MiB"), get(2, "after backward"), "> 1")
    for g in (1, 2):
        ratio(f"tricycle / torch DDP eager, {g} GPU(s)", get(g, "script captured"), get(g, "torch DDP eager"), ">= 1.1")
    ratio("tricycle / torch DDP compiled, 2 GPUs", get(2, "script captured"), get(2, "torch DDP compiled"), ">= 1.1")
    for g in (1, 2):
        ratio(f"tricycle's DDP / torch DDP eager, {g} GPU(s)", get(g, "torch-style DDP"), get(g, "torch DDP eager"), "")
EOF2
fi
