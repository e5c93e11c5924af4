"""Mosaic's JSON, CSV and TSV datasets (../shared/fixtures/split, written by Mosaic's own
JSONWriter, CSVWriter and TSVWriter) through StreamingDataset: every sample, by index and by
iteration, is what Mosaic's StreamingDataset returned (expected.json), from a "remote" folder
through a cache and from a local folder read in place."""

import io
import json
import shutil
import subprocess
import tarfile

import pytest

import ferry
from conftest import FIXTURES

SPLIT = FIXTURES.parent / "split"
NAMES = ["json_plain", "json_zstd_sha1", "csv_plain", "csv_gz_md5", "tsv_plain"]


def _copy(name, to):
    shutil.copytree(SPLIT / name, to)
    expected = json.loads((to / "expected.json").read_text())
    (to / "expected.json").unlink()
    return expected


@pytest.mark.parametrize("name", NAMES)
def test_every_sample_is_what_mosaic_reads(name, tmp_path):
    expected = _copy(name, tmp_path / "remote")
    ds = ferry.StreamingDataset(remote=str(tmp_path / "remote"), local=str(tmp_path / "cache"),
                                batch_size=1)
    assert len(ds) == len(expected["samples"])
    assert list(ds) == expected["samples"]
    assert [ds[i] for i in range(len(ds))] == expected["samples"]
    # Types as Mosaic gives them, not only equal values.
    first = ds[0]
    assert type(first["id"]) is int and type(first["score"]) is float
    assert type(first["text"]) is str
    # The cache holds each shard's data and .meta, decompressed.
    index = json.loads((tmp_path / "remote" / "index.json").read_text())
    # Mosaic's shard readers say the same of each shard.
    info, entry = ds.shards[0], index["shards"][0]
    assert info.format == expected["format"]
    assert [raw.basename for raw, _ in info.file_pairs] == [
        entry["raw_data"]["basename"], entry["raw_meta"]["basename"]]
    assert info.raw_meta.bytes == entry["raw_meta"]["bytes"]
    assert info.get_raw_size() == entry["raw_data"]["bytes"] + entry["raw_meta"]["bytes"]
    if entry["compression"]:
        assert info.get_zip_size() == entry["zip_data"]["bytes"] + entry["zip_meta"]["bytes"]
    assert info.column_names == ["id", "score", "text"]
    assert info.column_encodings == ["int", "float", "str"]
    for shard in index["shards"]:
        assert shard["format"] == expected["format"]
        for key in ("raw_data", "raw_meta"):
            cached = tmp_path / "cache" / shard[key]["basename"]
            assert cached.stat().st_size == shard[key]["bytes"]


@pytest.mark.parametrize("name", ["json_zstd_sha1", "csv_gz_md5"])
def test_a_local_compressed_dataset_is_read_in_place(name, tmp_path):
    expected = _copy(name, tmp_path / "local")
    ds = ferry.StreamingDataset(local=str(tmp_path / "local"), batch_size=1)
    assert list(ds) == expected["samples"]


def test_a_missing_meta_is_an_error_naming_it(tmp_path):
    _copy("tsv_plain", tmp_path / "remote")
    (tmp_path / "remote" / "shard.00001.tsv.meta").unlink()
    ds = ferry.StreamingDataset(remote=str(tmp_path / "remote"), local=str(tmp_path / "cache"),
                                batch_size=1)
    with pytest.raises(FileNotFoundError, match=r"shard\.00001\.tsv\.meta"):
        list(ds)


WRITERS = {"json": ferry.JSONWriter, "csv": ferry.CSVWriter, "tsv": ferry.TSVWriter}


def _writer_args(shard):
    """What Mosaic's writer was given for the dataset whose first shard entry is `shard`."""
    if "columns" in shard:
        columns = shard["columns"]
    else:
        columns = dict(zip(shard["column_names"], shard["column_encodings"]))
    return dict(columns=columns, newline=shard["newline"], compression=shard["compression"],
                hashes=shard["hashes"], size_limit=shard["size_limit"])


@pytest.mark.parametrize("name", NAMES)
def test_the_writers_rewrite_mosaics_datasets_byte_for_byte(name, tmp_path):
    """The samples Mosaic read back, written with Mosaic's settings, give Mosaic's files: the raw
    data and .meta of every shard, and (uncompressed) index.json itself."""
    theirs = SPLIT / name
    index = json.loads((theirs / "index.json").read_text())
    expected = json.loads((theirs / "expected.json").read_text())
    first = index["shards"][0]
    with WRITERS[first["format"]](out=str(tmp_path / "out"), **_writer_args(first)) as writer:
        for sample in expected["samples"]:
            writer.write(sample)
    ours = json.loads((tmp_path / "out" / "index.json").read_text())
    assert len(ours["shards"]) == len(index["shards"])
    if first["compression"] is None:
        assert (tmp_path / "out" / "index.json").read_bytes() == (theirs / "index.json").read_bytes()
        for shard in index["shards"]:
            for key in ("raw_data", "raw_meta"):
                basename = shard[key]["basename"]
                assert (tmp_path / "out" / basename).read_bytes() == (theirs / basename).read_bytes()
    for mine, reference in zip(ours["shards"], index["shards"]):
        for key in ("raw_data", "raw_meta", "samples"):
            assert mine[key] == reference[key]
    # And what they wrote reads back as Mosaic's did.
    ds = ferry.StreamingDataset(local=str(tmp_path / "out"), batch_size=1)
    assert list(ds) == expected["samples"]


def test_a_writer_uploads_to_a_store_and_the_dataset_streams_back(s3rver, tmp_path):
    url = f"s3://{s3rver['bucket']}/split-writer/{tmp_path.name}"
    samples = [{"id": i, "text": f"row {i} é", "score": i / 7} for i in range(300)]
    with ferry.JSONWriter(out=url, columns={"id": "int", "text": "str", "score": "float"},
                          compression="zstd", hashes=["sha1", "xxh64"], size_limit=2048) as w:
        for sample in samples:
            w.write(sample)
    ds = ferry.StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=1,
                                validate_hash="xxh64")
    assert list(ds) == samples
    assert any(p.name.endswith(".json.meta") for p in (tmp_path / "cache").iterdir())


def test_values_mosaic_would_refuse_are_refused(tmp_path):
    w = ferry.CSVWriter(out=str(tmp_path / "a"), columns={"id": "int", "t": "str", "x": "float"})
    for bad, column in [({"id": 1, "t": "a,b", "x": 1.0}, "separator"),
                        ({"id": True, "t": "a", "x": 1.0}, "'id' is int"),
                        ({"id": 1, "t": b"a", "x": 1.0}, "'t' is str"),
                        ({"id": 1, "t": "a", "x": 1}, "'x' is float")]:
        with pytest.raises(ferry.InvalidArgumentError, match=column):
            w.write(bad)
    assert w.samples_written == 0
    with pytest.raises(KeyError, match="'x'"):
        w.write({"id": 1, "t": "a"})
    w.write({"id": 1, "t": "a", "x": 2.5})
    w.finish()
    assert (tmp_path / "a" / "shard.00000.csv").read_text() == "id,t,x\n1,a,2.5\n"
    with pytest.raises(TypeError, match="bytes"):
        ferry.TSVWriter(out=str(tmp_path / "b"), columns={"a": "bytes"})
    with pytest.raises(ValueError, match="Invalid Writer argument"):
        ferry.JSONWriter(out=str(tmp_path / "c"), columns={"a": "str"}, separator=",")


def test_format_is_checked_against_the_index(tmp_path):
    _copy("csv_plain", tmp_path / "csv")
    ds = ferry.StreamingDataset(local=str(tmp_path / "csv"), batch_size=1, format="csv")
    assert ds.format == "csv" and len(ds) == 167
    with pytest.raises(ferry.InvalidArgumentError, match=r"format='json', but .* holds csv"):
        ferry.StreamingDataset(local=str(tmp_path / "csv"), batch_size=1, format="json")
    with pytest.raises(ferry.InvalidArgumentError, match="format must be one of mds"):
        ferry.StreamingDataset(local=str(tmp_path / "csv"), batch_size=1, format="parquet")


def _ferry(*args, check=True):
    from test_webdataset import FERRY_CLI

    assert FERRY_CLI.is_file(), f"{FERRY_CLI} missing (make build)"
    return subprocess.run([str(FERRY_CLI), *map(str, args)], check=check, capture_output=True,
                          text=True)


@pytest.mark.parametrize("name", ["json_plain", "csv_gz_md5", "tsv_plain"])
@pytest.mark.parametrize("to", ["json", "csv", "tsv"])
def test_ferry_converts_between_json_csv_and_tsv_keeping_every_value(name, to, tmp_path):
    """`ferry convert --to json|csv|tsv`: what the same reader that reads Mosaic's own datasets
    reads back is Mosaic's samples, types and all; and the files are what ferry's writer, which
    writes Mosaic's bytes, writes for those samples."""
    expected = _copy(name, tmp_path / "src")
    separator = {"json": None, "csv": ",", "tsv": "\t"}[to]
    unfit = [i for i, s in enumerate(expected["samples"]) if separator and separator in s["text"]]
    if unfit:  # Mosaic's JSON text may hold what a CSV or TSV cannot: an error naming the sample
        failed = _ferry("convert", tmp_path / "src", tmp_path / "out", "--to", to, check=False)
        assert failed.returncode != 0
        assert f"sample {unfit[0]}: column 'text'" in failed.stderr, failed.stderr
        assert not (tmp_path / "out" / "index.json").exists()
        return
    _ferry("convert", tmp_path / "src", tmp_path / "out", "--to", to, "--hashes", "sha1", "-q")
    ds = ferry.StreamingDataset(local=str(tmp_path / "out"), batch_size=1, validate_hash="sha1",
                                format=to)
    got = list(ds)
    assert got == expected["samples"]
    assert [type(v) for v in got[0].values()] == [type(v) for v in expected["samples"][0].values()]
    with WRITERS[to](out=str(tmp_path / "mine"), columns={"id": "int", "score": "float",
                                                         "text": "str"}, hashes=["sha1"]) as w:
        for sample in expected["samples"]:
            w.write(sample)
    assert (tmp_path / "out" / "index.json").read_bytes() == (
        tmp_path / "mine" / "index.json").read_bytes()


def test_mds_and_webdataset_convert_into_csv_by_column_type(tmp_path):
    rows = [{"i": -i, "u": i, "f": i / 4, "t": f"row {i}", "n": str(i * 10**12)}
            for i in range(40)]
    with ferry.MDSWriter(out=str(tmp_path / "mds"), size_limit=1 << 10,
                         columns={"i": "int16", "u": "uint8", "f": "float32", "t": "str",
                                  "n": "str_int"}) as writer:
        for row in rows:
            writer.write({**row, "n": int(row["n"])})
    _ferry("convert", tmp_path / "mds", tmp_path / "csv", "--to", "csv", "-q")
    ds = ferry.StreamingDataset(local=str(tmp_path / "csv"), batch_size=1)
    assert ds.shards[0].column_encodings == ["float", "int", "int", "str", "int"]
    assert list(ds) == [{**row, "n": int(row["n"])} for row in rows]

    # WebDataset fields take the types WebDataset's decoders give them.
    with tarfile.open(tmp_path / "a.tar", "w") as tar:
        for i in range(5):
            for field, data in (("txt", f"caption é {i}"), ("cls", f"{i % 2}\n")):
                member = tarfile.TarInfo(f"k{i}.{field}")
                member.size = len(data.encode())
                tar.addfile(member, io.BytesIO(data.encode()))
    (tmp_path / "wds").mkdir()
    (tmp_path / "a.tar").rename(tmp_path / "wds" / "a.tar")
    _ferry("convert", tmp_path / "wds", tmp_path / "tsv", "--to", "tsv", "-q")
    ds = ferry.StreamingDataset(local=str(tmp_path / "tsv"), batch_size=1)
    assert list(ds) == [{"__key__": f"k{i}", "cls": i % 2, "txt": f"caption é {i}"}
                        for i in range(5)]


def test_columns_json_csv_tsv_cannot_hold_are_errors_naming_them(tmp_path):
    with ferry.MDSWriter(out=str(tmp_path / "mds"), columns={"b": "bytes", "t": "str"}) as w:
        w.write({"b": b"\x00", "t": "a"})
    failed = _ferry("convert", tmp_path / "mds", tmp_path / "out", "--to", "json", check=False)
    assert failed.returncode != 0
    assert "column 'b' is bytes" in failed.stderr
    assert not (tmp_path / "out" / "index.json").exists()

    with ferry.MDSWriter(out=str(tmp_path / "mds2"), columns={"t": "str"}) as w:
        for text in ("plain", "a,b"):
            w.write({"t": text})
    failed = _ferry("convert", tmp_path / "mds2", tmp_path / "out2", "--to", "csv", check=False)
    assert failed.returncode != 0
    assert "sample 1" in failed.stderr and "separator" in failed.stderr
    assert not (tmp_path / "out2" / "index.json").exists()
    # TSV has no quarrel with that comma.
    _ferry("convert", tmp_path / "mds2", tmp_path / "out3", "--to", "tsv", "-q")
    assert [s["t"] for s in ferry.StreamingDataset(local=str(tmp_path / "out3"),
                                                   batch_size=1)] == ["plain", "a,b"]
