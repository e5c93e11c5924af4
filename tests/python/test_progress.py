"""Long CLI commands show progress: off a terminal, one full line per interval (no carriage
returns or terminal codes in a log), nothing with --quiet or --json."""

import os
import re

import ferry
from conftest import run_ferry


def _run(*args, interval=None):
    env = dict(os.environ)
    env.pop("FERRY_PROGRESS_INTERVAL", None)
    if interval is not None:
        env["FERRY_PROGRESS_INTERVAL"] = str(interval)
    return run_ferry(*args, env=env)


def test_cp_prints_a_line_per_interval_in_a_log(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(400):
        (src / f"f{i:03}.txt").write_text(str(i))
    err = _run("cp", "-r", str(src), str(tmp_path / "a"), interval=0.001).stderr
    lines = [line for line in err.splitlines() if line.startswith("cp ")]
    assert len(lines) >= 2, err
    assert all(re.fullmatch(r"cp \d+/400 objects +\d+% .*objects/s.*", line) for line in lines)
    done = [int(re.match(r"cp (\d+)/", line).group(1)) for line in lines]
    assert done == sorted(done) and done[-1] <= 400
    assert "\r" not in err and "\x1b" not in err
    # A command done within the interval (10 s by default) prints no progress; --quiet none.
    assert not re.search(r"^cp \d+/", _run("cp", "-r", str(src), str(tmp_path / "b")).stderr,
                         re.M)
    assert not re.search(r"^cp \d+/", _run("cp", "-r", "-q", str(src), str(tmp_path / "c"),
                                           interval=0.001).stderr, re.M)


def test_stream_shows_each_epochs_progress(tmp_path):
    with ferry.MDSWriter(out=str(tmp_path / "ds"), columns={"i": "int"}) as w:
        for i in range(20000):
            w.write({"i": i})
    err = _run("stream", str(tmp_path / "ds"), "--epochs", "2", interval=0.0001).stderr
    for epoch in (1, 2):
        assert re.search(rf"^epoch {epoch} \d+/20000 samples", err, re.M), err
    for flag in ("--json", "-q"):
        err = _run("stream", str(tmp_path / "ds"), flag, interval=0.0001).stderr
        assert "samples/s" not in err, err


def test_cp_sync_and_verify_say_their_outcome_as_json(tmp_path):
    import json

    src = tmp_path / "src"
    with ferry.MDSWriter(out=str(src), columns={"i": "int"}, size_limit=1 << 10,
                         hashes=["xxh64"]) as w:
        for i in range(500):
            w.write({"i": i})
    files = len(os.listdir(src))
    done = _run("cp", "-r", "--json", str(src), str(tmp_path / "copy"), interval=0.0001)
    cp = json.loads(done.stdout)
    assert cp["objects"] == cp["planned"] == files and cp["failed"] == [] and not cp["stopped"]
    assert "objects/s" not in done.stderr, "no progress with --json"
    sync = json.loads(_run("sync", "--json", str(src), str(tmp_path / "copy")).stdout)
    assert sync["objects"] == 0 and sync["unchanged"] == files
    shard = tmp_path / "copy" / "shard.00002.mds"
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0xFF
    shard.write_bytes(bytes(data))
    bad = run_ferry("verify", "--json", str(tmp_path / "copy"), check=False)
    report = json.loads(bad.stdout)
    assert bad.returncode == 1 and not report["ok"] and report["bad_shards"] == [2]
    assert report["problems"][0]["file"] == "shard.00002.mds"
