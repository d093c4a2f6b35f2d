"""``python -m autofuse.demo`` (``make demo``): Hugging Face transformers models through torch.compile(backend="autofuse").

Models are built from configs with random weights (no downloads): GPT-2 (small's widths), BERT (base's widths) and a
LLaMA-style decoder (RMSNorm, SiLU-gated MLP, rotary embedding). To keep the run within a few minutes on a 2-core
machine the models have fewer layers than the published ones (printed per model); dropout is off so that compiled
and eager runs are comparable. Attention uses transformers' "eager" implementation, so its softmax is fused by us.

Per model: kernels and fallbacks, fp32 error against eager (acceptance: 1e-4 relative), bf16 error against an fp64
reference compared with eager bf16's own error (acceptance: at most 2x), one training step's gradients against eager
(1e-4 relative), time per call for eager / Inductor / Autofuse, and compile time cold and warm. Then a sweep over 16
sequence lengths with dynamic shapes, printing how many C++ compiles happened after the first length.
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import torch

from . import backend
from .program import kernel_launches

FP32_TOL = 1e-4
BF16_FACTOR = 2.0


def _models(layers: int) -> Dict[str, Tuple[Callable, str]]:
    import transformers as T

    def gpt2():
        cfg = T.GPT2Config(n_layer=layers, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        return T.GPT2LMHeadModel, cfg, f"GPT-2 small widths (768 hidden, 12 heads), {layers} of 12 layers"

    def bert():
        cfg = T.BertConfig(num_hidden_layers=layers, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        return T.BertForMaskedLM, cfg, f"BERT base widths (768 hidden, 12 heads), {layers} of 12 layers"

    def llama():
        cfg = T.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=layers, num_attention_heads=4,
                            num_key_value_heads=4, vocab_size=2000, max_position_embeddings=512)
        return T.LlamaForCausalLM, cfg, f"LLaMA-style decoder (256 hidden, 4 heads, RMSNorm/SiLU/rotary), {layers} layers"

    return {"gpt2": gpt2, "bert": bert, "llama": llama}


def _build(spec):
    cls, cfg, note = spec()
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    return cls(cfg).eval(), cfg, note


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def _time(fn: Callable, reps: int) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def _cache_compiles() -> int | None:
    try:
        from . import _core

        return int(_core.cache_stats().compiles)
    except Exception:
        return None


def _fresh_autofuse():
    """Forget compiled graphs and kernels of this process; compiled modules stay in the disk cache (a warm start)."""
    torch._dynamo.reset()
    try:
        from . import _core, native

        native._KERNELS.clear()
        if hasattr(_core, "clear_memory_cache"):
            _core.clear_memory_cache()
    except Exception:
        pass


def _input_ids(cfg, args) -> torch.Tensor:
    """The demo's token ids (seeded, so that a probe process sees the same input)."""
    gen = torch.Generator().manual_seed(1)
    return torch.randint(0, cfg.vocab_size, (args.batch, args.seq), generator=gen)


def _warm_probe(backend_name: str, name: str, args) -> float:
    """Warm start: time the first call of the compiled model in a new process (same caches); seconds, nan on failure."""
    cmd = [sys.executable, "-m", "autofuse.demo", "--probe", backend_name, "--models", name, "--layers",
           str(args.layers), "--batch", str(args.batch), "--seq", str(args.seq)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    for line in r.stdout.splitlines():
        if line.startswith("PROBE "):
            return float(line.split()[1])
    print(f"  warm-start probe ({backend_name}) failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    return float("nan")


def probe(backend_name: str, name: str, args) -> None:
    """The body of a warm-start probe process: build the model, compile it, print ``PROBE <first call seconds>``."""
    logging.getLogger("torch").setLevel(logging.ERROR)
    model, cfg, _ = _build(_models(args.layers)[name])
    ids = _input_ids(cfg, args)
    with torch.no_grad():
        compiled = torch.compile(model, backend=backend_name)
        t = time.perf_counter()
        _logits(compiled, ids)
        print(f"PROBE {time.perf_counter() - t:.6f}", flush=True)


def _logits(model, ids):
    return model(input_ids=ids).logits


def run_model(name: str, spec, args) -> Dict[str, object]:
    model, cfg, note = _build(spec)
    ids = _input_ids(cfg, args)
    res: Dict[str, object] = {"model": name, "note": note}
    print(f"\n=== {name}: {note}; input {args.batch}x{args.seq} tokens")

    # fp32 inference
    with torch.no_grad():
        ref = _logits(model, ids)
        _fresh_autofuse()
        start, launches = len(backend.RECORDS), kernel_launches()
        compiled = torch.compile(model, backend="autofuse")
        t = time.perf_counter()
        out = _logits(compiled, ids)
        res["compile_cold_s"] = time.perf_counter() - t
        recs = backend.RECORDS[start:]
        res["kernels"] = sum(len(r.kernels) for r in recs)
        res["modes"] = sorted({r.mode for r in recs})
        res["fallback_ops"] = sorted({op for r in recs if r.lowered for op, _ in r.lowered.fallbacks})
        res["graphs"] = len(recs)
        res["fp32_rel"] = _rel(out, ref)
        res["t_autofuse"] = _time(lambda: _logits(compiled, ids), args.reps)
        res["launches_per_call"] = (kernel_launches() - launches) / (args.reps + 2)
        res["t_eager"] = _time(lambda: _logits(model, ids), args.reps)
    res["compile_warm_s"] = _warm_probe("autofuse", name, args)
    print(f"  graphs {res['graphs']} ({'/'.join(res['modes'])}), kernels {res['kernels']}, "
          f"{res['launches_per_call']:.0f} kernel launches per call")
    print(f"  fallbacks (ATen ops): {', '.join(res['fallback_ops']) or 'none'}")
    ok32 = res["fp32_rel"] <= FP32_TOL
    print(f"  fp32 logits: max rel error vs eager {res['fp32_rel']:.2e}  [{'OK' if ok32 else 'FAIL'} <= {FP32_TOL:g}]")

    if args.inductor:
        with torch.no_grad():
            torch._dynamo.reset()
            ind = torch.compile(model, backend="inductor")
            t = time.perf_counter()
            _logits(ind, ids)
            res["ind_cold_s"] = time.perf_counter() - t
            res["t_inductor"] = _time(lambda: _logits(ind, ids), args.reps)
            del ind
            torch._dynamo.reset()
        res["ind_warm_s"] = _warm_probe("inductor", name, args)
    ind_t = f"{res['t_inductor'] * 1e3:.2f} ms" if "t_inductor" in res else "skipped"
    print(f"  time per call: eager {res['t_eager'] * 1e3:.2f} ms | inductor {ind_t} | "
          f"autofuse {res['t_autofuse'] * 1e3:.2f} ms")
    ind_c = (f"inductor cold {res['ind_cold_s']:.2f} s / warm {res['ind_warm_s']:.2f} s | "
             if "ind_cold_s" in res else "")
    print(f"  compile: {ind_c}autofuse cold {res['compile_cold_s']:.2f} s / warm {res['compile_warm_s']:.2f} s "
          f"(cold: empty caches; warm: a new process, caches populated)")

    # bf16 inference against an fp64 reference
    with torch.no_grad():
        m64 = copy.deepcopy(model).double()
        ref64 = _logits(m64, ids)
        del m64
        mbf = copy.deepcopy(model).to(torch.bfloat16)
        eager_err = _rel(_logits(mbf, ids), ref64)
        _fresh_autofuse()
        cbf = torch.compile(mbf, backend="autofuse")
        af_err = _rel(_logits(cbf, ids), ref64)
    res["bf16_eager_err"], res["bf16_af_err"] = eager_err, af_err
    okbf = af_err <= BF16_FACTOR * eager_err
    print(f"  bf16 logits vs fp64: eager {eager_err:.2e}, autofuse {af_err:.2e}  "
          f"[{'OK' if okbf else 'FAIL'} <= {BF16_FACTOR:g}x eager]")

    # one training step: gradients against eager
    mt = copy.deepcopy(model).train()
    me = copy.deepcopy(model).train()
    labels = torch.randint(0, cfg.vocab_size, (args.batch, args.seq))
    _fresh_autofuse()
    ct = torch.compile(mt, backend="autofuse")
    loss_c = torch.nn.functional.cross_entropy(_logits(ct, ids).flatten(0, 1), labels.flatten())
    loss_c.backward()
    loss_e = torch.nn.functional.cross_entropy(_logits(me, ids).flatten(0, 1), labels.flatten())
    loss_e.backward()
    # Error per parameter relative to its eager gradient's largest magnitude, floored at 1e-3 of the model's largest
    # gradient: some gradients are analytically zero (BERT's attention key bias: softmax ignores a per-row constant),
    # and their eager values are rounding noise that a plain relative error would divide by.
    pairs = [(n, p.grad, q.grad) for (n, p), q in zip(mt.named_parameters(), me.parameters())
             if p.grad is not None and q.grad is not None]
    floor = 1e-3 * max(float(q.abs().max()) for _, _, q in pairs)
    worst, worst_name = 0.0, ""
    for n, pg, qg in pairs:
        r = float((pg.double() - qg.double()).abs().max()) / max(float(qg.abs().max()), floor, 1e-30)
        if r > worst:
            worst, worst_name = r, n
    res["grad_rel"] = worst
    okg = worst <= FP32_TOL
    print(f"  training step: loss {loss_c.item():.5f} vs eager {loss_e.item():.5f}; worst gradient rel error "
          f"{worst:.2e} ({worst_name})  [{'OK' if okg else 'FAIL'} <= {FP32_TOL:g}]")
    res["ok"] = ok32 and okbf and okg
    return res


def sweep(spec, args) -> None:
    """16 sequence lengths with dynamic shapes: count C++ compiles after the first length."""
    model, cfg, note = _build(spec)
    _fresh_autofuse()
    compiled = torch.compile(model, backend="autofuse", dynamic=True)
    lengths = [8 + 5 * i for i in range(16)]
    start = len(backend.RECORDS)
    with torch.no_grad():
        _logits(compiled, torch.randint(0, cfg.vocab_size, (1, lengths[0])))
        after_first = _cache_compiles()
        worst = 0.0
        for n in lengths[1:]:
            ids = torch.randint(0, cfg.vocab_size, (1, n))
            worst = max(worst, _rel(_logits(compiled, ids), _logits(model, ids)))
    end = _cache_compiles()
    graphs = len(backend.RECORDS) - start
    cc = "n/a (runtime cache counters not available)" if end is None else str(end - after_first)
    print(f"\n=== sweep: {note}, 16 sequence lengths {lengths[0]}..{lengths[-1]}, dynamic=True")
    print(f"  graphs compiled {graphs}; C++ compiles after the first length: {cc}; max rel error {worst:.2e}")


def measure_overhead(reps: int = 2000) -> None:
    """Per-call cost of the machinery around a kernel, on a one-kernel graph of 1-element tensors (x * 2 + 1)."""
    x = torch.randn(1)
    _fresh_autofuse()
    start = len(backend.RECORDS)
    compiled = torch.compile(lambda t: t * 2 + 1, backend="autofuse")
    compiled(x)
    rec = backend.RECORDS[start]
    eager = _time(lambda: x * 2 + 1, reps)
    total = _time(lambda: compiled(x), reps)
    prog = _time(lambda: rec.program([x]), reps)
    ks = rec.kernels
    kernel = None
    if ks and ks[0].kernel is not None:
        out = torch.empty(1)
        kernel = _time(lambda: ks[0].run([x], [out]), reps)
    kt = f", of which the kernel call {kernel * 1e6:.1f} us" if kernel is not None else ""
    print(f"\n=== per-call overhead (x*2+1 on 1 element): eager {eager * 1e6:.1f} us; torch.compile(autofuse) "
          f"{total * 1e6:.1f} us = Dynamo/AOT wrappers {(total - prog) * 1e6:.1f} us + autofuse program "
          f"{prog * 1e6:.1f} us{kt}")


def main(argv: List[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autofuse.demo", description=__doc__.split("\n")[0])
    p.add_argument("--models", default="gpt2,bert,llama")
    p.add_argument("--layers", type=int, default=2, help="transformer layers per model (published: 12 / 12 / 32)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--no-inductor", dest="inductor", action="store_false", help="skip the Inductor comparison")
    p.add_argument("--no-sweep", dest="sweep", action="store_false")
    p.add_argument("--probe", choices=["autofuse", "inductor"], help=argparse.SUPPRESS)  # warm-start child
    args = p.parse_args(argv)
    if args.probe:
        probe(args.probe, args.models, args)
        return 0
    logging.getLogger("torch").setLevel(logging.ERROR)
    # Cold compiles start from empty kernel caches (ours and Inductor's); warm-start probes inherit these directories.
    cache_root = tempfile.mkdtemp(prefix="autofuse-demo-")
    os.environ.setdefault("AUTOFUSE_CACHE_DIR", os.path.join(cache_root, "autofuse"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache_root, "inductor"))
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    t0 = time.perf_counter()
    if backend.has_native_kernels():
        path = "native kernels (C++ fusion + codegen)"
    elif backend.has_fusion():
        path = "C++ fusion groups run by the eager stand-in (kernel compiler bindings missing)"
    else:
        path = "eager stand-in groups (C++ fusion and kernel bindings missing)"
    print(f"Autofuse demo: torch {torch.__version__}, {torch.get_num_threads()} threads; path: {path}")
    specs = _models(args.layers)
    results = [run_model(m, specs[m], args) for m in args.models.split(",")]
    if args.sweep:
        sweep(specs["llama"], args)
    measure_overhead()
    shutil.rmtree(cache_root, ignore_errors=True)
    ok = all(r["ok"] for r in results)
    print(f"\ndemo {'PASSED' if ok else 'FAILED'} in {time.perf_counter() - t0:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
