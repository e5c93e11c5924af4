"""Every dataset Mosaic Streaming wrote (the reference fixtures, $FERRY_FIXTURES_DIR, see
docs/development.md) reads through the Python API as its expected.json says, and
ferry.MDSWriter writes the same samples back byte for byte."""

import hashlib
import json
import math
import pathlib
from decimal import Decimal

import numpy as np
import pytest

import ferry
from conftest import FIXTURE_NAMES


def _expected(path: pathlib.Path):
    return json.loads((path / "expected.json").read_text())


def _same_float(value, expected) -> bool:
    if isinstance(expected, str):
        return math.isnan(value) if expected == "nan" else value == float(expected)
    return float(value) == expected and math.copysign(1, float(value)) == math.copysign(1, expected)


def _norm(value):
    """Something == can compare: NaN as text, arrays and images as their bytes."""
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, np.ndarray):
        return (value.dtype.name, value.shape, value.tobytes())
    if hasattr(value, "tobytes") and hasattr(value, "mode"):
        return (value.mode, value.size, value.tobytes())
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return "nan"
    if isinstance(value, Decimal):
        return ("Decimal", str(value))
    return value


def _check_image_file(data: bytes, image, expected, where):
    assert hashlib.sha256(data).hexdigest() == expected["sha256"], where
    assert len(data) == expected["num_bytes"], where
    assert (image.width, image.height, image.mode) == (
        expected["width"], expected["height"], expected["mode"]), where
    if "pixels_sha256" in expected:
        assert hashlib.sha256(image.tobytes()).hexdigest() == expected["pixels_sha256"], where


def _check_pil(image, expected, where):
    assert (image.width, image.height, image.mode) == (
        expected["width"], expected["height"], expected["mode"]), where
    assert hashlib.sha256(image.tobytes()).hexdigest() == expected["pixels_sha256"], where


def _check(kind, value, raw, expected, where):
    """value: as read with image_format="pil"; raw: as read with image_format="bytes"."""
    if kind == "bytes":
        assert isinstance(value, bytes) and value.hex() == expected, where
    elif kind == "str":
        assert value == expected, where
    elif kind == "int":
        assert type(value) is int and value == expected, where
    elif kind.startswith(("uint", "int")):
        assert isinstance(value, np.generic) and value.dtype.name == kind, where
        assert int(value) == expected, where
    elif kind.startswith("float"):
        assert isinstance(value, np.generic) and value.dtype.name == kind, where
        assert _same_float(float(value), expected), where
    elif kind == "str_float":
        assert type(value) is float and _same_float(value, expected), where
    elif kind == "str_int":
        assert type(value) is int and value == int(expected), where
    elif kind == "str_decimal":
        assert str(value) == expected, where
    elif kind == "json":
        assert value == expected, where
    elif kind == "ndarray":
        assert isinstance(value, np.ndarray), where
        assert value.dtype.name == expected["dtype"], where
        assert list(value.shape) == expected["shape"], where
        for got, want in zip(value.ravel().tolist(), expected["data"]):
            if isinstance(want, str) or isinstance(got, float):
                assert _same_float(float(got), want), where
            else:
                assert got == want, where
    elif kind in ("jpeg", "png"):
        _check_image_file(raw, value, expected, where)
    elif kind == "pil":
        _check_pil(value, expected, where)
    elif kind in ("list[jpeg]", "list[png]", "jpeg_array"):
        assert len(value) == len(expected) == len(raw), where
        for image, data, want in zip(value, raw, expected):
            _check_image_file(data, image, want, where)
    elif kind == "list[pil]":
        assert len(value) == len(expected), where
        for image, want in zip(value, expected):
            _check_pil(image, want, where)
    elif kind == "pkl":
        assert repr(value) == expected["repr"], where
    else:
        pytest.fail(f"{where}: no check for {kind}")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_reads_every_sample_as_expected(fixtures, name):
    expected = _expected(fixtures / name)
    unsafe = name == "pickle"
    ds = ferry.StreamingDataset(batch_size=1, local=str(fixtures / name), allow_unsafe_types=unsafe)
    raw = ferry.StreamingDataset(batch_size=1, local=str(fixtures / name), allow_unsafe_types=unsafe,
                                 image_format="bytes")
    assert ds.num_samples == expected["num_samples"] == len(expected["samples"])
    kinds = {c["name"]: ferry._ferry.encoding_kind(c["encoding"]) for c in expected["columns"]}
    assert ds.columns == [c["name"] for c in expected["columns"]]
    for i, want in enumerate(expected["samples"]):
        got, got_raw = ds[i], raw[i]
        assert set(got) == set(want)
        for column, value in want.items():
            _check(kinds[column], got[column], got_raw[column], value, f"{name}[{i}].{column}")
    # Iterating gives the same samples (in shard order without shuffle).
    assert [_norm(s) for s in raw] == [_norm(raw[i]) for i in range(ds.num_samples)]


def test_a_pickle_column_needs_allow_unsafe_types(fixtures):
    with pytest.raises(ferry.FerryError, match="pkl"):
        ferry.StreamingDataset(batch_size=1, local=str(fixtures / "pickle"))


def _writer_value(kind, value, expected):
    if kind == "pkl":
        return bytes.fromhex(expected["pickle_hex"])  # the stored pickle, verbatim
    return value


WRITABLE = [n for n in FIXTURE_NAMES if n != "merged"]


@pytest.mark.parametrize("name", WRITABLE)
def test_writer_writes_the_references_bytes(fixtures, tmp_path, name):
    """Samples read back (images as their stored files) and written with the fixture's writer
    arguments give the reference writer's shards and index.json, byte for byte (raw shards;
    compressed ones are compared by the raw file's digest, as compressors differ by version)."""
    expected = _expected(fixtures / name)
    args = dict(expected["writer_args"])
    if str(args["size_limit"]).startswith("(default"):  # recorded as prose: use the default
        del args["size_limit"]
    ds = ferry.StreamingDataset(batch_size=1, local=str(fixtures / name), image_format="bytes",
                                allow_unsafe_types=name == "pickle")
    kinds = {c["name"]: ferry._ferry.encoding_kind(c["encoding"]) for c in expected["columns"]}
    out = tmp_path / "out"
    with ferry.MDSWriter(out=str(out), columns=args["columns"], compression=args["compression"],
                         hashes=args["hashes"], **({"size_limit": args["size_limit"]}
                                                   if "size_limit" in args else {})) as writer:
        for i, want in enumerate(expected["samples"]):
            sample = ds[i]
            writer.write({c: _writer_value(kinds[c], sample[c], want[c]) for c in sample})
    ours = json.loads((out / "index.json").read_text())
    theirs = json.loads((fixtures / name / "index.json").read_text())
    assert len(ours["shards"]) == len(theirs["shards"])
    for mine, ref in zip(ours["shards"], theirs["shards"]):
        assert mine["raw_data"]["basename"] == ref["raw_data"]["basename"]
        assert mine["raw_data"]["bytes"] == ref["raw_data"]["bytes"]
        assert mine["raw_data"]["hashes"] == ref["raw_data"]["hashes"]
        assert mine["samples"] == ref["samples"]
        if ref["zip_data"] is None:
            assert (out / mine["raw_data"]["basename"]).read_bytes() == (
                fixtures / name / ref["raw_data"]["basename"]).read_bytes()
    if args["compression"] is None:
        assert (out / "index.json").read_bytes() == (fixtures / name / "index.json").read_bytes()
