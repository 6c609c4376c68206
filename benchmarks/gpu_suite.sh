#!/usr/bin/env bash
# Every GPU check of the kernels and precision work in one command, for the device machine:
#
#   bash benchmarks/gpu_suite.sh              # env, compile, kernel + precision tests, benchmark
#   SUITE=tests bash benchmarks/gpu_suite.sh  # tests only;  SUITE=bench: benchmark only
#   ALL_TESTS=1 bash benchmarks/gpu_suite.sh  # also the whole test suite (cupy backends)
#   BENCH_ARGS="--quick --only attention" bash benchmarks/gpu_suite.sh
#
# Logs go to $OUT (the device tool's output folder) or /tmp/tricycle-gpu: env.log,
# compile.log, test_kernels.log, test_precision.log, bench.log, bench.json. The kernel tests run
# one pytest process per concern, so an illegal memory access in one kernel (which poisons the
# CUDA context of its process) cannot hide the results of the others. Exit status: the number
# of failed steps.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tricycle-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
SUITE=${SUITE:-all}
failed=0

step() {  # step NAME LOG TIMEOUT COMMAND...: run, log, and count a failure
    local name=$1 log=$2 limit=$3
    shift 3
    local start=$SECONDS
    echo "== $name" | tee -a "$OUT/$log"
    timeout "$limit" "$@" >>"$OUT/$log" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && failed=$((failed + 1))
    echo "   $name: rc=$rc, $((SECONDS - start)) s" | tee -a "$OUT/$log"
    return 0
}

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
        --format=csv 2>&1
    $PY - <<'EOF'
import sys, numpy
print("python", sys.version.split()[0], "numpy", numpy.__version__)
try:
    import cupy
    print("cupy", cupy.__version__, "cuda runtime", cupy.cuda.runtime.runtimeGetVersion(),
          "nvrtc", cupy.cuda.nvrtc.getVersion())
except Exception as e:
    print("cupy:", e)
try:
    import torch
    print("torch", torch.__version__, torch.cuda.is_available())
except Exception as e:
    print("torch:", e)
try:
    import ml_dtypes
    print("ml_dtypes", ml_dtypes.__version__)
except Exception as e:
    print("ml_dtypes:", e)
EOF
} 2>&1 | tee "$OUT/env.log"

# Compile (NVRTC) every instantiation once; CuPy's disk cache serves the later processes.
step "compile all kernels" compile.log 300 $PY -c "
import time; from tricycle.backends import cuda as kernels
t = time.time(); n = kernels.compile_all(); print(n, 'instantiations in', round(time.time() - t, 1), 's')"
tail -2 "$OUT/compile.log"

if [ "$SUITE" = all ] || [ "$SUITE" = tests ]; then
    for group in "enabled or import" softmax layer_norm rms_norm gelu cross_entropy embedding \
        adam clip optimiser attention instantiation wired gpt_training; do
        step "test_kernels -k $group" test_kernels.log 240 \
            $PY -m pytest tests/test_kernels.py -k "$group" -q -s -p no:cacheprovider
        grep -E "passed|failed|error" "$OUT/test_kernels.log" | tail -1
    done
    step "test_precision" test_precision.log 240 \
        $PY -m pytest tests/test_precision.py -q -p no:cacheprovider
    tail -3 "$OUT/test_precision.log"
    # per-check relative errors, for GPU_NOTES.md
    grep -E "rel err" "$OUT/test_kernels.log" | sort | awk '{print}' >"$OUT/errors.log" || true
fi

if [ "$SUITE" = all ] || [ "$SUITE" = bench ]; then
    # shellcheck disable=SC2086
    step "gpu_kernels benchmark" bench.log 400 \
        $PY benchmarks/gpu_kernels.py --json "$OUT/bench.json" ${BENCH_ARGS:-}
    sed -n '/== summary/,$p' "$OUT/bench.log"
fi

if [ "${ALL_TESTS:-0}" = 1 ]; then  # last: the wiring is also checked by test_kernels
    export HYPOTHESIS_PROFILE=ci
    step "all other tests" test_all.log 200 $PY -m pytest tests -q -p no:cacheprovider \
        -m "not slow" --ignore=tests/test_kernels.py --ignore=tests/test_precision.py
    tail -15 "$OUT/test_all.log"
fi

echo "failed steps: $failed"
exit "$failed"
