"""Python values <-> what the native module stores and returns, per column encoding.

Writing (``encoder``): what needs Python libraries happens here, the way Mosaic Streaming's
writer does it, so the bytes stored are the same: ``json.dumps`` for ``json``, ``pickle.dumps``
for ``pkl``, PIL's encoders for ``jpeg``/``png``, ``str(Decimal)`` for ``str_decimal``; numpy
scalars become Python numbers and arrays are made C-contiguous and little-endian. Bytes-like
values are stored verbatim in a column of any encoding (the pre-encoded path).

Reading (``decoder``): the native module returns plain values; these become what the reference
reader returns: numpy scalars for the sized numbers, ``Decimal``, parsed JSON, PIL images (or
uint8 arrays with ``image_format="numpy"``, or the stored JPEG/PNG files undecoded with
``image_format="bytes"``), unpickled objects where unsafe types are allowed.
"""

from __future__ import annotations

import io
import json
import os
import pickle
from decimal import Decimal
from typing import Any, Callable, Optional

import numpy as np

from . import _ferry
from .errors import InvalidArgumentError

_NUMPY_SCALARS = {
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
}

_BYTES_LIKE = (bytes, bytearray, memoryview)


def _pil():
    from PIL import Image  # imported on first image column only

    return Image


def _jpeg_quality(encoding: str) -> Optional[int]:
    # "jpeg:90" (a later reference version) fixes the quality; plain "jpeg" uses PIL's 75.
    _, _, quality = encoding.partition(":")
    return int(quality) if quality else None


def _image(value: Any, column: str, encoding: str):
    Image = _pil()
    if isinstance(value, Image.Image):
        return value
    if isinstance(value, np.ndarray):
        return Image.fromarray(value)
    raise InvalidArgumentError(
        f"column {column!r}: a {type(value).__qualname__} cannot be stored as {encoding} "
        "(give a PIL image, a uint8 array or encoded bytes)"
    )


def _encode_file(value: Any, column: str, encoding: str, fmt: str) -> bytes:
    if isinstance(value, _BYTES_LIKE):
        return bytes(value)
    image = _image(value, column, encoding)
    if fmt == "JPEG":
        # As the reference: a JPEG opened from a file that still exists is stored verbatim.
        filename = getattr(image, "filename", "")
        if image.format == "JPEG" and filename and os.path.exists(filename):
            with open(filename, "rb") as f:
                return f.read()
        quality = _jpeg_quality(encoding)
        out = io.BytesIO()
        if quality is None:
            image.save(out, format="JPEG")
        else:
            image.save(out, format="JPEG", quality=quality)
        return out.getvalue()
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def _encode_pil(value: Any, column: str, encoding: str):
    if isinstance(value, _BYTES_LIKE):
        return bytes(value)
    image = _image(value, column, encoding)
    return (image.mode, image.width, image.height, image.tobytes())


def _encode_array(value: Any, column: str, encoding: str):
    if isinstance(value, _BYTES_LIKE):
        return bytes(value)
    if not isinstance(value, np.ndarray):
        raise InvalidArgumentError(
            f"column {column!r}: a {type(value).__qualname__} cannot be stored as {encoding} "
            "(give a numpy array)"
        )
    array = np.ascontiguousarray(value)
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and not _LITTLE):
        # Stored little-endian, with the values kept (the reference writes big-endian bytes
        # under a little-endian label, which reads back wrong).
        array = array.astype(array.dtype.newbyteorder("<"))
    return array


_LITTLE = np.little_endian


def _number(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def encoder(column: str, encoding: str) -> Callable[[Any], Any]:
    """A function that turns one Python value of `column` into what the native writer takes."""
    kind = _ferry.encoding_kind(encoding)

    def verbatim_or(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def encode(value: Any) -> Any:
            if isinstance(value, _BYTES_LIKE):
                return bytes(value)
            return convert(value)

        return encode

    if kind == "json":
        return verbatim_or(
            lambda v: json.dumps(v.tolist() if isinstance(v, np.ndarray) else v)
        )
    if kind == "pkl":
        return verbatim_or(pickle.dumps)
    if kind == "str_decimal":
        return verbatim_or(lambda v: str(v) if isinstance(v, Decimal) else v)
    if kind == "jpeg":
        return lambda v: _encode_file(v, column, encoding, "JPEG")
    if kind == "png":
        return lambda v: _encode_file(v, column, encoding, "PNG")
    if kind == "pil":
        return lambda v: _encode_pil(v, column, encoding)
    if kind in ("list[jpeg]", "list[png]", "list[pil]", "jpeg_array"):
        element = {
            "list[jpeg]": lambda v: _encode_file(v, column, encoding, "JPEG"),
            "list[png]": lambda v: _encode_file(v, column, encoding, "PNG"),
            "list[pil]": lambda v: _encode_pil(v, column, encoding),
            "jpeg_array": lambda v: _encode_file(v, column, encoding, "JPEG"),
        }[kind]

        def encode_list(value: Any) -> Any:
            if isinstance(value, _BYTES_LIKE):
                return bytes(value)
            if not isinstance(value, (list, tuple)):
                raise InvalidArgumentError(
                    f"column {column!r}: a {type(value).__qualname__} cannot be stored as "
                    f"{encoding} (give a list)"
                )
            return [element(item) for item in value]

        return encode_list
    if kind == "ndarray":
        return lambda v: _encode_array(v, column, encoding)
    return _number


def decoder(
    encoding: str, image_format: str = "pil", allow_unsafe_types: bool = False
) -> Optional[Callable[[Any], Any]]:
    """A function that finishes a native value of this encoding; None where it is final."""
    kind = _ferry.encoding_kind(encoding)
    scalar = _NUMPY_SCALARS.get(kind)
    if scalar is not None:
        return scalar
    if kind == "str_int":
        return int
    if kind == "str_decimal":
        return Decimal
    if kind == "json":
        return json.loads
    if kind == "pkl":
        return pickle.loads if allow_unsafe_types else None

    def from_file(data: bytes):
        image = _pil().open(io.BytesIO(data))
        return np.asarray(image) if image_format == "numpy" else image

    def from_pixels(raw):
        mode, width, height, pixels = raw
        image = _pil().frombytes(mode, (width, height), pixels)
        return np.asarray(image) if image_format == "numpy" else image

    if image_format == "bytes" and kind in ("jpeg", "png", "list[jpeg]", "list[png]", "jpeg_array"):
        return None  # the stored files, undecoded
    if kind in ("jpeg", "png"):
        return from_file
    if kind == "pil":
        return from_pixels
    if kind in ("list[jpeg]", "list[png]", "jpeg_array"):
        return lambda items: [from_file(item) for item in items]
    if kind == "list[pil]":
        return lambda items: [from_pixels(item) for item in items]
    return None
