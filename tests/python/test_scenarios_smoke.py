"""A smoke run of the cross-cloud scenario runner (bench/scenarios/run.py) on a tiny dataset:
it must produce results.json with every method at every RTT, the markdown table and the plots.
Nothing here is about speed."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_smoke_grid_produces_results_and_plots(tmp_path):
    if "FERRY_TEST_S3RVER_ENDPOINT" not in os.environ:
        pytest.skip("needs the loopback servers (scripts/run-tests.sh starts them)")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "scenarios" / "run.py"),
                           "--grid", "smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    rows = results["results"]
    methods = {(r["method"], r["rtt_ms"], r["epoch"]) for r in rows}
    for rtt in (0, 40):
        for method, epochs in (("naive-boto3-w2", (1,)), ("ferry-stream", (1, 2)),
                               ("ferry-torch", (1, 2)), ("ferry-decode", (1, 2)),
                               ("ferry-files", (1, 2))):
            for epoch in epochs:
                assert (method, rtt, epoch) in methods, (method, rtt, epoch)
    for r in rows:
        assert r["samples"] > 0 and r["samples_per_s"] > 0 and r["peak_rss_mb"] > 0, r
        assert r["ceiling_mb_per_s"] > 0
    # Every sample of the dataset in each ferry epoch (plus the padding to whole world batches).
    assert all(r["samples"] >= results["images"] for r in rows
               if r["method"] != "naive-boto3-w2")
    # FileDataset: epoch 2 from its cache, without a remote request.
    assert all(r["remote_requests"] == 0 for r in rows
               if r["method"] == "ferry-files" and r["epoch"] == 2)
    assert (out / "results.md").read_text().count("\n") == len(rows) + 2
    for png in ("throughput_vs_rtt.png", "timeline.png"):
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000, png
    assert results["timeline"] and results["timeline"]["samples"], "the timeline was sampled"
