"""`ferry cache` on a cache folder a dataset filled: ls and du say what it holds and who reads
it, verify finds a damaged shard, clear leaves what a live reader has pinned."""

import gc
import json
import os

import ferry
from conftest import run_ferry


def _filled(tmp_path):
    remote = tmp_path / "remote"
    with ferry.MDSWriter(out=str(remote), columns={"data": "bytes"}, size_limit=1 << 12,
                         hashes=["xxh64"]) as w:
        for _ in range(100):
            w.write({"data": os.urandom(1000)})
    cache = tmp_path / "cache"
    ds = ferry.StreamingDataset(remote=str(remote), local=str(cache), batch_size=1,
                                cache_limit="10mb")
    assert sum(1 for _ in ds) == 100
    shards = json.loads((remote / "index.json").read_text())["shards"]
    return ds, cache, [s["raw_data"]["basename"] for s in shards]


def test_cache_ls_du_verify_and_clear(tmp_path):
    ds, cache, shards = _filled(tmp_path)
    ls = json.loads(run_ferry("cache", "ls", str(cache), "--json").stdout)
    assert ls["cached_shards"] == ls["shards"] == len(shards)
    assert ls["remote"].rstrip("/").endswith("remote") and ls["limit"] == 10 << 20
    assert [p["pid"] for p in ls["processes"]] == [os.getpid()]
    du = run_ferry("cache", "du", str(cache)).stdout
    assert str(cache) in du and "limit 10.0 MiB" in du

    # A damaged shard: found, and removed when asked (once no reader holds it).
    del ds
    gc.collect()
    victim = cache / shards[3]
    data = bytearray(victim.read_bytes())
    data[200] ^= 0xFF
    victim.write_bytes(bytes(data))
    verify = run_ferry("cache", "verify", str(cache), check=False)
    assert verify.returncode == 1 and shards[3] in verify.stdout and "xxh64" in verify.stdout
    run_ferry("cache", "verify", str(cache), "--remove-bad", check=False)
    assert not victim.exists()
    assert run_ferry("cache", "verify", str(cache)).returncode == 0

    # A reader holding a shard keeps it; the rest go; --all waits for the readers.
    ds = ferry.StreamingDataset(remote=str(tmp_path / "remote"), local=str(cache), batch_size=1,
                                predownload=1)
    it = iter(ds)
    next(it)
    cleared = json.loads(run_ferry("cache", "clear", str(cache), "--json").stdout)
    assert cleared["pinned_shards"] >= 1 and cleared["removed_shards"] >= 1
    refused = run_ferry("cache", "clear", str(cache), "--all", check=False)
    assert refused.returncode != 0 and str(os.getpid()) in refused.stderr
    assert (cache / "index.json").exists()
