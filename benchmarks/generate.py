"""Generation speed: tricycle's KV-cache ``GPT.generate`` against transformers' ``generate``.

    python benchmarks/generate.py                            # CPU, float32, batch 1 and 16
    python benchmarks/generate.py --device gpu --dtype float32 bfloat16
    python benchmarks/generate.py --quick                    # a smoke test: 2 layers, 8 tokens
    python benchmarks/generate.py --batch 16 --padded 1 4 16 # prompts of 1, 4, 16 lengths

GPT-2 124M's shapes (12 layers x 12 heads x 768, 1024 positions, 50,257 ids), random weights
(one GPT2LMHeadModel, saved and loaded into tricycle with ``GPT.from_pretrained``, so both
run the same weights), a 16-token prompt, 128 new tokens, greedy, every token generated (no
stopping at an end-of-text id). Both sides use a KV cache. For each device, dtype and batch
size, the rounds alternate the two and the table gives each one's best tokens/s and the
median of per-round ratios (ours / theirs: above 1 is faster). The greedy tokens are
compared (float32: they must agree; bfloat16: the count of equal tokens is printed).
``--padded K`` gives the rows K lengths (16, 15, ..., cycling), padded on the left with
their ``attention_mask`` to both sides: transformers runs the batch as one, tricycle one
group of rows of one length after another.

On the CPU both use --threads threads (default: all cores). On a GPU, tricycle's bfloat16
casts the model's weights to bfloat16 once (an inference copy) and transformers runs
``model.to(torch.bfloat16)``; tricycle's decode steps are recorded as a CUDA graph and
replayed (``tricycle.decode``), and a third side, "eager", runs them without the graph
(its tok/s and its ratio to transformers' are printed too, and its tokens are compared).
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from benchmarks.harness import paired_ratio, settled, synchronize  # noqa: E402
from tricycle import decode  # noqa: E402
from tricycle.models import GPT  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--dtype", nargs="+", default=["float32"],
                        choices=["float32", "bfloat16"])  # fmt: skip
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--padded", type=int, nargs="+", default=[1],
                        help="distinct prompt lengths in a batch (1: none padded)")  # fmt: skip
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="2 layers, 8 new tokens, 1 round")
    return parser.parse_args(argv)


def their_model(torch, transformers, quick: bool):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2 if quick else 12, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0
    )
    return transformers.GPT2LMHeadModel(config).eval()


def cast_weights(model: GPT, dtype) -> GPT:
    """An inference copy's weights in ``dtype`` (the KV caches follow the weights)."""
    for _, tensor in model.named_tensors():
        tensor.array = tensor.array.astype(dtype)
    return model


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import torch
        import transformers
    except ImportError:
        print("generate.py needs torch and transformers (the baseline)", file=sys.stderr)
        return 1
    if args.threads:
        torch.set_num_threads(args.threads)
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    if args.quick:
        args.new_tokens, args.rounds, args.batch = 8, 1, [1, 2]
    theirs_f32 = their_model(torch, transformers, args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        theirs_f32.save_pretrained(tmp)
        t = time.perf_counter()
        ours_f32 = GPT.from_pretrained(tmp)
        load_s = time.perf_counter() - t
    print(f"loaded {ours_f32.num_parameters():,} parameters into tricycle in {load_s:.2f} s",
          file=sys.stderr)  # fmt: skip
    rows = []
    for dtype in args.dtype:
        ours, theirs, torch_device = ours_f32, theirs_f32, "cpu"
        if args.device == "gpu":
            torch_device = "cuda"
            theirs = their_model(torch, transformers, args.quick).to(torch_device)
            ours = _gpu_copy(ours_f32)
        if dtype == "bfloat16":
            from tricycle.precision import bfloat16

            ours = cast_weights(ours if args.device == "gpu" else _copy(ours), bfloat16())
            theirs = theirs.to(torch.bfloat16)
        for batch, lengths in [(b, k) for b in args.batch for k in args.padded]:
            prompt = np.random.default_rng(batch).integers(0, 50257, (batch, args.prompt))
            mask = padding_mask(batch, args.prompt, lengths)  # (B, T), or None: no padding
            out = {}

            def run_ours(prompt=prompt, ours=ours, out=out, key="ours", mask=mask):
                synchronize(args.device)
                t = time.perf_counter()
                out[key] = ours.generate(prompt, args.new_tokens, temperature=0,
                                         attention_mask=mask)  # fmt: skip
                synchronize(args.device)
                return time.perf_counter() - t

            def run_eager(prompt=prompt, ours=ours, out=out):
                recorded = decode.records
                decode.records = lambda caches: False  # the decode steps without a graph
                try:
                    return run_ours(prompt, ours, out, key="eager")
                finally:
                    decode.records = recorded

            def run_theirs(prompt=prompt, theirs=theirs, out=out, mask=mask):
                ids = torch.tensor(prompt, device=torch_device)
                ones = torch.ones_like(ids) if mask is None else torch.tensor(mask).to(ids)
                synchronize(args.device)
                t = time.perf_counter()
                with torch.no_grad():
                    result = theirs.generate(
                        ids, attention_mask=ones, do_sample=False,
                        max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                        pad_token_id=0,
                    )  # fmt: skip
                synchronize(args.device)
                out["theirs"] = result.cpu().numpy()
                return time.perf_counter() - t

            runners = {"tricycle": settled(run_ours), "transformers": settled(run_theirs)}
            if args.device == "gpu":
                runners["eager"] = settled(run_eager)
            times = {name: [] for name in runners}
            for run in runners.values():
                run()  # warm up
            for i in range(args.rounds):
                order = list(runners) if i % 2 == 0 else list(runners)[::-1]
                for name in order:
                    times[name].append(runners[name]())
            tokens = batch * args.new_tokens
            same = int((out["ours"][:, args.prompt :] == out["theirs"][:, args.prompt :]).sum())
            row = {
                "device": args.device, "dtype": dtype, "batch": batch, "lengths": lengths,
                "ours_tok_s": round(tokens / min(times["tricycle"]), 1),
                "theirs_tok_s": round(tokens / min(times["transformers"]), 1),
                "ratio": round(paired_ratio(times["transformers"], times["tricycle"]), 3),
                "same_tokens": f"{same}/{tokens}",
            }  # fmt: skip
            if "eager" in runners:
                row["eager_tok_s"] = round(tokens / min(times["eager"]), 1)
                row["eager_ratio"] = round(paired_ratio(times["transformers"], times["eager"]), 3)
                same_eager = int((out["ours"] == out["eager"]).all(axis=1).sum())
                row["same_as_eager"] = f"{same_eager}/{batch} rows"
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\ndevice dtype     batch lengths  tricycle tok/s  transformers tok/s  ratio  same "
          "tokens  (eager tok/s, ratio, same rows)")  # fmt: skip
    for r in rows:
        eager = ""
        if "eager_tok_s" in r:
            eager = f"  ({r['eager_tok_s']:,.1f}, {r['eager_ratio']:.2f}x, {r['same_as_eager']})"
        print(f"{r['device']:6} {r['dtype']:9} {r['batch']:5} {r['lengths']:7}  "
              f"{r['ours_tok_s']:14,.1f}  "
              f"{r['theirs_tok_s']:18,.1f}  {r['ratio']:5.2f}x  {r['same_tokens']}"
              + eager)  # fmt: skip
    return 0


def padding_mask(batch: int, length: int, lengths: int) -> np.ndarray | None:
    """A left-padding mask (B, T): row i holds length - (i % lengths) ids (None: all whole)."""
    if lengths <= 1:
        return None
    own = length - np.arange(batch) % min(lengths, length)  # (B,)
    return (np.arange(length) >= length - own[:, None]).astype(np.int64)


def _copy(model: GPT) -> GPT:
    copy = GPT(model.config, initialise=False)
    for (_, mine), (_, theirs) in zip(copy.named_tensors(), model.named_tensors()):
        mine.array = theirs.array.copy()
    return copy


def _gpu_copy(model: GPT) -> GPT:
    return _copy(model).to_gpu()


if __name__ == "__main__":
    sys.exit(main())
