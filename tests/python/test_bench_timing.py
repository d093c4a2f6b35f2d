"""The inference bench's timing helpers (python/autofuse/bench/timing.py, infer.py): round-robin order, the timing
lock's protocol (shared while building, exclusive with a marker file while timing), size parsing. No timing
assertions."""
import fcntl
import os

import pytest

pytest.importorskip("torch")

from autofuse.bench import infer, timing  # noqa: E402


def test_time_interleaved_rotates_order_and_counts_samples():
    calls = []
    fns = {k: (lambda k=k: calls.append(k)) for k in "abc"}
    ts = timing.time_interleaved(fns, rounds=4, warmup=1)
    assert {k: len(v) for k, v in ts.items()} == {"a": 4, "b": 4, "c": 4}
    assert all(t >= 0 for v in ts.values() for t in v)
    # one warm-up call each, then rounds rotated by one each round
    assert calls == list("abc") + list("abc") + list("bca") + list("cab") + list("abc")
    assert timing.medians({"a": [3.0, 1.0, 2.0]}) == {"a": 2.0}


def test_time_interleaved_repeat_times_the_last_of_each_block(monkeypatch):
    calls, clock = [], [0.0]

    def make(k, cost):
        def f():
            calls.append(k)
            clock[0] += cost if calls.count(k) % 2 == 0 else 100 * cost  # odd calls (the untimed ones) are slow
        return f

    fns = {"a": make("a", 1.0), "b": make("b", 2.0)}
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    ts = timing.time_interleaved(fns, rounds=2, warmup=0, repeat=2)
    assert calls == list("aabbbbaa")  # two calls in a row per contender, the order rotating per round
    assert ts == {"a": [1.0, 1.0], "b": [2.0, 2.0]}  # only the second call of each block is timed


def _can_lock(path, mode):
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_quiet_window_holds_the_lock_exclusively_with_a_marker(tmp_path, monkeypatch):
    lock = str(tmp_path / "t-quiet.lock")
    want = str(tmp_path / "t-quiet.want")
    monkeypatch.setenv("AUTOFUSE_TIMING_LOCK", lock)
    lines = []
    with timing.quiet_window(log=lines.append):
        assert os.path.exists(want)
        assert not _can_lock(lock, fcntl.LOCK_SH)  # a build (shared holder) must wait
    assert not os.path.exists(want)
    assert _can_lock(lock, fcntl.LOCK_EX)
    assert lines[0].startswith("[quiet] start") and "load" in lines[0] and lines[1].startswith("[quiet] end")


def test_build_phase_holds_the_lock_shared(tmp_path, monkeypatch):
    lock = str(tmp_path / "b.lock")
    monkeypatch.setenv("AUTOFUSE_TIMING_LOCK", lock)
    with timing.build_phase():
        assert _can_lock(lock, fcntl.LOCK_SH)  # other builds run alongside
        assert not _can_lock(lock, fcntl.LOCK_EX)  # a quiet window waits
    assert _can_lock(lock, fcntl.LOCK_EX)


def test_without_the_variable_nothing_is_locked_or_created(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOFUSE_TIMING_LOCK", raising=False)
    monkeypatch.chdir(tmp_path)
    lines = []
    with timing.build_phase(), timing.quiet_window(log=lines.append):
        pass
    assert os.listdir(tmp_path) == []
    assert "(no lock)" in lines[0]


def test_parse_size():
    assert infer.parse_size("4x128") == (4, 128)
    assert infer.parse_size("1X32") == (1, 32)
    for bad in ("4", "4x", "ax3", "0x8", "2x-1"):
        with pytest.raises(ValueError, match="size"):
            infer.parse_size(bad)


def test_row_formats_every_contender():
    r = {"model": "m", "dtype": "fp32", "batch": 1, "tokens": 8, "af_over_inductor": 0.5, "af_over_eager": 0.25}
    for i, k in enumerate(infer.CONTENDERS):
        r[f"{k}_median_ms"], r[f"{k}_min_ms"] = 1.0 + i, 0.5 + i
    line = infer.row(r)
    assert line.count("|") == infer.HEADER.splitlines()[0].count("|")
    assert "3.00 (2.50)" in line and "| 0.50 | 0.25 |" in line


@pytest.mark.parametrize("args", [["--models", "foo"], ["--dtypes", "fp8"], ["--sizes", "0x32"], ["--sizes", "abc"],
                                  ["--threads", "0"], ["--rounds", "0"]])
def test_infer_bench_refuses_bad_arguments_with_a_usage_error(args, capsys):
    from autofuse.bench import infer

    with pytest.raises(SystemExit) as e:
        infer.main(args)
    assert e.value.code == 2
    assert args[0] in capsys.readouterr().err


def test_freezing_row_matches_its_header():
    r = {"model": "m", "dtype": "bf16", "batch": 4, "tokens": 128, "inductor_freezing_median_ms": 2.0,
         "inductor_freezing_min_ms": 1.5, "af_over_inductor_freezing": 0.75}
    line = infer.freezing_row(r)
    assert line.count("|") == infer.FREEZING_HEADER.splitlines()[0].count("|")
    assert "| 2.00 (1.50) | 0.75 |" in line


def test_logits_tolerance_depends_on_the_dtype():
    r = {"dtype": "bf16", "autofuse_rel_err": 1.05e-2, "inductor_rel_err": 1.0e-2}
    assert not infer.logits_off(r)  # bf16 rounding alone (BERT 4x128, session 11)
    assert infer.logits_off({**r, "autofuse_rel_err": 0.2})
    assert infer.logits_off({"dtype": "fp32", "autofuse_rel_err": 1e-6, "inductor_rel_err": 5e-3})
    assert not infer.logits_off({"dtype": "fp32", "autofuse_rel_err": 1e-6, "inductor_rel_err": 6e-7})
