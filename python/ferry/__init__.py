"""ferry: train from remote object stores as fast as from local disk.

``from ferry import MDSWriter, StreamingDataset, StreamingDataLoader, Stream`` - the same
arguments as Mosaic Streaming's. torch is imported only when a torch-facing class is first
used (``import ferry`` alone, for writing datasets, does not need it).
"""

from __future__ import annotations

from . import errors
from ._ferry import metrics
from .errors import (
    DataLossError,
    FerryError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
    UnavailableError,
)
from .writer import MDSWriter

__version__ = "0.1.0"

_LAZY = {
    "StreamingDataset": "dataset",
    "Stream": "dataset",
    "StreamingDataLoader": "dataloader",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ferry' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "DataLossError",
    "FerryError",
    "InvalidArgumentError",
    "MDSWriter",
    "NotFoundError",
    "PermissionDeniedError",
    "Stream",
    "StreamingDataLoader",
    "StreamingDataset",
    "UnauthenticatedError",
    "UnavailableError",
    "errors",
    "metrics",
]
