"""ferry: train from remote object stores as fast as from local disk.

``from ferry import MDSWriter, StreamingDataset, StreamingDataLoader, Stream`` - the same
arguments as Mosaic Streaming's, with its ``JSONWriter``, ``CSVWriter`` and ``TSVWriter`` - and ``ferry.DataLoader`` with ``ferry.transforms``, which
decodes, transforms and collates in native threads; ``ferry.FileDataset`` for folders of many
small files. torch is imported only when a torch-facing class is first used (``import ferry``
alone, for writing datasets, does not need it). ``ferry.util`` holds the helpers of Mosaic's
``streaming.base.util`` (``merge_index``, ``bytes_to_int``, ...).
"""

from __future__ import annotations

from . import errors
from ._ferry import __version__
from ._node import metrics, serve_metrics
from .errors import (
    DataLossError,
    FailedPreconditionError,
    FerryError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
    UnavailableError,
)
from .split_writer import CSVWriter, JSONWriter, TSVWriter
from .writer import MDSWriter

_LAZY = {
    "StreamingDataset": "dataset",
    "FileDataset": "files",
    "Stream": "stream",
    "StreamingDataLoader": "dataloader",
    "DataLoader": "loader",
    "diagnose": "_diagnosis",
    "profile": "_diagnosis",
    "Profile": "_diagnosis",
    "convert": None,
    "transforms": None,
    "util": None,
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'ferry' has no attribute {name!r}")
    from importlib import import_module

    module = _LAZY[name]
    value = (import_module(f".{name}", __name__) if module is None
             else getattr(import_module(f".{module}", __name__), name))
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CSVWriter",
    "DataLoader",
    "DataLossError",
    "FailedPreconditionError",
    "FerryError",
    "FileDataset",
    "InvalidArgumentError",
    "JSONWriter",
    "MDSWriter",
    "NotFoundError",
    "PermissionDeniedError",
    "Stream",
    "StreamingDataLoader",
    "StreamingDataset",
    "TSVWriter",
    "UnauthenticatedError",
    "UnavailableError",
    "convert",
    "diagnose",
    "profile",
    "serve_metrics",
    "Profile",
    "errors",
    "metrics",
    "transforms",
    "util",
]
