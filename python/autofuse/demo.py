"""``python -m autofuse.demo`` (``make demo``): Hugging Face transformers models through torch.compile(backend="autofuse").

Models are built from configs with random weights (no downloads): GPT-2 (small's widths), BERT (base's widths) and a
LLaMA-style decoder (RMSNorm, SiLU-gated MLP, rotary embedding). To keep the run within a few minutes on a 2-core
machine the models have fewer layers than the published ones (printed per model); dropout is off so that compiled
and eager runs are comparable. Attention uses transformers' "eager" implementation, so its softmax is fused by us.

Per model: kernels and fallbacks, fp32 error against eager (acceptance: 1e-4 relative), bf16 error against an fp64
reference compared with eager bf16's own error (acceptance: at most 2x), one training step's gradients against eager
(1e-4 relative), time per call for eager / Inductor / Autofuse (interleaved calls, medians), and compile time cold
and warm: the first call of the compiled model in a new process, with empty caches (cold) and then the same caches
populated (warm), for both compilers alike, with the part spent in Autofuse itself printed apart from Dynamo and
AOTAutograd. Then a sweep over 16 sequence lengths with dynamic shapes, printing how many C++ compiles happened after
the first length, and a summary with one PASS/FAIL line per acceptance criterion of issue 6 (the exit status
follows the correctness criteria; speed and compile-time criteria are printed as benchmarks).
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import torch

from . import backend
from .bench.timing import medians, quiet_window, time_interleaved
from .program import kernel_launches
from .cli_args import positive_int

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


def _time(fns: Dict[str, Callable], reps: int) -> Dict[str, float]:
    """Median seconds per call of each function: ``reps`` rounds of two calls each, the second timed, the order
    rotating every round (bench/timing.py, the method of ``python -m autofuse.bench.infer``), after two warm-up
    calls each; inside the timing lock's quiet window when AUTOFUSE_TIMING_LOCK is set (bench/timing.py). Also
    stores each contender's minimum in ``_time.minima``."""
    with quiet_window(log=lambda s: print("  " + s)):
        ts = time_interleaved(fns, reps, warmup=2, repeat=2)
    _time.minima = {k: min(v) for k, v in ts.items()}
    return medians(ts)


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


#: The environment of Autofuse's compile-time probes: its warm start on (warm_start.py).
WARM_START_ENV = {"AUTOFUSE_WARM_START": "1"}


def _probe(backend_name: str, name: str, args, cache_dir: str, extra_env: Dict[str, str] | None = None) -> Dict[str, float]:
    """Time the first call of the compiled model in a new process whose kernel caches (ours and Inductor's) live in
    ``cache_dir``: an empty directory gives the cold compile time, a populated one the warm start. Returns the
    probe's figures (``first``: seconds of the first call, Dynamo + AOTAutograd + backend; ``first_cpu``: the CPU
    seconds this process spent in it (all its threads; C++ compiler processes not included), the figure to compare
    when the machine is loaded; for autofuse also
    ``backend``: seconds in our compiler (lowering, fusion, kernel compiles), ``cxx``: the part of it spent generating,
    compiling and loading kernels (GraphRecord.kernel_compile_seconds) and ``compiles``: C++ compiles); nan
    figures on failure. ``extra_env`` is added to the probe's environment. With ``AUTOFUSE_TIMING_LOCK`` the probe
    runs inside a quiet window of that lock (bench/timing.py)."""
    cmd = [sys.executable, "-m", "autofuse.demo", "--probe", backend_name, "--models", name, "--layers",
           str(args.layers), "--batch", str(args.batch), "--seq", str(args.seq)]
    env = dict(os.environ)
    env["AUTOFUSE_CACHE_DIR"] = os.path.join(cache_dir, "autofuse")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache_dir, "inductor")
    env.update(extra_env or {})
    # with AUTOFUSE_TIMING_LOCK, inside a quiet window: others' builds would slow the compilers unevenly
    with quiet_window(log=lambda s: None):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for line in r.stdout.splitlines():
        if line.startswith("PROBE "):
            return {k: float(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
    print(f"  compile-time probe ({backend_name}) failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    return {"first": float("nan"), "backend": float("nan"), "cxx": float("nan"), "compiles": float("nan"),
            "failed": float(r.returncode or 1)}


def probe(backend_name: str, name: str, args) -> None:
    """The body of a compile-time probe process: build the model, compile it, print
    ``PROBE first=<s> backend=<s> cxx=<s> compiles=<n> ...`` (see _probe)."""
    logging.getLogger("torch").setLevel(logging.ERROR)
    model, cfg, _ = _build(_models(args.layers)[name])
    ids = _input_ids(cfg, args)
    with torch.no_grad():
        # torch.compile() is timed too: under caching precompile it is where a stored package is loaded
        t, c = time.perf_counter(), time.process_time()
        compiled = torch.compile(model, backend=backend_name)
        out = _logits(compiled, ids)
        first, first_cpu = time.perf_counter() - t, time.process_time() - c
        err = _rel(out, _logits(model, ids))  # a warm start must give eager's logits too
    from torch._dynamo.utils import counters

    from . import warm_start

    if torch._dynamo.config.caching_precompile and not warm_start.enabled():
        torch.compiler.save_cache_artifacts()  # torch's own store writes its packages only when asked (not timed)
    ours = sum(r.compile_seconds for r in backend.RECORDS)
    cxx = sum(r.kernel_compile_seconds for r in backend.RECORDS)  # of ours: kernel codegen + C++ compiles + loading
    compiles = _cache_compiles() if backend_name == "autofuse" else 0
    split = " ".join(f"{k}={v:.6f}" for k, v in first_call_split().items())
    print(f"PROBE first={first:.6f} first_cpu={first_cpu:.6f} backend={ours:.6f} cxx={cxx:.6f} "
          f"compiles={compiles or 0} "
          f"pkg_hit={counters['dynamo_cache'].get('dynamo_cache_hit', 0)} err={err:.3e} {split}", flush=True)


#: Dynamo's timed phases (torch._dynamo.utils.compile_times) that split a first call, by the name printed for it:
#: trace = Dynamo's bytecode tracing; backend_call = the backend call (AOTAutograd + compiler, or the AOTAutograd cache
#: hit); aot = AOTAutograd's tracing (absent on an AOTAutograd cache hit); aot_load = loading a cached entry
#: (Inductor: importing the compiled module, PyCodeCache.load_by_key_path); guards = building Dynamo's guards.
SPLIT_PHASES = {"trace": "bytecode_tracing", "backend_call": "OutputGraph.call_user_compiler",
                "aot": "create_aot_dispatcher_function", "aot_load": "AOTAutogradCache.inductor_load",
                "import": "PyCodeCache.load_by_key_path", "guards": "build_guards",
                "dynamo_total": "_compile.compile_inner"}


def first_call_split() -> Dict[str, float]:
    """Seconds per phase of this process's compiles so far (summed over graphs), from Dynamo's own timers; a phase
    that did not run is 0."""
    from torch._dynamo.utils import compile_times

    heads, values = compile_times(repr="csv", aggregate=True)
    got = {h: float(v) for h, v in zip(heads, values)}
    return {name: got.get(phase, 0.0) for name, phase in SPLIT_PHASES.items()}


def _logits(model, ids):
    return model(input_ids=ids).logits


def run_model(name: str, spec, args) -> Dict[str, object]:
    model, cfg, note = _build(spec)
    ids = _input_ids(cfg, args)
    res: Dict[str, object] = {"model": name, "note": note}
    print(f"\n=== {name}: {note}; input {args.batch}x{args.seq} tokens")

    # compile time: new processes, cold (empty caches) then warm (the same caches, populated), for both compilers
    cache = tempfile.mkdtemp(prefix=f"autofuse-demo-{name}-")
    # Autofuse with its warm start (AUTOFUSE_WARM_START=1: Dynamo's packages stored too, warm_start.py), the
    # configuration the acceptance line reads, and its warm start with Dynamo's defaults for comparison
    for be in (["autofuse", "inductor"] if args.inductor else ["autofuse"]):
        env = WARM_START_ENV if be == "autofuse" else {}
        res[f"{be}_cold"] = _probe(be, name, args, cache, env)
        res[f"{be}_warm"] = _probe(be, name, args, cache, env)
        if be == "autofuse":
            res["autofuse_warm_default"] = _probe(be, name, args, cache)
            # the cold compile a user gets by default (the warm start is opt-in: it stores Dynamo's package during
            # the first call, ~0.3 s more), in caches of its own
            fresh = tempfile.mkdtemp(prefix=f"autofuse-demo-{name}-default-")
            res["autofuse_cold_default"] = _probe(be, name, args, fresh)
            shutil.rmtree(fresh, ignore_errors=True)
    # this process uses the same (now populated) caches for the rest of the model's runs
    saved = {k: os.environ.get(k) for k in ("AUTOFUSE_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")}
    os.environ["AUTOFUSE_CACHE_DIR"] = os.path.join(cache, "autofuse")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")

    # fp32 inference (this process: kernels come from its cache directory, compiled by the first model's probe or
    # here)
    with torch.no_grad():
        ref = _logits(model, ids)
        _fresh_autofuse()
        start, launches = len(backend.RECORDS), kernel_launches()
        compiled = torch.compile(model, backend="autofuse")
        out = _logits(compiled, ids)
        recs = backend.RECORDS[start:]
        res["kernels"] = sum(len(r.kernels) for r in recs)
        res["steps"] = {k: sum(1 for r in recs for st in r.steps if st.kind == k) for k in ("kernel", "host", "extern")}
        res["modes"] = sorted({r.mode for r in recs})
        res["fallback_ops"] = sorted({op for r in recs for op, _ in r.fallbacks})
        res["graphs"] = len(recs)
        res["fp32_rel"] = _rel(out, ref)
        fns = {"eager": lambda: _logits(model, ids), "autofuse": lambda: _logits(compiled, ids)}
        if args.inductor:
            ind = torch.compile(copy.deepcopy(model), backend="inductor")
            fns["inductor"] = lambda: _logits(ind, ids)
        n0 = kernel_launches()
        t = _time(fns, args.reps)
        res["launches_per_call"] = (kernel_launches() - n0) / (args.reps + 2)
        for k, v in t.items():
            res[f"t_{k}"] = v
        fns.clear()
    print(f"  graphs {res['graphs']} ({'/'.join(res['modes'])}), kernels {res['kernels']}, "
          f"{res['launches_per_call']:.0f} kernel launches per call; program steps: {res['steps']['kernel']} kernels, "
          f"{res['steps']['host']} host (views), {res['steps']['extern']} ATen calls")
    print(f"  fallbacks (ATen ops): {', '.join(res['fallback_ops']) or 'none'}")
    ok32 = res["fp32_rel"] <= FP32_TOL
    print(f"  fp32 logits: max rel error vs eager {res['fp32_rel']:.2e}  [{'OK' if ok32 else 'FAIL'} <= {FP32_TOL:g}]")
    ind_t = f"{res['t_inductor'] * 1e3:.2f} ms" if "t_inductor" in res else "skipped"
    print(f"  time per call (median of {args.reps} interleaved rounds; min): eager {res['t_eager'] * 1e3:.2f} ms | "
          f"inductor {ind_t} | autofuse {res['t_autofuse'] * 1e3:.2f} ms; minima "
          + " / ".join(f"{k} {v * 1e3:.2f}" for k, v in _time.minima.items()))
    ac, aw, ad = res["autofuse_cold"], res["autofuse_warm"], res["autofuse_warm_default"]
    ind_c = (f"inductor cold {res['inductor_cold']['first']:.2f} s / warm {res['inductor_warm']['first']:.2f} s | "
             if args.inductor else "")
    print(f"  compile (torch.compile + first call in a new process; cold: empty caches, warm: caches populated): "
          f"{ind_c}autofuse cold {res['autofuse_cold_default']['first']:.2f} s (defaults); autofuse "
          f"(AUTOFUSE_WARM_START=1) cold {ac['first']:.2f} s / warm {aw['first']:.2f} s "
          f"({aw.get('pkg_hit', 0):.0f} Dynamo packages loaded); autofuse warm with Dynamo's defaults "
          f"{ad['first']:.2f} s")
    acd = res["autofuse_cold_default"]
    print(f"    autofuse's own part (lowering, fusion, {ac['compiles']:.0f} C++ compiles): cold {ac['backend']:.2f} s,"
          f" warm {aw['backend']:.2f} s; the rest is Dynamo + AOTAutograd (shared with Inductor); cold with the "
          f"defaults: {acd['first']:.2f} s = Dynamo trace {acd.get('trace', float('nan')):.2f} + AOTAutograd and "
          f"backend {acd.get('backend_call', float('nan')):.2f} (of which ours {acd['backend']:.2f}, kernel codegen + "
          f"C++ compiles {acd.get('cxx', float('nan')):.2f}) + guards {acd.get('guards', float('nan')):.2f} + the rest")

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
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    shutil.rmtree(cache, ignore_errors=True)
    return res


def sweep(spec, args) -> Dict[str, object]:
    """16 sequence lengths with dynamic shapes: count C++ compiles after the first length (returned as
    ``compiles_after_first``, None when the runtime's counters are unavailable) and the worst error (``rel``)."""
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
    return {"compiles_after_first": None if end is None else end - after_first, "rel": worst}


def _load() -> str:
    """The 1-minute load average, as text ("n/a" where the OS has none)."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def summary(results: List[Dict[str, object]], sw: Dict[str, object] | None, inductor: bool) -> bool:
    """Print one PASS/FAIL line per acceptance criterion of issue 6 and per model; returns whether the correctness
    criteria (fp32, bf16, gradients, the sweep's compile count) all pass. The speed and compile-time criteria are
    benchmarks: printed with their verdict, not part of the exit status (they depend on the machine's load)."""
    print("\n=== acceptance (issue 6)")
    ok = True
    for r in results:
        m = r["model"]
        lines = [
            (True, f"{m} fp32 logits within {FP32_TOL:g} relative of eager ({r['fp32_rel']:.2e})",
             r["fp32_rel"] <= FP32_TOL),
            (True, f"{m} bf16 logits within {BF16_FACTOR:g}x eager bf16's error vs fp64 ({r['bf16_af_err']:.2e} vs "
                   f"{r['bf16_eager_err']:.2e})", r["bf16_af_err"] <= BF16_FACTOR * r["bf16_eager_err"]),
            (True, f"{m} training-step gradients within {FP32_TOL:g} of eager ({r['grad_rel']:.2e})",
             r["grad_rel"] <= FP32_TOL),
        ]
        if inductor:
            ac, ic = r["autofuse_cold_default"]["first"], r["inductor_cold"]["first"]  # both with their defaults
            aw, iw, ad = r["autofuse_warm"]["first"], r["inductor_warm"]["first"], r["autofuse_warm_default"]["first"]
            lines += [
                (False, f"{m} cold compile <= 1/5 of Inductor's ({ac:.2f} s vs {ic:.2f} s: {ac / ic:.2f}x; "
                        f"with the warm start on {r['autofuse_cold']['first'] / ic:.2f}x)", ac <= ic / 5),
                (False, f"{m} warm start <= 1/3 of Inductor's (Autofuse with AUTOFUSE_WARM_START=1 {aw:.2f} s vs "
                        f"Inductor's default warm start {iw:.2f} s: {aw / iw:.2f}x; both with Dynamo's defaults: "
                        f"{ad / iw:.2f}x; one probe each)", aw <= iw / 3),
                (False, f"{m} inference no slower than Inductor ({r['t_autofuse'] * 1e3:.2f} ms vs "
                        f"{r['t_inductor'] * 1e3:.2f} ms)", r["t_autofuse"] <= r["t_inductor"]),
            ]
        # a probe that crashed is a failure of the compiler, not a slow timing (review, session 28: the warm start's
        # crash on transformers 5.25's LLaMA showed up as "nan s" under a benchmark FAIL and the demo passed)
        crashed = sorted(k for k, v in r.items() if isinstance(v, dict) and v.get("failed"))
        lines.append((True, f"{m} compile-time probes ran without an error"
                            f"{' (failed: ' + ', '.join(crashed) + ')' if crashed else ''}", not crashed))
        # each probe compares its logits with eager's: a warm start that ran a stale package would show here
        errs = {k: v["err"] for k, v in r.items() if isinstance(v, dict) and "err" in v and not v.get("failed")}
        wrong = sorted(k for k, e in errs.items() if not e <= FP32_TOL)
        worst = max(errs.values(), default=0.0)
        lines.append((True, f"{m} compile-time probes' logits within {FP32_TOL:g} relative of eager ({worst:.2e}"
                            f"{'; wrong: ' + ', '.join(wrong) if wrong else ''})", not wrong))
        for gating, text, good in lines:
            print(f"  {_verdict(good)}  {text}{'' if gating else '  [benchmark]'}")
            ok = ok and (good or not gating)
    if sw is not None:
        c = sw["compiles_after_first"]
        good = c == 0
        print(f"  {_verdict(good)}  sweep over 16 sequence lengths: no C++ compile after the first length ({c})")
        ok = ok and good
    return ok


def measure_overhead(reps: int = 2000) -> None:
    """Per-call cost of the machinery around a kernel, on a one-kernel graph of 1-element tensors (x * 2 + 1)."""
    x = torch.randn(1)
    _fresh_autofuse()
    start = len(backend.RECORDS)
    compiled = torch.compile(lambda t: t * 2 + 1, backend="autofuse")
    compiled(x)
    rec = backend.RECORDS[start]
    fns = {"eager": lambda: x * 2 + 1, "total": lambda: compiled(x), "prog": lambda: rec.program([x])}
    ks = rec.kernels
    if ks and ks[0].kernel is not None:
        out = torch.empty(1)
        fns["kernel"] = lambda: ks[0].run([x], [out])
    t = _time(fns, reps)
    eager, total, prog, kernel = t["eager"], t["total"], t["prog"], t.get("kernel")
    kt = f", of which the kernel call {kernel * 1e6:.1f} us" if kernel is not None else ""
    print(f"\n=== per-call overhead (x*2+1 on 1 element): eager {eager * 1e6:.1f} us; torch.compile(autofuse) "
          f"{total * 1e6:.1f} us = Dynamo/AOT wrappers {(total - prog) * 1e6:.1f} us + autofuse program "
          f"{prog * 1e6:.1f} us{kt}")


def main(argv: List[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autofuse.demo", description=__doc__.split("\n")[0])
    p.add_argument("--models", default="gpt2,bert,llama")
    p.add_argument("--layers", type=positive_int, default=2, help="transformer layers per model (published: 12 / 12 / 32)")
    p.add_argument("--batch", type=positive_int, default=1)
    p.add_argument("--seq", type=positive_int, default=32)
    p.add_argument("--reps", type=positive_int, default=20, help="timed rounds (interleaved) per model")
    p.add_argument("--no-inductor", dest="inductor", action="store_false", help="skip the Inductor comparison")
    p.add_argument("--no-sweep", dest="sweep", action="store_false")
    p.add_argument("--probe", choices=["autofuse", "inductor"], help=argparse.SUPPRESS)  # compile-time probe child
    args = p.parse_args(argv)
    if args.probe:
        probe(args.probe, args.models, args)
        return 0
    logging.getLogger("torch").setLevel(logging.ERROR)
    # This process starts from empty kernel caches (ours and Inductor's); each model's compile-time probes and runs
    # use a fresh directory of their own (run_model).
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
    load0 = _load()
    print(f"Autofuse demo: torch {torch.__version__}, {torch.get_num_threads()} threads; path: {path}; load average "
          f"{load0} on {os.cpu_count()} cores (timings are noisy when it exceeds the cores)")
    print(f"Reduced to fit ~10 minutes on 2 cores: {args.layers} layers per model, {args.batch}x{args.seq} tokens, "
          f"{args.reps} timed calls; the LLaMA-style model has small widths (256 hidden, 2000-token vocabulary)")
    specs = _models(args.layers)
    results = [run_model(m, specs[m], args) for m in args.models.split(",")]
    sw = sweep(specs["llama"], args) if args.sweep else None
    measure_overhead()
    shutil.rmtree(cache_root, ignore_errors=True)
    ok = summary(results, sw, args.inductor)
    print(f"\ndemo {'PASSED' if ok else 'FAILED'} (correctness criteria) in {time.perf_counter() - t0:.0f} s; load "
          f"average {_load()} (start: {load0})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
