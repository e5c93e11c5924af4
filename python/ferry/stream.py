"""Stream: one source of samples for StreamingDataset, and the argument checks the Python
classes share."""

from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Any, Dict, Optional, Union

from . import _ferry
from .errors import InvalidArgumentError


def _size(value: Union[int, str, None], name: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be bytes or a size such as '100gb'")
    if isinstance(value, int):
        if value < 0:
            raise InvalidArgumentError(f"{name} must not be negative, got {value}")
        return value
    if isinstance(value, str):
        return _ferry.parse_size(value)
    raise InvalidArgumentError(f"{name} must be bytes or a size such as '100gb', not {value!r}")


def _count(value: Any, name: str, minimum: int = 0) -> Optional[int]:
    # The upper bound is the engine's type (uint32, uint64): the native module names the option
    # when a value does not fit.
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


def _path(value: Any, name: str) -> Optional[str]:
    """A URL or path argument as a string; anything else (a list of them, a number) is an error
    naming the argument, never turned into a path by str()."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str):
            return path
    several = (" (for several datasets, give streams=[Stream(remote=..., local=...), ...])"
               if isinstance(value, (list, tuple)) else "")
    raise InvalidArgumentError(
        f"{name} must be a URL or a path (a str), not {type(value).__name__} {value!r}{several}")


def _default_local(remote: str, split: Optional[str]) -> str:
    digest = hashlib.sha1(f"{remote}\0{split or ''}".encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), "ferry-cache", digest)


class Stream:
    """One source of samples: ``remote`` (any store URL, or None for data already in ``local``),
    ``local`` (its cache folder), ``split``, and how much of it an epoch takes: at most one of
    ``proportion`` (of ``epoch_size``), ``repeat`` (copies) or ``choose`` (samples)."""

    def __init__(
        self,
        *,
        remote: Optional[str] = None,
        local: Optional[str] = None,
        split: Optional[str] = None,
        proportion: Optional[float] = None,
        repeat: Optional[float] = None,
        choose: Optional[int] = None,
        download_retry: Optional[int] = None,
        download_timeout: Optional[float] = None,
        validate_hash: Optional[str] = None,
        keep_zip: Optional[bool] = None,
    ) -> None:
        remote, local, split = _path(remote, "remote"), _path(local, "local"), _path(split, "split")
        if remote is None and local is None:
            raise InvalidArgumentError("a stream needs a remote, a local folder, or both")
        if sum(x is not None for x in (proportion, repeat, choose)) > 1:
            raise InvalidArgumentError("give at most one of proportion, repeat and choose")
        for name, value in (("proportion", proportion), ("repeat", repeat)):
            if value is not None and (isinstance(value, bool) or value < 0):
                raise InvalidArgumentError(f"{name} must be >= 0, got {value!r}")
        self.remote = remote
        self.local = local if local is not None else _default_local(remote, split)
        self.split = split
        self.proportion = proportion
        self.repeat = repeat
        self.choose = _count(choose, "choose")
        self.validate_hash = validate_hash
        self.keep_zip = keep_zip

    def _options(self) -> Dict[str, Any]:
        return {
            "remote": self.remote,
            "local": self.local,
            "split": self.split,
            "proportion": self.proportion,
            "repeat": self.repeat,
            "choose": self.choose,
        }


__all__ = ["Stream"]
