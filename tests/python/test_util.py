"""ferry.util: the helpers of Mosaic's streaming.base.util - the values, exception classes and
messages a Mosaic script relies on, and merge_index over local folders and a store."""

import json
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest

import ferry
from ferry import util
from ferry.util import (bytes_to_int, clean_stale_shared_memory, get_list_arg, merge_index,
                        number_abbrev_to_int, retry)


def test_import_is_light_and_both_spellings_work():
    code = ("import sys, ferry.util; from ferry import util; import ferry; "
            "assert util is ferry.util and callable(util.merge_index); "
            "assert 'torch' not in sys.modules, 'ferry.util imported torch'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("text, expected", [
    ("s3://a,gs://b", ["s3://a", "gs://b"]), ("one", ["one"]), ("a,,b", ["a", "", "b"]),
    ("", []), (None, []),
])
def test_get_list_arg(text, expected):
    assert get_list_arg(text) == expected


@pytest.mark.parametrize("value, expected", [
    ("987", 987), ("7b", 7), ("7B", 7), ("3kb", 3 * 1024), ("  3 KB ", 3 * 1024),
    ("12mb", 12 << 20), ("1.25gb", int(1.25 * 2**30)), ("0.3tb", int(0.3 * 2**40)),
    ("5pb", 5 << 50), ("1.7eb", int(1.7 * 2**60)), ("3.3zb", int(3.3 * 2**70)),
    ("4yb", 4 << 80), (2048, 2048), (0.75 * 1024, 768), (99.99, 99), (np.int64(12), 12),
    ("-2kb", -2048),
])
def test_bytes_to_int_reads_binary_units(value, expected):
    result = bytes_to_int(value)
    assert result == expected and type(result) is int


def test_bytes_to_int_multiplies_fractions_as_a_float_like_mosaic():
    # 1.39 * 2**30 as exact decimal arithmetic would give 1492501135.36; Mosaic's float product
    # truncates to ...135, and a dataset's shard layout depends on the exact byte count.
    assert bytes_to_int("1.39gb") == int(1.39 * 1024**3) == 1492501135


@pytest.mark.parametrize("value", ["", "kb", "10kbb", "10 k b", "10k", "3.5", "1.5b", "x1mb"])
def test_bytes_to_int_refuses_anything_else(value):
    with pytest.raises(ValueError, match="Unsupported value/suffix .*Supported suffix are "
                                         r"\['b', 'kb', 'mb'"):
        bytes_to_int(value)


@pytest.mark.parametrize("value, expected", [
    ("1b", 10**9), ("100k", 10**5), ("1.5m", 1_500_000), ("2T", 2 * 10**12), (" 40 K ", 40_000),
    ("1.39b", int(1.39 * 10**9)), ("77", 77), (5, 5), (12.9, 12), (np.int32(3), 3),
])
def test_number_abbrev_to_int_reads_decimal_units(value, expected):
    result = number_abbrev_to_int(value)
    assert result == expected and type(result) is int


@pytest.mark.parametrize("value", ["", "1kb", "2mb", "5bk", "k", "1 k m", "64g", "q 3"])
def test_number_abbrev_to_int_refuses_anything_else(value):
    with pytest.raises(ValueError, match=r"Unsupported value/suffix .*\['k', 'm', 'b', 't'\]"):
        number_abbrev_to_int(value)


def test_clean_stale_shared_memory_is_a_no_op(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert clean_stale_shared_memory() is None
    assert not list(tmp_path.iterdir())


def test_wait_for_file_to_exist(tmp_path):
    target = tmp_path / "flag"
    threading.Timer(0.2, target.write_text, ("x",)).start()
    start = time.monotonic()
    util.wait_for_file_to_exist(str(target), 0.02, 5, "never came: ")
    assert 0.2 <= time.monotonic() - start < 2
    with pytest.raises(RuntimeError, match=r"^never came: 0\.100 < 0\.1"):
        util.wait_for_file_to_exist(str(tmp_path / "other"), 0.02, 0.1, "never came: ")


@pytest.fixture
def sleeps(monkeypatch):
    """The seconds each time.sleep in ferry.util was asked for (none is slept)."""
    asked = []
    monkeypatch.setattr(util.time, "sleep", asked.append)
    return asked


def test_retry_with_arguments_backs_off_and_cleans_up(sleeps, monkeypatch):
    monkeypatch.setattr(util.random, "random", lambda: 0.5)
    calls, cleanups = [], []

    @retry(ConnectionError, clean_up_fn=lambda: cleanups.append(1), num_attempts=4,
           initial_backoff=0.1, max_jitter=0.2)
    def flaky(x):
        calls.append(x)
        if len(calls) < 4:
            raise ConnectionError(f"try {len(calls)}")
        return x * 2

    assert flaky(21) == 42
    assert calls == [21] * 4 and len(cleanups) == 3
    assert sleeps == pytest.approx([0.1 + 0.1, 0.2 + 0.1, 0.4 + 0.1])
    assert flaky.__name__ == "flaky"


def test_retry_raises_the_last_failure_after_num_attempts(sleeps):
    calls = []

    @retry(ValueError, num_attempts=3, initial_backoff=0)
    def always():
        calls.append(1)
        raise ValueError(f"failure {len(calls)}")

    with pytest.raises(ValueError, match="failure 3"):
        always()
    assert len(calls) == 3 and len(sleeps) == 2


def test_retry_leaves_other_exceptions_alone(sleeps):
    calls = []

    @retry(ConnectionError, num_attempts=5)
    def wrong():
        calls.append(1)
        raise KeyError("not retried")

    with pytest.raises(KeyError):
        wrong()
    assert len(calls) == 1 and not sleeps


def test_retry_takes_a_list_of_exception_classes(sleeps):
    errors = [TimeoutError("a"), KeyError("b")]

    @retry([TimeoutError, KeyError], initial_backoff=0)
    def flaky():
        if errors:
            raise errors.pop(0)
        return "done"

    assert flaky() == "done" and len(sleeps) == 2


def test_retry_without_parentheses_retries_any_exception(sleeps):
    calls = []

    @retry
    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("soon")
        return len(calls)

    assert flaky() == 3
    assert len(sleeps) == 2 and 1.0 <= sleeps[0] <= 1.5 and 2.0 <= sleeps[1] <= 2.5


def test_retry_needs_at_least_one_attempt():
    with pytest.raises(ValueError, match="num_attempts must be at-least 1"):
        retry(num_attempts=0)


# --- merge_index ------------------------------------------------------------------------------

def _part(out, first, count, keep_local=False):
    """A partition of `count` samples, ids first..first+count-1, in several shards."""
    with ferry.MDSWriter(out=out, columns={"id": "int"}, size_limit=120,
                         keep_local=keep_local) as writer:
        for i in range(first, first + count):
            writer.write({"id": i})


def _ids(local):
    ds = ferry.StreamingDataset(local=str(local), shuffle=False, batch_size=1)
    return [int(ds[i]["id"]) for i in range(len(ds))]


def _s3(s3rver, name):
    """A fresh prefix in the test bucket (runs of the suite share the server)."""
    return f"s3://{s3rver['bucket']}/python/util-{name}-{uuid.uuid4().hex[:12]}"


def _index(folder):
    return json.loads((folder / "index.json").read_text())


def test_merge_index_from_a_root_merges_every_part_in_path_order(tmp_path):
    root = tmp_path / "root"
    _part(str(root / "p1"), 10, 7)
    _part(str(root / "p0"), 0, 5)
    _part(str(root / "deep" / "p2"), 100, 3)
    (root / "notes.json").write_text("{}")  # not an index: Mosaic's local form would take it
    assert merge_index(str(root)) is None
    basenames = [s["raw_data"]["basename"] for s in _index(root)["shards"]]
    assert basenames[0] == "p2/shard.00000.mds", "deep/p2 sorts first; the prefix is its folder"
    assert {b.split("/")[0] for b in basenames} == {"p0", "p1", "p2"}
    assert _index(root)["version"] == 2


def test_merge_index_from_a_list_keeps_its_order_and_drops_duplicates(tmp_path):
    _part(str(tmp_path / "a"), 0, 4)
    _part(str(tmp_path / "b"), 4, 4)
    out = tmp_path / "merged"
    merge_index([str(tmp_path / "b" / "index.json"), f"{tmp_path / 'a' / 'index.json'}/ ",
                 str(tmp_path / "b" / "index.json")], str(out), keep_local=False)
    shards = _index(out)["shards"]
    assert [s["raw_data"]["basename"].split("/")[0] for s in shards][0] == "b"
    assert sum(s["samples"] for s in shards) == 8, "b listed twice, merged once"


def test_merged_dataset_reads_every_sample(tmp_path):
    root = tmp_path / "root"
    _part(str(root / "a"), 0, 30)
    _part(str(root / "b"), 30, 20)
    merge_index(str(root), keep_local=True, download_timeout=5)
    assert sorted(_ids(root)) == list(range(50))


def test_merge_index_never_overwrites_an_index(tmp_path):
    root = tmp_path / "root"
    _part(str(root / "a"), 0, 3)
    merge_index(str(root))
    before = (root / "index.json").read_bytes()
    with pytest.raises(FileExistsError, match="already exists"):
        merge_index(str(root))
    with pytest.raises(ferry.errors.AlreadyExistsError):
        merge_index([str(root / "a" / "index.json")], str(root))
    assert (root / "index.json").read_bytes() == before


def test_a_missing_part_is_a_runtime_error_that_is_also_file_not_found(tmp_path):
    _part(str(tmp_path / "a"), 0, 3)
    parts = [str(tmp_path / "a" / "index.json"), str(tmp_path / "gone" / "index.json")]
    with pytest.raises(RuntimeError, match="Failed to download index.json.*gone") as raised:
        merge_index(parts, str(tmp_path / "out"))
    assert isinstance(raised.value, FileNotFoundError)
    assert isinstance(raised.value, ferry.errors.NotFoundError)
    assert not (tmp_path / "out" / "index.json").exists()


def test_a_pair_with_neither_copy_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="Check data availability!"):
        merge_index([(str(tmp_path / "no" / "index.json"), "")], str(tmp_path / "out"))


def test_a_part_must_sit_in_a_named_folder(tmp_path):
    with pytest.raises(RuntimeError, match="named folder"):
        merge_index(["/index.json"], str(tmp_path / "out"))


def test_a_root_without_parts_is_not_found(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no sub-folder holds an index.json"):
        merge_index(str(tmp_path / "empty"))


def test_merge_index_argument_forms(tmp_path, caplog):
    with pytest.raises(ValueError, match="Invalid arguments to merge_index"):
        merge_index()
    with pytest.raises(ValueError, match="Invalid arguments to merge_index"):
        merge_index([str(tmp_path)])  # a list needs an out
    with pytest.raises(ValueError, match="download_timeout"):
        merge_index([str(tmp_path / "a" / "index.json")], str(tmp_path), download_timeout=0)
    assert merge_index([], str(tmp_path / "out")) is None
    assert "No index merged" in caplog.text and not (tmp_path / "out").exists()


def test_merge_index_reads_parts_from_a_store_and_a_pair_from_where_it_is(tmp_path, s3rver):
    url = _s3(s3rver, "merge")
    _part(f"{url}/a", 0, 6)  # in the store only
    _part(str(tmp_path / "local" / "b"), 6, 5)  # local only: the pair's remote does not exist
    _part(f"{url}/c", 11, 4)  # the pair's local copy does not exist
    merge_index([f"{url}/a/index.json",
                 (str(tmp_path / "local" / "b" / "index.json"), f"{url}/b/index.json"),
                 (str(tmp_path / "local" / "c" / "index.json"), f"{url}/c/index.json")],
                str(tmp_path / "out"))
    shards = _index(tmp_path / "out")["shards"]
    assert [s["raw_data"]["basename"].split("/")[0] for s in shards[:1]] == ["a"]
    assert {s["raw_data"]["basename"].split("/")[0] for s in shards} == {"a", "b", "c"}
    assert sum(s["samples"] for s in shards) == 15


def test_merge_index_of_a_store_root_writes_there_and_reads_back(tmp_path, s3rver):
    url = _s3(s3rver, "root")
    _part(f"{url}/x", 0, 9)
    _part(f"{url}/y", 9, 9)
    merge_index(url)
    ds = ferry.StreamingDataset(remote=url, local=str(tmp_path / "cache"), shuffle=False,
                                batch_size=1)
    assert sorted(int(ds[i]["id"]) for i in range(len(ds))) == list(range(18))
    with pytest.raises(FileExistsError):
        merge_index(url)


def test_a_local_remote_out_writes_both_unless_keep_local_is_false(tmp_path, s3rver):
    url = _s3(s3rver, "pair")
    _part((str(tmp_path / "kept" / "a"), f"{url}/kept/a"), 0, 4, keep_local=True)
    merge_index((str(tmp_path / "kept"), f"{url}/kept"), keep_local=True)
    assert (tmp_path / "kept" / "index.json").exists()
    _part((str(tmp_path / "dropped" / "a"), f"{url}/dropped/a"), 0, 4, keep_local=True)
    merge_index((str(tmp_path / "dropped"), f"{url}/dropped"), keep_local=False)
    assert not (tmp_path / "dropped" / "index.json").exists()
    assert (tmp_path / "dropped" / "a" / "index.json").exists(), "the parts are left alone"
    for name in ("kept", "dropped"):
        ds = ferry.StreamingDataset(remote=f"{url}/{name}", local=str(tmp_path / f"c-{name}"),
                                    batch_size=1)
        assert len(ds) == 4


def test_download_timeout_bounds_each_read(tmp_path, s3rver, slow_link, monkeypatch):
    # A 3 MB "index.json" through a 1 MB/s link cannot arrive within half a second.
    local = tmp_path / "big" / "part"
    local.mkdir(parents=True)
    (local / "index.json").write_bytes(b" " * (3 << 20))
    url = _s3(s3rver, "slow") + "/part/index.json"
    with monkeypatch.context() as direct:  # the upload goes around the slow link
        direct.setenv("AWS_ENDPOINT_URL", s3rver["endpoint"])
        ferry._ferry.put_file(url, str(local / "index.json"))
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="download_timeout") as raised:
        merge_index([url], str(tmp_path / "out"), download_timeout=0.5)
    assert isinstance(raised.value, TimeoutError)
    assert time.monotonic() - start < 2.5
