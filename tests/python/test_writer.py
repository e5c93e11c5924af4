"""ferry.MDSWriter: every encoding round-trips from ordinary Python values; the output is the C++
writer's (``ferry convert``) byte for byte; bad input is a clear, mapped exception."""

import io
import json
import os
import pathlib
import pickle
import subprocess
import uuid
from decimal import Decimal

import numpy as np
import pytest
from PIL import Image

import ferry

BUILD = pathlib.Path(ferry.__file__).resolve().parents[2]  # <build>/python/ferry/__init__.py
FERRY_CLI = pathlib.Path(os.environ.get("FERRY_CLI", BUILD / "src" / "cli" / "ferry"))


def _image(mode, width, height, seed):
    rng = np.random.default_rng(seed)
    channels = {"L": 1, "RGB": 3, "RGBA": 4}[mode]
    pixels = rng.integers(0, 256, size=(height, width, channels), dtype=np.uint8)
    return Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels, mode)


def _jpeg(image):
    out = io.BytesIO()
    image.save(out, format="JPEG")
    return out.getvalue()


COLUMNS = {
    "b": "bytes", "s": "str", "i": "int", "u8": "uint8", "u64": "uint64", "i8": "int8",
    "i16": "int16", "f16": "float16", "f32": "float32", "f64": "float64", "si": "str_int",
    "sf": "str_float", "sd": "str_decimal", "j": "json", "p": "pkl", "pil": "pil",
    "jpg": "jpeg", "png": "png", "lpil": "list[pil]", "ljpg": "list[jpeg]", "lpng": "list[png]",
    "ja": "jpeg_array", "nd": "ndarray", "nds": "ndarray:int16:3,4",
}


def _sample(k):
    rgb = _image("RGB", 12 + k, 9, k)
    gray = _image("L", 7, 5 + k, 100 + k)
    return {
        "b": bytes(range(k)), "s": f"sample {k} é😀", "i": -(2**62) + k, "u8": np.uint8(250 + k),
        "u64": 2**64 - 1 - k, "i8": -128 + k, "i16": np.int16(-300 * k), "f16": 0.5 + k,
        "f32": np.float32(0.1 * k), "f64": float("inf") if k == 1 else 1e-300 * k,
        "si": 2**100 + k, "sf": 0.1 * k, "sd": Decimal(f"{k}.2500"),
        "j": {"z": [k, 2.5, None, True], "a": "é"}, "p": {"k": (k, frozenset({1}))},
        "pil": rgb, "jpg": rgb, "png": gray, "lpil": [rgb, gray][: k % 3],
        "ljpg": [rgb] * (k % 2), "lpng": [gray, gray], "ja": [_jpeg(rgb)],
        "nd": np.arange(k + 1, dtype=np.float64).reshape(1, k + 1) / 3,
        "nds": np.full((3, 4), k, dtype=np.int16),
    }


def test_every_encoding_round_trips(tmp_path):
    out = tmp_path / "ds"
    samples = [_sample(k) for k in range(4)]
    with ferry.MDSWriter(out=str(out), columns=COLUMNS, hashes=["sha1"],
                         size_limit="8kb") as writer:
        for sample in samples:
            writer.write({**sample, "extra": "ignored"})
        assert writer.samples_written == 4
    ds = ferry.StreamingDataset(local=str(out), allow_unsafe_types=True)
    assert len(ds) == 4
    for k, want in enumerate(samples):
        got = ds[k]
        assert set(got) == set(COLUMNS)
        for name in ("b", "s", "i", "u64", "si", "j", "p"):
            assert got[name] == want[name], name
        assert got["u8"] == 250 + k and got["u8"].dtype == np.uint8
        assert got["i8"] == -128 + k and got["i8"].dtype == np.int8
        assert got["i16"] == -300 * k and got["i16"].dtype == np.int16
        assert got["f16"] == np.float16(0.5 + k) and got["f16"].dtype == np.float16
        assert got["f32"] == want["f32"] and got["f32"].dtype == np.float32 and got["f64"] == want["f64"]
        assert got["sf"] == 0.1 * k and type(got["sf"]) is float
        assert got["sd"] == want["sd"] and str(got["sd"]) == f"{k}.2500"
        assert got["pil"].tobytes() == want["pil"].tobytes() and got["pil"].mode == "RGB"
        assert got["png"].tobytes() == want["png"].tobytes()  # lossless
        assert got["jpg"].size == want["jpg"].size and got["jpg"].mode == "RGB"
        assert [i.tobytes() for i in got["lpil"]] == [i.tobytes() for i in want["lpil"]]
        assert len(got["ljpg"]) == len(want["ljpg"])
        assert [i.tobytes() for i in got["lpng"]] == [i.tobytes() for i in want["lpng"]]
        assert [i.size for i in got["ja"]] == [want["pil"].size]
        np.testing.assert_array_equal(got["nd"], want["nd"])
        assert got["nd"].dtype == np.float64 and got["nds"].shape == (3, 4)
        np.testing.assert_array_equal(got["nds"], want["nds"])
    as_arrays = ferry.StreamingDataset(local=str(out), allow_unsafe_types=True,
                                       image_format="numpy")
    assert as_arrays[2]["png"].shape == (7, 7)
    assert as_arrays[2]["pil"].dtype == np.uint8 and as_arrays[2]["pil"].shape == (9, 14, 3)


def test_big_endian_and_strided_arrays_keep_their_values(tmp_path):
    values = [np.arange(6, dtype=">i4").reshape(2, 3), np.arange(12.0).reshape(3, 4)[:, ::2],
              np.asfortranarray(np.arange(6, dtype=np.uint16).reshape(2, 3))]
    with ferry.MDSWriter(out=str(tmp_path / "ds"), columns={"a": "ndarray"}) as writer:
        for v in values:
            writer.write({"a": v})
    ds = ferry.StreamingDataset(local=str(tmp_path / "ds"))
    for k, v in enumerate(values):
        np.testing.assert_array_equal(ds[k]["a"], v)


def test_the_output_is_the_cpp_writers_byte_for_byte(tmp_path):
    """The same image folder through `ferry convert` (the C++ writer) and through ferry.MDSWriter
    (reading the files in the same order) gives identical shards and index.json."""
    assert FERRY_CLI.is_file(), f"{FERRY_CLI} missing (make build)"
    src = tmp_path / "images"
    paths = []
    for label, cls in enumerate(["cat", "dog"]):
        (src / cls).mkdir(parents=True)
        for k in range(15):
            path = src / cls / f"{k:03}.jpg"
            _image("RGB", 40 + k, 30, 10 * label + k).save(path, format="JPEG", quality=90)
            paths.append((label, path))
    args = ["--size-limit", "20kb", "--compression", "zstd:3", "--hashes", "sha1,xxh64"]
    subprocess.run([str(FERRY_CLI), "convert", str(src), str(tmp_path / "cpp"), "-q", *args],
                   check=True)
    with ferry.MDSWriter(out=str(tmp_path / "py"),
                         columns={"data": "jpeg", "label": "int", "path": "str"},
                         compression="zstd:3", hashes=["sha1", "xxh64"],
                         size_limit="20kb") as writer:
        for label, path in paths:
            writer.write({"data": path.read_bytes(), "label": label,
                          "path": str(path.relative_to(src))})
    cpp = json.loads((tmp_path / "cpp" / "index.json").read_text())
    assert len(cpp["shards"]) > 2
    assert (tmp_path / "py" / "index.json").read_bytes() == (
        tmp_path / "cpp" / "index.json").read_bytes()
    for shard in cpp["shards"]:
        name = shard["zip_data"]["basename"]
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cpp" / name).read_bytes()


def _write(tmp_path, columns, sample, **kwargs):
    with ferry.MDSWriter(out=str(tmp_path / "bad"), columns=columns, exist_ok=True,
                         **kwargs) as writer:
        writer.write(sample)


@pytest.mark.parametrize("columns, sample, error, match", [
    ({"a": "int"}, {"a": "seven"}, ValueError, "column 'a': .*str"),
    ({"a": "int"}, {"a": 2**70}, ValueError, "a"),
    ({"a": "uint8"}, {"a": 256}, ValueError, "256"),
    ({"a": "uint8"}, {"a": -1}, ValueError, "-1"),
    ({"a": "int"}, {"b": 1}, ValueError, "no value for column 'a'"),
    ({"a": "nope"}, {"a": 1}, ValueError, "unknown column encoding 'nope'"),
    ({"a": "ndarray:int16:3,4"}, {"a": np.zeros((2, 2), np.int16)}, ValueError, "a"),
    ({"a": "ndarray"}, {"a": [1, 2]}, ValueError, "numpy array"),
    ({"a": "ndarray"}, {"a": np.array(["x"])}, ValueError, "dtype"),
    ({"a": "jpeg"}, {"a": 3.5}, ValueError, "PIL image"),
    ({"a": "list[png]"}, {"a": "x"}, ValueError, "list"),
    ({"a": "str"}, {"a": object()}, ValueError, "object"),
])
def test_bad_values_are_value_errors_naming_the_column(tmp_path, columns, sample, error, match):
    with pytest.raises(error, match=match):
        _write(tmp_path, columns, sample)


@pytest.mark.parametrize("kwargs, match", [
    ({"size_limit": -5}, "`size_limit` must be greater than zero, instead, found as -5"),
    ({"size_limit": "lots"}, "Unsupported value/suffix lots"),
    ({"size_limit": 2**40}, "size_limit"),
    ({"size_limit": 2**32}, r"`size_limit` must be less than 2\*\*32, instead, found as 4294967"),
    ({"size_limit": "4gb"}, "`size_limit` must be less than 2\\*\\*32"),
    ({"compression": "lzma"}, "lzma"),
    ({"hashes": ["crc"]}, "crc"),
    ({"columns": {}}, "columns"),
    ({"no_such_option": 1}, "no_such_option"),
    ({"min_workers": 1}, r"Invalid Writer argument\(s\): \['min_workers'\]"),
])
def test_bad_options_are_value_errors(tmp_path, kwargs, match):
    options = {"columns": {"a": "int"}, **kwargs}
    with pytest.raises(ValueError, match=match):
        ferry.MDSWriter(out=str(tmp_path / "o"), **options)


def test_a_non_empty_folder_is_refused_unless_exist_ok(tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "index.json").write_text("{}")
    with pytest.raises(ferry.errors.AlreadyExistsError) as raised:
        ferry.MDSWriter(out=str(tmp_path / "o"), columns={"a": "int"})
    assert isinstance(raised.value, FileExistsError) and str(tmp_path / "o") in str(raised.value)
    with ferry.MDSWriter(out=str(tmp_path / "o"), columns={"a": "int"}, exist_ok=True) as w:
        w.write({"a": 1})


def test_pickle_values_are_stored_with_pickle_dumps(tmp_path):
    value = {"x": [1, 2, (3,)]}
    _write(tmp_path, {"p": "pkl"}, {"p": value})
    index = json.loads((tmp_path / "bad" / "index.json").read_text())
    shard = (tmp_path / "bad" / index["shards"][0]["raw_data"]["basename"]).read_bytes()
    assert pickle.dumps(value) in shard


def test_a_non_empty_folder_is_refused_in_mosaics_words(tmp_path):
    _write(tmp_path, {"a": "int"}, {"a": 1})
    with pytest.raises(FileExistsError, match="Directory is not empty: .*bad"):
        ferry.MDSWriter(out=str(tmp_path / "bad"), columns={"a": "int"})


def test_an_unknown_encoding_is_a_type_error_as_in_mosaic(tmp_path):
    with pytest.raises(TypeError, match="column `a` with encoding `nope` is unsupported") as e:
        ferry.MDSWriter(out=str(tmp_path / "o"), columns={"a": "nope"})
    assert isinstance(e.value, ValueError)
    assert not (tmp_path / "o").exists(), "refused before anything is created"


def test_a_missing_column_is_a_key_error_as_in_mosaic(tmp_path):
    with pytest.raises(KeyError) as e:
        _write(tmp_path, {"a": "int", "b": "str"}, {"a": 1})
    assert isinstance(e.value, ValueError) and "no value for column 'b'" in str(e.value)


def test_mosaics_other_writer_arguments(tmp_path):
    with ferry.MDSWriter(out=str(tmp_path / "o"), columns={"a": "int"}, max_workers=None,
                         progress_bar=True, retry=4, extra_bytes_per_shard=100) as writer:
        writer.write({"a": 1})
    with pytest.raises(TypeError, match="extra_bytes_per_sample"):
        ferry.MDSWriter(out=str(tmp_path / "p"), columns={"a": "int"}, extra_bytes_per_sample=4)


@pytest.mark.parametrize("size_limit, expected", [
    (" 2 KB ", 2048), (1500.9, 1500), ("1.5kb", 1536), (None, None), (0, None),
])
def test_size_limit_is_read_as_mosaic_reads_it(tmp_path, size_limit, expected):
    writer = ferry.MDSWriter(out=str(tmp_path / "o"), columns={"a": "int"},
                             size_limit=size_limit)
    assert writer.size_limit == expected and writer.get_config()["size_limit"] == expected


def test_get_config_is_mosaics_and_what_every_shard_embeds(tmp_path):
    columns = {"txt": "str", "id": "int64", "vec": "ndarray:float32:2,3", "img": "jpeg"}
    writer = ferry.MDSWriter(out=str(tmp_path / "o"), columns=columns, compression="zstd:7",
                             hashes=["sha1", "xxh64"], size_limit="1kb")
    assert writer.get_config() == {
        "version": 2, "format": "mds", "compression": "zstd:7", "hashes": ["sha1", "xxh64"],
        "size_limit": 1024, "column_names": ["id", "img", "txt", "vec"],
        "column_encodings": ["int64", "jpeg", "str", "ndarray:float32:2,3"],
        "column_sizes": [8, None, None, 24],
    }
    assert (writer.format, writer.compression, writer.hashes) == ("mds", "zstd:7",
                                                                  ["sha1", "xxh64"])
    assert writer.columns == columns and writer.column_sizes == [8, None, None, 24]
    assert writer.column_encodings == ["int64", "jpeg", "str", "ndarray:float32:2,3"]
    writer.get_config()["hashes"].append("md5")  # a fresh dict each call, as Mosaic's
    assert writer.get_config()["hashes"] == ["sha1", "xxh64"]
    image = Image.new("RGB", (4, 4))
    with writer:
        writer.write({"txt": "x", "id": 1, "vec": np.zeros((2, 3), np.float32), "img": image})
    shard = json.loads((tmp_path / "o" / "index.json").read_text())["shards"][0]
    assert {k: shard[k] for k in writer.get_config()} == writer.get_config()
    plain = ferry.MDSWriter(out=str(tmp_path / "p"), columns={"a": "int"})
    assert (plain.get_config()["compression"], plain.get_config()["hashes"],
            plain.get_config()["size_limit"]) == (None, [], 1 << 26)


def test_flush_shard_starts_a_new_shard_and_never_writes_an_empty_one(tmp_path):
    out = tmp_path / "o"
    with ferry.MDSWriter(out=str(out), columns={"a": "int"}) as writer:
        writer.flush_shard()  # nothing yet: no empty first shard
        for i in range(5):
            writer.write({"a": i})
            if i in (1, 2):
                writer.flush_shard()
        writer.flush_shard()
        writer.flush_shard()  # nothing new since the last one
    shards = json.loads((out / "index.json").read_text())["shards"]
    assert [s["samples"] for s in shards] == [2, 1, 2]
    ds = ferry.StreamingDataset(local=str(out), shuffle=False, batch_size=1)
    assert [int(ds[i]["a"]) for i in range(len(ds))] == list(range(5))
    with pytest.raises(ValueError, match="after finish"):
        writer.flush_shard()


def test_flush_shard_with_a_remote_out_uploads_the_shard(tmp_path, s3rver):
    url = f"s3://{s3rver['bucket']}/python/flush-{uuid.uuid4().hex[:12]}"
    with ferry.MDSWriter(out=url, columns={"a": "int"}) as writer:
        writer.write({"a": 1})
        writer.flush_shard()
        writer.write({"a": 2})
    assert writer.uploaded == ["shard.00000.mds", "shard.00001.mds"]
    ds = ferry.StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=1)
    assert len(ds) == 2


def test_reading_a_pkl_column_needs_allow_unsafe_types_in_mosaics_words(tmp_path):
    _write(tmp_path, {"num": "pkl", "id": "int"}, {"num": 3, "id": 1})
    with pytest.raises(ValueError, match="Column num contains an unsafe type: pkl"):
        ferry.StreamingDataset(local=str(tmp_path / "bad"), batch_size=1)
    ds = ferry.StreamingDataset(local=str(tmp_path / "bad"), batch_size=1, allow_unsafe_types=True)
    assert ds[0]["num"] == 3
