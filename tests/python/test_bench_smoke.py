"""Smoke test of the benchmark harness: one size, two repetitions, every pattern; checks the JSON schema, the byte
counts and that a failing compiler is reported per case instead of crashing. No timing assertions."""
import json
import math

import pytest

torch = pytest.importorskip("torch")

from autofuse.bench import harness, patterns, plot, report  # noqa: E402

_OK, _BROKEN = "bench_smoke_fx", "bench_smoke_broken"


def _register_backends():
    from torch._dynamo import list_backends, register_backend

    if _OK not in list_backends(exclude_tags=()):
        @register_backend(name=_OK)
        def _ok(gm, example_inputs):  # runs the captured FX graph as it is: a cheap stand-in compiler
            return gm.forward

        @register_backend(name=_BROKEN)
        def _broken(gm, example_inputs):
            raise RuntimeError("deliberately broken backend")


@pytest.fixture(scope="module")
def doc():
    _register_backends()
    lines = []
    saved = []
    d = harness.run_suite(patterns.PATTERNS, ["float32"], ["small"], backends=["eager", _OK, _BROKEN], reps=2,
                          min_run_s=1e-4, log=lines.append, command="test",
                          checkpoint=lambda doc: saved.append((doc.get("partial"), len(doc["results"]))))
    d["_log"], d["_saved"] = lines, saved
    return d


def test_schema(doc):
    assert doc["schema"] == harness.SCHEMA
    for key in ("date", "command", "machine", "config", "bytes_definition", "timing", "copy_bandwidth_gbs",
                "results", "load_average", "wall_s", "summary"):
        assert key in doc, key
    assert doc["copy_bandwidth_gbs"] > 0 and doc["fresh_copy_bandwidth_gbs"] > 0
    assert "partial" not in doc
    assert len(doc["results"]) == len(patterns.PATTERNS)
    text = json.dumps(doc)  # the document must serialise
    assert json.loads(text)["schema"] == harness.SCHEMA


def test_every_case_timed_and_checked(doc):
    for r in doc["results"]:
        assert {"pattern", "dtype", "size", "rows", "input_shapes", "bytes", "backends"} <= set(r)
        eager, ok = r["backends"]["eager"], r["backends"][_OK]
        for e in (eager, ok):
            assert e["runs"] == 2, (r["pattern"], e)
            assert e["median_s"] > 0 and e["min_s"] <= e["median_s"]
            assert math.isclose(e["gbs"], r["bytes"] / e["median_s"] / 1e9)
            assert e["pct_bw"] > 0
            assert math.isclose(e["pct_fresh_bw"], 100 * e["gbs"] / doc["fresh_copy_bandwidth_gbs"])
        # the FX stand-in computes exactly what eager computes
        assert ok["ok"] is True, (r["pattern"], ok)
        assert ok["max_abs_err"] <= 1e-5 * max(1.0, ok["max_abs_ref"])


def test_broken_backend_reported_not_fatal(doc):
    for r in doc["results"]:
        b = r["backends"][_BROKEN]
        assert "deliberately broken" in b["error"]
        assert "median_s" not in b
    assert len(doc["summary"]["failures"][_BROKEN]) == len(patterns.PATTERNS)
    assert doc["summary"]["failures"]["eager"] == []


def test_bytes_counts_unique_inputs_and_outputs():
    x = torch.ones(10, 4)
    assert harness.bytes_moved((x, x), x.sum(-1)) == 10 * 4 * 4 + 10 * 4
    bt = torch.ones(4, 10).t()
    assert harness.bytes_moved((x, bt), (x, x)) == 160 + 160 + 2 * 160


def test_size_classes_reach_their_targets():
    for p in patterns.PATTERNS:
        rows = harness.rows_for(p, torch.float32, harness.SIZE_TARGETS["medium"])
        ins = p.make_inputs(rows, torch.float32, torch.Generator().manual_seed(0))
        moved = harness.bytes_moved(ins, p.fn(*ins))
        assert moved >= harness.SIZE_TARGETS["medium"] * 0.99, (p.name, rows, moved)
        assert moved <= harness.SIZE_TARGETS["medium"] * 4, (p.name, rows, moved)


def test_compare_flags_wrong_results():
    ref = torch.tensor([1.0, 2.0, float("inf")])
    assert harness.compare(ref.clone(), ref, torch.float32)["ok"]
    assert not harness.compare(ref + 0.1, ref, torch.float32)["ok"]
    assert not harness.compare(torch.tensor([1.0, 2.0, 3.0]), ref, torch.float32)["ok"]
    assert not harness.compare((ref, ref), ref, torch.float32)["ok"]


def test_report_and_plot(doc, tmp_path):
    table = report.text_table(doc)
    assert all(p.name in table for p in patterns.PATTERNS)
    md = report.markdown_block(doc, "x.json", "x.png")
    assert "## Results" in md and "| pattern |" in md and "x.png" in md
    png = plot.plot(doc, str(tmp_path / "b.png"))
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert any(line.startswith("[1/") for line in doc["_log"])


def test_checkpoint_after_every_case(doc):
    assert doc["_saved"] == [(True, i + 1) for i in range(len(patterns.PATTERNS))]
