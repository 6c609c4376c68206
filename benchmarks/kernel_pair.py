"""CPU kernels of this checkout against another checkout's, in one process, round by round.

    python benchmarks/kernel_pair.py --old /path/to/old/checkout

Loads the other checkout's ``gemm``, ``attention``, ``sdpa``, ``gemv`` and ``recurrent``
kernel modules beside this one's (under other names, each old module calling the old
``gemm``), checks that both give the same numbers (the same bits where the arithmetic is the
same, else within float32's tolerance), then runs them alternately, ``--rounds`` rounds: each
side's best time and the median of per-round ratios, new over old (below 1: the new one is
faster). For a kernel's speed after a change that should not have moved it (compile-time
work, issue 45; the kernels' layouts, the suite's time).
"""

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle import dispatch  # noqa: E402
from tricycle.backends.cpu import attention, gemm, gemv, recurrent, sdpa  # noqa: E402
from tricycle.dropout_mask import NO_DROPOUT, AttentionDropout  # noqa: E402
from tricycle.nn import recurrent as nn_recurrent  # noqa: E402
from tricycle.nn.sdpa import attention_bias  # noqa: E402

PACKAGE = "tricycle.backends.cpu"


def load_old(checkout: Path, name: str):
    """``tricycle/backends/cpu/<name>.py`` of ``checkout`` as module ``<name>_old``, its
    imports of the other old modules pointing at them."""
    path = checkout / "tricycle" / "backends" / "cpu" / f"{name}.py"
    source = path.read_text()
    for other in ("gemm", "attention"):
        source = source.replace(f"{PACKAGE}.{other} import", f"{PACKAGE}.{other}_old import")
    module_name = f"{PACKAGE}.{name}_old"
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=str(path))
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)  # numba caches beside it
    sys.modules[module_name] = module
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102
    return module


def race(label: str, runs: dict, rounds: int) -> None:
    for run in runs.values():
        run()  # compiled or loaded, warm
    times = {side: [] for side in runs}
    for _ in range(rounds):
        for side, run in runs.items():
            started = time.perf_counter()
            run()
            times[side].append(time.perf_counter() - started)
    old, new = np.array(times["old"]), np.array(times["new"])
    print(f"| {label} | {1e3 * old.min():.2f} | {1e3 * new.min():.2f} | "
          f"{np.median(new / old):.3f} |", flush=True)  # fmt: skip


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the other checkout's root")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    names = ("gemm", "attention", "sdpa", "gemv", "recurrent")
    old = {name: load_old(args.old, name) for name in names}
    new = {"gemm": gemm, "attention": attention, "sdpa": sdpa, "gemv": gemv,
           "recurrent": recurrent}  # fmt: skip
    rng = np.random.default_rng(0)
    print("| kernel (forward + backward where there is one) | old ms | new ms | new / old |")
    print("| --- | --- | --- | --- |")

    for B, T, E, H, p in [(8, 128, 256, 4, 0.0), (8, 128, 256, 4, 0.1), (4, 256, 256, 4, 0.0)]:
        qkv = rng.standard_normal((B, T, 3 * E)).astype(np.float32)
        dout = rng.standard_normal((B, T, E)).astype(np.float32)

        def attention_pair(module, qkv=qkv, dout=dout, H=H, p=p):
            out, saved = module.attention_forward(np, qkv, H, p, 7)
            return out, module.attention_backward(np, dout, saved)

        for mine, theirs in zip(attention_pair(new["attention"]), attention_pair(old["attention"])):
            assert np.array_equal(mine, theirs), "attention: the kernels' bits differ"
        race(f"GPT attention B{B} T{T} E{E} H{H} dropout {p}",
             {side: lambda m=m: attention_pair(m["attention"])
              for side, m in (("old", old), ("new", new))},
             args.rounds)  # fmt: skip

    for B, T, p in [(64, 64, 0.0), (32, 64, 0.1), (32, 128, 0.0)]:
        H, D = 4, 32
        q, k, v, dy = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(4))
        padding = rng.random((B, T)) > 0.1
        padding[:, 0] = True
        bias = attention_bias(np, padding[:, None, None, :], np.float32)
        dropout = AttentionDropout(p, 5) if p else NO_DROPOUT

        def sdpa_pair(module, q=q, k=k, v=v, dy=dy, bias=bias, dropout=dropout):
            out, saved = module.sdpa_forward(np, q, k, v, bias, False, None, None, dropout)
            return (out, *module.sdpa_backward(np, dy, saved))

        for mine, theirs in zip(sdpa_pair(new["sdpa"]), sdpa_pair(old["sdpa"])):
            np.testing.assert_allclose(mine, theirs, rtol=2e-4, atol=2e-5)
        race(f"sdpa (bert) B{B} T{T} H{H} D{D} padding mask, dropout {p}",
             {"old": lambda: sdpa_pair(old["sdpa"]), "new": lambda: sdpa_pair(new["sdpa"])},
             args.rounds)  # fmt: skip

    for M, K, N in [(1024, 256, 768), (1024, 256, 1024), (1024, 1024, 256)]:
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        assert np.array_equal(new["gemm"].matmul(a, b), old["gemm"].matmul(a, b))
        race(f"gemm ({M}, {K}) x ({K}, {N})",
             {side: lambda m=m: m["gemm"].matmul(a, b) for side, m in (("old", old), ("new", new))},
             args.rounds)  # fmt: skip

    for K, N in [(256, 1024), (768, 2304), (768, 3072)]:
        x = rng.standard_normal((1, K)).astype(np.float32)
        w = rng.standard_normal((K, N)).astype(np.float32)
        assert np.array_equal(new["gemv"].matmul(x, w), old["gemv"].matmul(x, w))

        def fifty(module, x=x, w=w):
            for _ in range(50):
                module.matmul(x, w)

        race(f"gemv columns (1, {K}) x ({K}, {N}), 50 calls",
             {side: lambda m=m: fifty(m["gemv"]) for side, m in (("old", old), ("new", new))},
             args.rounds)  # fmt: skip

    T, N, H = 32, 32, 256  # the cells step by step (the LSTM's whole-sequence kernel aside)
    for cell, batch_first in [(c, f) for c in ("rnn", "gru", "lstm") for f in (False, True)]:
        G = nn_recurrent.CELLS[cell][0]
        xg = rng.standard_normal((N, T, G * H) if batch_first else (T, N, G * H))
        xg = (xg.transpose(1, 0, 2) if batch_first else xg).astype(np.float32)  # (T, N, G H)
        w = (0.1 * rng.standard_normal((G * H, H))).astype(np.float32)
        h0 = rng.standard_normal((N, H)).astype(np.float32)
        c0 = h0[::-1].copy() if cell == "lstm" else None
        dhs = rng.standard_normal((T, N, H)).astype(np.float32)

        def cells(module, cell=cell, xg=xg, w=w, h0=h0, c0=c0, dhs=dhs):
            pair = tuple(getattr(module, f"{cell}_cell_{half}") for half in ("forward", "backward"))
            with mock.patch.object(dispatch, "choose", lambda op, reference, *arrays: pair):
                states, saved = nn_recurrent.recurrence_forward(np, cell, xg, w, None, h0, c0)
                hs, cs = (states, None) if c0 is None else (states[0], states[1])
                dcs = None if c0 is None else dhs[::-1]
                grads = nn_recurrent.recurrence_backward(
                    np, cell, dhs, dcs, xg, w, h0, c0, hs, cs, saved
                )
            return [states] + [g for g in grads if g is not None]

        pairs = list(zip(cells(new["recurrent"]), cells(old["recurrent"])))
        for mine, theirs in pairs:
            np.testing.assert_allclose(mine, theirs, rtol=2e-4, atol=2e-5)
        same = all(np.array_equal(mine, theirs) for mine, theirs in pairs)
        layout = "xg (N, T, G H) transposed" if batch_first else "xg (T, N, G H)"
        race(f"{cell} cells T{T} N{N} H{H}, {layout}{'' if same else ' (bits differ)'}",
             {side: lambda m=m: cells(m["recurrent"]) for side, m in (("old", old), ("new", new))},
             args.rounds)  # fmt: skip


if __name__ == "__main__":
    main()
