"""ferry.Stream as Mosaic Streaming's Stream: weights resolved by the dataset (proportions with or
without an epoch_size), the errors Mosaic gives for bad weights, Mosaic's default local folder
(and reading a cache Mosaic filled there), dataset defaults, and custom streams built from
streams_registry."""

import hashlib
import os
import shutil
import tempfile

import pytest

import ferry
from ferry import _ferry
from ferry.stream import streams_registry


def _write(out, values, **kwargs):
    with ferry.MDSWriter(out=str(out), columns={"value": "int"}, **kwargs) as writer:
        for v in values:
            writer.write({"value": v})
    return str(out)


@pytest.fixture
def two_streams(tmp_path):
    """Two local datasets: values 0..99 and 1000..1299."""
    return (_write(tmp_path / "a", range(100), size_limit=400),
            _write(tmp_path / "b", range(1000, 1300), size_limit=400))


@pytest.fixture
def own_tempdir(tmp_path, monkeypatch):
    """tempfile.gettempdir() answers a folder of this test's own."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _values(ds):
    return [int(s["value"]) for s in ds]


def _blake(text):
    return hashlib.blake2s(text.encode(), digest_size=16).hexdigest()


def test_proportions_without_epoch_size_share_all_the_samples(two_streams):
    a, b = two_streams
    streams = [ferry.Stream(local=a, proportion=1), ferry.Stream(local=b, proportion=3)]
    ds = ferry.StreamingDataset(streams=streams, batch_size=1)
    values = _values(ds)
    assert len(values) == len(ds) == 400
    assert sum(v < 1000 for v in values) == 100
    assert [(s.proportion, s.repeat, s.choose) for s in streams] == [(0.25, 1.0, 100),
                                                                     (0.75, 1.0, 300)]
    # The resolved values do not count as given: the streams serve another dataset.
    again = ferry.StreamingDataset(streams=streams, epoch_size=40, batch_size=1)
    assert len(_values(again)) == 40
    assert [s.choose for s in streams] == [10, 30]


def test_resolved_weights_are_set_on_every_stream(two_streams):
    a, b = two_streams
    streams = [ferry.Stream(local=a, choose=50), ferry.Stream(local=b, repeat=0.5),
               ferry.Stream(local=a)]
    ds = ferry.StreamingDataset(streams=streams, batch_size=1)
    assert len(_values(ds)) == 50 + 150 + 100
    assert [s.choose for s in streams] == [50, 150, 100]
    assert [s.repeat for s in streams] == [0.5, 0.5, 1.0]
    assert [s.proportion for s in streams] == pytest.approx([50 / 300, 150 / 300, 100 / 300])
    # No weights with an epoch_size: shared by the streams' sizes, summing to it exactly.
    plain = [ferry.Stream(local=a), ferry.Stream(local=b)]
    ds = ferry.StreamingDataset(streams=plain, epoch_size=41, batch_size=1)
    assert len(_values(ds)) == 41
    assert sum(s.choose for s in plain) == 41
    assert [s.choose for s in plain] in ([10, 31], [11, 30])


def test_the_weights_mosaic_refuses_are_value_errors(two_streams):
    a, b = two_streams
    with pytest.raises(ValueError, match=r"Relative .* incompatible .*error in stream 1"):
        ferry.StreamingDataset(streams=[ferry.Stream(local=a, proportion=1),
                                        ferry.Stream(local=b, choose=3)], epoch_size=10)
    with pytest.raises(ValueError, match="epoch_size 10 .* stream 0 gives repeat"):
        ferry.StreamingDataset(streams=[ferry.Stream(local=a, repeat=2)], epoch_size=10)
    with pytest.raises(ValueError, match="`proportion` must be non-negative"):
        ferry.Stream(local=a, proportion=-1)
    with pytest.raises(ValueError, match="`download_retry` must be non-negative"):
        ferry.Stream(local=a, download_retry=-1)
    with pytest.raises(ValueError, match="`download_timeout` must be positive"):
        ferry.Stream(local=a, download_timeout=0)


def test_apply_weights_and_validate_weights_as_classmethods(tmp_path):
    streams = [ferry.Stream(local=str(tmp_path), proportion=1),
               ferry.Stream(local=str(tmp_path), proportion=1)]
    assert ferry.Stream.validate_weights(streams) == (True, False)
    assert ferry.Stream.apply_weights(streams, [100, 300], None, 9176) == 400
    assert [s.choose for s in streams] == [200, 200]
    assert [s.repeat for s in streams] == [2.0, 200 / 300]
    plain = [ferry.Stream(local=str(tmp_path))]
    assert ferry.Stream.validate_weights(plain) == (False, True)


def test_default_local_is_mosaics_folder_for_the_remote(own_tempdir):
    stream = ferry.Stream(remote="s3://bucket/data")
    assert stream.local == os.path.join(str(own_tempdir), _blake("s3://bucket/data"), "")
    assert os.path.isdir(stream.local)
    with_split = ferry.Stream(remote="s3://bucket/data", split="train")
    assert with_split.local == os.path.join(str(own_tempdir), _blake("s3://bucket/data"), "train")
    # The folder exists now: another stream of the same remote reuses it.
    assert ferry.Stream(remote="s3://bucket/data").local == stream.local


def test_a_stream_without_remote_or_local_is_as_mosaics(own_tempdir, two_streams):
    # Its temporary folder is the temp dir itself, which exists.
    with pytest.raises(FileExistsError, match="Could not create a temporary local directory"):
        ferry.Stream()
    stream = ferry.Stream(split="x")
    assert stream.local == os.path.join(str(own_tempdir), "", "x")
    assert os.path.isdir(stream.local)
    with pytest.raises(ValueError, match="`remote` and/or `local` path must be provided"):
        ferry.StreamingDataset(streams=[stream, ferry.Stream(local=two_streams[0])])


def test_reads_a_cache_mosaic_filled(tmp_path, own_tempdir, s3rver):
    # Mosaic's cache of a compressed dataset holds index.json and the decompressed shards.
    data = tmp_path / "data"
    _write(data, range(200), size_limit=400, compression="zstd")
    assert len(_values(ferry.StreamingDataset(local=str(data), batch_size=1))) == 200  # writes the raw shards
    url = f"s3://{s3rver['bucket']}/python/stream/{tmp_path.name}"
    cache = own_tempdir / _blake(url)
    cache.mkdir()
    for name in os.listdir(data):
        if name == "index.json" or name.endswith(".mds"):
            shutil.copy(data / name, cache / name)
    # The remote holds the index only: every shard must come from Mosaic's folder.
    _ferry.put_file(f"{url}/index.json", str(data / "index.json"))
    ds = ferry.StreamingDataset(remote=url, batch_size=1)
    assert ds.streams[0].local == os.path.join(str(cache), "")
    assert sorted(_values(ds)) == list(range(200))


def test_dataset_defaults_fill_what_a_stream_was_not_given(two_streams):
    a, b = two_streams
    own = ferry.Stream(local=b, download_retry=7, download_timeout=5, keep_zip=False)
    plain = ferry.Stream(local=a)
    ferry.StreamingDataset(streams=[plain, own], download_retry=3, keep_zip=True)
    assert (plain.download_retry, plain.download_timeout, plain.keep_zip) == (3, 60, True)
    assert plain.safe_keep_zip is True
    assert (own.download_retry, own.download_timeout, own.keep_zip) == (7, 5, False)
    assert own.safe_keep_zip is True  # no remote: the compressed files are the dataset's own
    assert plain.split == own.split == ""
    assert plain.get_index_size() == os.path.getsize(os.path.join(a, "index.json"))


def test_a_custom_stream_from_the_registry(two_streams):
    class TaggedStream(ferry.Stream):
        def __init__(self, *, tag, **kwargs):
            super().__init__(**kwargs)
            self.tag = tag

    streams_registry.register("tagged_stream", func=TaggedStream)
    ds = ferry.StreamingDataset(local=two_streams[0], stream_name="tagged_stream",
                                stream_config={"tag": 100}, download_retry=4,
                                batch_size=1)
    assert len(ds.streams) == 1
    assert isinstance(ds.streams[0], TaggedStream)
    assert ds.streams[0].tag == 100
    assert ds.streams[0].download_retry == 4
    assert len(_values(ds)) == 100
    assert streams_registry.get("stream") is ferry.Stream
    with pytest.raises(ValueError, match="no 'nothing'.*'stream'"):
        ferry.StreamingDataset(local=two_streams[0], stream_name="nothing")
