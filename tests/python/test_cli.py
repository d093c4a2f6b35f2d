"""The `autofuse` command-line tool: print, check, interp, help. Uses build/release/autofuse (or $AUTOFUSE_CLI)."""

import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("AUTOFUSE_CLI", ROOT / "build" / "release" / "autofuse"))
if not CLI.exists():
    pytest.skip(f"the CLI is not built ({CLI} is missing; run `make build`)", allow_module_level=True)

SOFTMAX = ROOT / "tests" / "ir" / "softmax.af"


def run(*args, stdin=None):
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, input=stdin, timeout=60)


def test_help_lists_subcommands():
    r = run("help")
    assert r.returncode == 0
    for name in ("print", "check", "interp", "fuse"):
        assert re.search(rf"^  {name} ", r.stdout, re.M), name
    assert run().returncode == 2
    bad = run("nosuch")
    assert bad.returncode == 2 and "unknown subcommand 'nosuch'" in bad.stderr


def test_print_is_canonical_and_idempotent():
    r = run("print", SOFTMAX)
    assert r.returncode == 0, r.stderr
    again = run("print", "-", stdin=r.stdout)
    assert again.returncode == 0 and again.stdout == r.stdout


def test_check_ok_and_diagnostic(tmp_path):
    r = run("check", SOFTMAX)
    assert r.returncode == 0 and "ok" in r.stdout
    bad = tmp_path / "bad.af"
    bad.write_text("graph f(%x: f32[s0]) {\n  %y = exp(%x) : f64[s0]\n  return %y\n}\n")
    r = run("check", bad)
    assert r.returncode == 1
    assert r.stderr.startswith(f"{bad}:2:")
    assert "expected f32[s0]" in r.stderr
    missing = run("check", tmp_path / "none.af")
    assert missing.returncode == 1 and "cannot read" in missing.stderr


def test_check_refuses_a_graph_without_outputs_like_codegen_and_run(tmp_path):
    """Review, session 28: check and interp accepted `return` without a value, which fuse, codegen and run refuse."""
    empty = tmp_path / "empty.af"
    empty.write_text("graph f(%x: f32[4]) {\n  return\n}\n")
    for cmd in ("check", "interp", "codegen", "run", "fuse"):
        r = run(cmd, empty)
        assert r.returncode == 1, (cmd, r.stdout, r.stderr)
        assert "graph 'f' has no outputs" in r.stderr or "graph f has no outputs" in r.stderr, (cmd, r.stderr)


def test_interp_is_seeded_and_summarizes():
    a = run("interp", SOFTMAX, "--seed", 7, "--shape", "s0=3", "--shape", "s1=5")
    assert a.returncode == 0, a.stderr
    assert a.stdout.splitlines()[0] == "seed 7, s0=3, s1=5"
    m = re.search(r"^%out: f32\[3, 5\]  min=(\S+) max=(\S+) mean=(\S+)  nan=0$", a.stdout, re.M)
    assert m, a.stdout
    lo, hi, mean = map(float, m.groups())
    assert 0 < lo <= mean <= hi < 1 and abs(mean - 1 / 5) < 1e-6  # softmax rows sum to 1
    assert run("interp", SOFTMAX, "--seed", 7, "--shape", "s0=3", "--shape", "s1=5").stdout == a.stdout
    assert run("interp", SOFTMAX, "--seed", 8, "--shape", "s0=3", "--shape", "s1=5").stdout != a.stdout


def test_interp_empty_and_all_nan_outputs(tmp_path):
    """An output with no elements is reported as empty and one whose every element is NaN as all NaN (the summary
    used to say "(no non-NaN elements)" for both, which is false for an empty output)."""
    empty = run("interp", SOFTMAX, "--seed", 1, "--shape", "s0=0", "--shape", "s1=5")
    assert empty.returncode == 0, empty.stderr
    assert re.search(r"^%out: f32\[0, 5\]  empty \(0 elements\)  nan=0$", empty.stdout, re.M), empty.stdout
    f = tmp_path / "nan.af"  # sqrt(-|x|) is NaN for every x != 0 (inputs are normal samples)
    f.write_text("graph g(%x: f32[3, 4]) {\n  %a = abs(%x) : f32[3, 4]\n  %n = neg(%a) : f32[3, 4]\n"
                 "  %out = sqrt(%n) : f32[3, 4]\n  return %out\n}\n")
    nan = run("interp", f, "--seed", 3)
    assert nan.returncode == 0, nan.stderr
    assert re.search(r"^%out: f32\[3, 4\]  \(all 12 elements are NaN\)  nan=12$", nan.stdout, re.M), nan.stdout


def test_interp_usage_errors():
    r = run("interp", SOFTMAX, "--shape", "s9=3")
    assert r.returncode == 2 and "no symbol 's9'" in r.stderr
    r = run("interp", SOFTMAX, "--seed", "x")
    assert r.returncode == 2 and "expected an integer" in r.stderr
    r = run("interp", SOFTMAX, "--bogus")
    assert r.returncode == 2 and "unknown option --bogus" in r.stderr


def test_clear_errors_for_directories_negative_seeds_and_huge_sizes(tmp_path):
    """Found by a new-user test: a directory parsed as empty IR, --seed -5 wrapped to 2^64 - 5, huge sizes printed
    std::bad_alloc."""
    r = run("print", tmp_path)
    assert r.returncode == 1 and "is a directory" in r.stderr
    r = run("interp", SOFTMAX, "--seed", "-5")
    assert r.returncode == 2 and "expected an integer >= 0" in r.stderr
    r = run("interp", SOFTMAX, "--shape", "s0=100000", "--shape", "s1=1000000000")
    assert r.returncode == 1 and "out of memory" in r.stderr and "Traceback" not in r.stderr


def test_one_shape_option_takes_several_sizes():
    """Review 18 (notes): `--shape s0=3 s1=5` was refused ("unexpected argument 's1=5'") although the usage line reads
    `[--shape SYM=N ...]`. One --shape takes several SYM=N now, the same as repeating it; the list ends at the first
    argument that is not NAME=VALUE (a FILE, another option)."""
    repeated = run("interp", SOFTMAX, "--seed", 7, "--shape", "s0=3", "--shape", "s1=5")
    assert repeated.returncode == 0, repeated.stderr
    for args in (("--shape", "s0=3", "s1=5", "--seed", 7), ("--seed", 7, "--shape=s0=3", "s1=5")):
        listed = run("interp", SOFTMAX, *args)
        assert listed.returncode == 0 and listed.stdout == repeated.stdout, (args, listed.stderr)
    before_file = run("interp", "--shape", "s0=3", "s1=5", SOFTMAX, "--seed", 7)
    assert before_file.returncode == 0 and before_file.stdout == repeated.stdout, before_file.stderr
    r = run("run", SOFTMAX, "--shape", "s0=3", "s1=5", "--repeat", 1)
    assert r.returncode == 0 and "MISMATCH" not in r.stdout, r.stdout + r.stderr
    bad = run("interp", SOFTMAX, "--shape", "s0=3", "s1=x")
    assert bad.returncode == 2 and "--shape s1: expected an integer, got 'x'" in bad.stderr, bad.stderr
    other = run("interp", SOFTMAX, "--shape", "s0=3", "other.af")
    assert other.returncode == 2 and "unexpected argument 'other.af'" in other.stderr, other.stderr
    twice = run("interp", SOFTMAX, "--shape", "s0=3", "s0=4")
    assert twice.returncode == 2 and "s0 is given twice" in twice.stderr, twice.stderr


def test_run_accepts_graphs_of_several_kernels():
    """`autofuse run` fuses a graph that is not one kernel and checks every output against the interpreter."""
    r = run("run", ROOT / "tests" / "ir" / "reductions.af", "--shape", "s0=5", "--shape", "s1=7")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not one kernel" in r.stdout and "MISMATCH" not in r.stdout


def test_shape_twice_and_nonpositive_fusion_caps_are_refused():
    """Found by a new-user test: a repeated --shape silently took the last value, --max-nodes 0 / -1 were accepted."""
    for cmd in ("interp", "run"):
        r = run(cmd, SOFTMAX, "--shape", "s0=3", "--shape", "s0=5")
        assert r.returncode != 0 and "s0 is given twice" in r.stderr, (cmd, r.stderr)
        r = run(cmd, SOFTMAX, "--shape", "s0=-1")
        assert r.returncode != 0 and "must be >= 0" in r.stderr, (cmd, r.stderr)
    for bad in ("0", "-1"):
        r = run("fuse", SOFTMAX, "--max-nodes", bad)
        assert r.returncode != 0 and "--max-nodes: expected a count from 1" in r.stderr, r.stderr
    r = run("fuse", SOFTMAX, "--max-nodes", "3")
    assert r.returncode == 0 and "kernels:" in r.stdout


def test_sizes_whose_product_overflows_and_unknown_symbols_are_refused():
    """Found by a new-user test: sizes multiplying past 2^63 made a small wrapped-around buffer and segfaulted; `run`
    ignored a --shape for a symbol the graph does not have."""
    for cmd in ("run", "interp"):
        for a, b in (("s0=4611686018427387904", "s1=4"), ("s0=3037000500", "s1=3037000500")):
            r = run(cmd, SOFTMAX, "--shape", a, "--shape", b)
            assert r.returncode == 1 and "byte count overflows int64" in r.stderr, (cmd, a, r.returncode, r.stderr)
        r = run(cmd, SOFTMAX, "--shape", "N=0")
        assert r.returncode == 2 and "has no symbol 'N'" in r.stderr, (cmd, r.stderr)


def test_symbols_the_input_sizes_do_not_determine_come_from_shape(tmp_path):
    """Review finding (session 8): `check` said ok for an input f32[s0*s0] while `interp` / `run` always failed
    ("size symbol s0 is not determined by the input sizes"). Now both take s0 from --shape (default 8) and `check`
    notes it."""
    f = tmp_path / "square.af"
    f.write_text("graph f(%x: f32[s0*s0]) {\n  %y = exp(%x)\n  return %y\n}\n")
    c = run("check", f)
    assert c.returncode == 0 and "note: size symbol s0 is not determined by the input sizes" in c.stdout, c.stdout
    i = run("interp", f, "--shape", "s0=3")
    assert i.returncode == 0 and "%y: f32[9]" in i.stdout, i.stdout + i.stderr
    for args in (("--shape", "s0=3"), ()):
        r = run("run", f, *args)
        assert r.returncode == 0 and " ok" in r.stdout, r.stdout + r.stderr
    assert "f32[64]" in run("run", f).stdout


def test_fuse_with_an_unwritable_dot_path_fails_before_printing():
    """Review finding (session 8): the whole fused graph was printed, then the --dot error and exit 1."""
    r = run("fuse", SOFTMAX, "--dot", "/nonexistent-dir/x.svg")
    assert r.returncode == 1 and "/nonexistent-dir/x.svg" in r.stderr, r.stderr
    assert r.stdout == "", r.stdout


def test_run_reads_a_kernel_whose_output_names_a_given_symbol(tmp_path):
    """Review 19: the dumped IR of a kernel with a given symbol (cat([x, t.expand(n, -1)]): s1 only in the broadcast
    and the output size) did not parse in `autofuse run` ("s1 is not bound by any graph input's shape"), so its
    repro.sh failed. `run` reads its file as a kernel's IR: s1 comes from --shape (default 8)."""
    f = tmp_path / "k.af"
    f.write_text("graph k0(%x: f32[s0, s2], %t: f32[1, s2]) {\n  %b = broadcast_to(%t) {shape=[s1, s2]}\n"
                 "  %c = concat(%x, %b) {axis=0}\n  return %c\n}\n")
    for args in (("--shape", "s0=5", "--shape", "s1=3", "--shape", "s2=7"), ("--shape", "s1=0"), ()):
        r = run("run", f, *args)
        assert r.returncode == 0 and " ok" in r.stdout, (args, r.stdout + r.stderr)
    assert "f32[8, 7]" in run("run", f, "--shape", "s0=5", "--shape", "s1=3", "--shape", "s2=7").stdout


def test_shape_reaches_graphs_of_several_kernels(tmp_path):
    """Review 29: `run` gave --shape's values to one-kernel graphs only. A graph of several steps whose input is
    f32[s0*s1, 4] failed with "size symbol s0 is not determined by the input sizes", and one with s1 only in a slice
    bound with "s1 is not bound by any graph input's shape", while `interp` ran both."""
    reshape = tmp_path / "reshape.af"
    reshape.write_text("graph f(%x: f32[s0*s1, 4]) {\n  %y = reshape(%x) {shape=[s0, s1, 4]}\n"
                       "  %s = sum(%y) {axes=[1], keepdim=false}\n  return %s\n}\n")
    sliced = tmp_path / "slice.af"
    sliced.write_text("graph f(%x: f32[s0, 4]) {\n  %y = slice(%x) {axis=0, start=0, stop=(s0 - s1), step=1}\n"
                      "  %e = exp(%y)\n  return %e\n}\n")
    for f, want in ((reshape, "f32[6, 4]"), (sliced, "f32[4, 4]")):
        r = run("run", f, "--shape", "s0=6", "s1=2")
        assert r.returncode == 0 and "not one kernel" in r.stdout and " ok" in r.stdout, r.stdout + r.stderr
        assert want in r.stdout, r.stdout
    r = run("run", sliced, "--shape", "s0=2", "s1=6")
    assert r.returncode == 1 and "evaluates to -4 < 0" in r.stderr, r.stderr


def test_an_option_given_twice_is_refused():
    """Review 29: `--seed 1 --seed 2` took the last value silently, while a repeated --shape symbol is an error."""
    for args in (("run", SOFTMAX, "--seed", "1", "--seed", "2"), ("interp", SOFTMAX, "--seed=1", "--seed", "1"),
                 ("run", SOFTMAX, "--repeat", "2", "--repeat", "3")):
        r = run(*args)
        assert r.returncode == 2 and "is given twice" in r.stderr, (args, r.returncode, r.stderr)
    assert run("run", SOFTMAX, "--seed", "1", "--repeat", "2").returncode == 0


def test_a_pipelined_kernel_with_four_max_chains_compiles(tmp_path):
    """Review 29: a bf16 softmax whose output feeds three amax (torch: h.softmax(-1).float().logsumexp(-1), fused
    on AVX-512) generated a pipelined row loop rotating four max chains, on which GCC 12 -O2 ran for more than 20
    minutes. Those chains are no longer rotated; the kernel compiles like any other (the time limit would stop it)."""
    f = tmp_path / "four_max.af"
    f.write_text("graph k(%x: bf16[s0, s1]) {\n  %v1 = cast(%x) {dtype=f32}\n  %v2 = amax(%v1) {axes=[1], keepdim=true}\n"
                 "  %v3 = sub(%v1, %v2)\n  %v4 = exp(%v3)\n  %v5 = sum(%v4) {axes=[1], keepdim=true}\n"
                 "  %v6 = div(%v4, %v5)\n  %v7 = cast(%v6) {dtype=bf16}\n  %v8 = cast(%v7) {dtype=f32}\n"
                 "  %v9 = amax(%v8) {axes=[1], keepdim=true}\n  %v15 = amax(%v8) {axes=[1], keepdim=false}\n"
                 "  %v18 = amax(%v8) {axes=[1], keepdim=false}\n  return %v8, %v9, %v15, %v18\n}\n")
    env = dict(os.environ, AUTOFUSE_FORCE_DISABLE_CACHES="1", AUTOFUSE_COMPILE_TIMEOUT="50")
    for shape in (("s0=37", "s1=1000"), ("s0=9", "s1=64")):
        r = subprocess.run([str(CLI), "run", str(f), "--shape", *shape], capture_output=True, text=True, timeout=120,
                           env=env)
        assert r.returncode == 0 and r.stdout.count(" ok") == 4, r.stdout + r.stderr
