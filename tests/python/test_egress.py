"""Egress accounting (src/storage/mirror_store.h): bytes counted per source under its label,
and a budget that stops a source within a shard of its limit - the next mirror takes over, and
with none left the read fails saying so, rather than spend more."""

import json
import shutil

import pytest

import ferry
from conftest import run_ferry, write_samples

SAMPLES = 600


def _blob(i):
    return bytes([i % 251]) * (1000 + i % 300)


def _source_bytes(label):
    return ferry.metrics().get(f"/ferry/source/{label}/bytes_read", 0)


@pytest.fixture
def two_copies(tmp_path):
    a = tmp_path / "a"
    names = write_samples(a, SAMPLES, _blob, 1 << 16)
    shutil.copytree(a, tmp_path / "b")
    shards = [a / n for n in names if n.startswith("shard.")]
    assert len(shards) >= 8
    return a, tmp_path / "b", max(p.stat().st_size for p in shards), sum(
        p.stat().st_size for p in shards)


def test_a_budget_stops_a_source_within_a_shard_and_the_next_takes_over(tmp_path, two_copies):
    a, b, largest, total = two_copies
    budget = 3 * largest
    before = {label: _source_bytes(label) for label in ("paid", "free")}
    dataset = ferry.StreamingDataset(
        remote=[str(a), str(b)], local=str(tmp_path / "cache"), batch_size=8,
        egress={str(a): {"label": "paid", "usd_per_gb": 0.09, "budget": budget},
                str(b): {"label": "free"}})
    assert dataset.streams[0].egress[str(a)]["budget"] == budget
    seen = []
    for sample in dataset:
        assert sample["blob"] == _blob(sample["id"]), sample["id"]
        seen.append(sample["id"])
    assert sorted(seen) == list(range(SAMPLES))
    paid = _source_bytes("paid") - before["paid"]
    free = _source_bytes("free") - before["free"]
    assert budget <= paid <= budget + largest, (paid, budget, largest)
    # Every shard came once, from one source or the other (and the first batch by range).
    assert paid + free >= total


def test_an_epoch_budget_starts_again_each_epoch(tmp_path, two_copies):
    # A cache that holds 4 shards of the 10 or so: each epoch downloads most of them again.
    a, b, largest, total = two_copies
    per_epoch = 3 * largest
    dataset = ferry.StreamingDataset(
        remote=[str(a), str(b)], local=str(tmp_path / "cache"), batch_size=8, shuffle=False,
        cache_limit=5 * largest,
        egress={str(a): {"label": "epochly", "epoch_budget": per_epoch},
                str(b): {"label": "rest"}})
    for epoch in range(2):
        before = _source_bytes("epochly")
        seen = [sample["id"] for sample in dataset]
        assert sorted(seen) == list(range(SAMPLES)), epoch
        paid = _source_bytes("epochly") - before
        # Without the new epoch's budget, the second would get nothing from this source.
        assert per_epoch <= paid <= per_epoch + largest, (epoch, paid, per_epoch, largest)


def test_ferry_stream_reports_each_source_and_keeps_its_epoch_budget(tmp_path, two_copies):
    a, b, largest, total = two_copies
    per_epoch = 3 * largest
    done = run_ferry("stream", str(a), "--mirror", str(b), "--local", str(tmp_path / "cache"),
                     "--epochs", "2", "--cache-limit", str(5 * largest), "--json",
                     "--egress", f"{a}=paid,0.09,,{per_epoch}", "--egress", f"{b}=rest")
    epochs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(epochs) == 2, done.stdout
    for report in epochs:
        paid, rest = report["sources"]["paid"], report["sources"]["rest"]
        assert per_epoch <= paid["bytes"] <= per_epoch + largest, report
        assert paid["usd"] == pytest.approx(paid["bytes"] / 1e9 * 0.09), report
        assert rest["usd"] == 0, report
        assert report["remote_errors"] == 0, "a budget's pass-on is not a store error"
    assert epochs[0]["sources"]["paid"]["bytes"] + epochs[0]["sources"]["rest"]["bytes"] >= total
    bad = run_ferry("stream", str(a), "--local", str(tmp_path / "c2"),
                    "--egress", f"{a}=x,1,2,3,4", check=False)
    assert bad.returncode == 2 and "too many fields" in bad.stderr, bad.stderr


def test_a_budget_with_no_other_source_is_a_clear_error(tmp_path, two_copies):
    a, _, largest, _ = two_copies
    dataset = ferry.StreamingDataset(
        remote=str(a), local=str(tmp_path / "cache"), batch_size=8,
        egress={str(a): {"label": "capped", "budget": 2 * largest}})
    with pytest.raises(ferry.errors.ResourceExhaustedError, match="egress budget"):
        for _ in dataset:
            pass
    assert _source_bytes("capped") <= 3 * largest


def test_egress_must_name_a_source_of_the_stream(tmp_path, two_copies):
    a, b, _, _ = two_copies
    with pytest.raises(ferry.errors.InvalidArgumentError, match="not the stream's remote"):
        ferry.Stream(remote=str(a), local=str(tmp_path / "c"), egress={str(b): {"budget": 1}})
    with pytest.raises(ferry.errors.InvalidArgumentError, match="unknown keys"):
        ferry.Stream(remote=str(a), local=str(tmp_path / "c"), egress={str(a): {"budgte": 1}})
