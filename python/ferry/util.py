"""The helpers Mosaic Streaming users import from ``streaming.base.util``, with the same
signatures, values and exception classes.

``merge_index`` is done by the native library (the code behind ``ferry merge-index``), reading and
writing through any store ferry knows. Importing this module does not import torch.
"""

from __future__ import annotations

import collections.abc
import functools
import logging
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Optional, Sequence, Tuple, Type, TypeVar, Union

from . import _ferry, errors

logger = logging.getLogger(__name__)

_F = TypeVar("_F", bound=Callable[..., Any])

# Mosaic's suffixes, in the order it tries them; binary sizes for bytes, decimal for counts.
_BYTE_UNITS = {
    "kb": 1024,
    "mb": 1024**2,
    "gb": 1024**3,
    "tb": 1024**4,
    "pb": 1024**5,
    "eb": 1024**6,
    "zb": 1024**7,
    "yb": 1024**8,
}
_COUNT_UNITS = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def _is_remote_url(path: str) -> bool:
    """True for a URL of a remote store: scheme://..., and Databricks' dbfs:/Volumes/..."""
    return ("://" in path and not path.startswith("file://")) or path[:6].lower() == "dbfs:/"


def get_list_arg(text: str) -> List[str]:
    """A comma-separated command-line value as a list: ``"a,b"`` -> ``["a", "b"]``; an empty
    value (or None) -> ``[]``."""
    return text.split(",") if text else []


def _number(value: Any, name: str) -> Optional[int]:
    """An int for a number (floats are truncated, as Mosaic does); None for text."""
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        return None
    try:  # numpy scalars and other numbers
        return int(value.__index__() if hasattr(value, "__index__") else float(value))
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a number or a string, got {value!r}") from None


def _unsupported(text: str, suffixes: List[str]) -> ValueError:
    return errors.InvalidArgumentError(
        f"Unsupported value/suffix {text}. Supported suffix are {suffixes}."
    )


def _with_suffix(text: str, units: dict, suffixes: List[str]) -> Optional[int]:
    """``text`` (lowercase, stripped) by the first unit it ends with; None when it ends with none.
    Multiplied as a float, as Mosaic does, so that "1.39gb" gives its result to the last digit."""
    for suffix, scale in units.items():
        if text.endswith(suffix):
            try:
                return int(float(text[: -len(suffix)]) * scale)
            except (ValueError, OverflowError):
                raise _unsupported(text, suffixes) from None
    return None


def bytes_to_int(bytes_str: Union[int, float, str]) -> int:
    """A size in bytes: ``"100kb"`` = 102400, ``"1.5gb"``, ``"50b"`` = 50, ``"1234"``; numbers are
    truncated to int. Units are binary (kb = 1024) up to yb; case and surrounding spaces are
    ignored. ValueError ("Unsupported value/suffix ...") for anything else."""
    number = _number(bytes_str, "bytes_to_int")
    if number is not None:
        return number
    text = bytes_str.lower().strip()
    suffixes = ["b"] + list(_BYTE_UNITS)
    value = _with_suffix(text, _BYTE_UNITS, suffixes)
    if value is not None:
        return value
    if text.endswith("b") and text[:-1].isdigit():
        return int(text[:-1])
    if text.isdigit():
        return int(text)
    raise _unsupported(text, suffixes)


def number_abbrev_to_int(abbrev_str: Union[int, float, str]) -> int:
    """A count: ``"1b"`` = 10**9, ``"100k"`` = 10**5, ``"1.5m"``, ``"1234"``; numbers are
    truncated to int. Units are decimal (k, m, b, t); case and surrounding spaces are ignored.
    ValueError ("Unsupported value/suffix ...") for anything else."""
    number = _number(abbrev_str, "number_abbrev_to_int")
    if number is not None:
        return number
    text = abbrev_str.lower().strip()
    value = _with_suffix(text, _COUNT_UNITS, list(_COUNT_UNITS))
    if value is not None:
        return value
    if text.isdigit():
        return int(text)
    raise _unsupported(text, list(_COUNT_UNITS))


def wait_for_file_to_exist(filename: str, poll_interval: float, timeout: float,
                           err_msg: str) -> None:
    """Waits until ``filename`` exists, checking every ``poll_interval`` seconds; RuntimeError
    (``err_msg`` followed by the times) once ``timeout`` seconds have passed."""
    start = time.time()
    while True:
        time.sleep(poll_interval)
        if os.path.exists(filename):
            time.sleep(poll_interval)  # as Mosaic: let the writer finish what it just created
            return
        elapsed = time.time() - start
        if elapsed > timeout:
            raise RuntimeError(f"{err_msg}{timeout:.3f} < {elapsed:.3f} secs.")


def clean_stale_shared_memory() -> None:
    """Does nothing: ferry keeps no state in shared memory, so no run can leave any behind.
    (Mosaic's version removes the shared memory its crashed runs leaked.)"""


def retry(
    exc_class: Union[Type[BaseException], Sequence[Type[BaseException]], Callable] = Exception,
    clean_up_fn: Optional[Callable[[], None]] = None,
    num_attempts: int = 3,
    initial_backoff: float = 1.0,
    max_jitter: float = 0.5,
):
    """Decorator: call the function again when it raises ``exc_class`` (a class or a sequence of
    classes), up to ``num_attempts`` calls in all, sleeping
    ``initial_backoff * 2**i + random.random() * max_jitter`` seconds after failed attempt
    ``i`` (from 0) and calling ``clean_up_fn`` after every failed attempt. The last failure is
    raised as it was. Usable bare (``@retry``) or with arguments (``@retry(OSError, ...)``).
    ValueError when ``num_attempts`` < 1."""
    if num_attempts < 1:
        raise errors.InvalidArgumentError(f"num_attempts must be at-least 1, got {num_attempts}")
    bare = not isinstance(exc_class, collections.abc.Sequence) and not (
        isinstance(exc_class, type) and issubclass(exc_class, BaseException)
    )
    func = exc_class if bare else None
    # `except` takes a class or a tuple; Mosaic also documents other sequences (a list).
    catch = Exception if bare else (
        tuple(exc_class) if isinstance(exc_class, collections.abc.Sequence) else exc_class
    )

    def decorate(fn: _F) -> _F:
        @functools.wraps(fn)
        def attempt(*args: Any, **kwargs: Any):
            for i in range(num_attempts):
                try:
                    return fn(*args, **kwargs)
                except catch as e:
                    if clean_up_fn is not None:
                        clean_up_fn()
                    logger.debug("Attempt %d/%d failed with: %s", i + 1, num_attempts, e)
                    if i + 1 == num_attempts:
                        raise
                    time.sleep(initial_backoff * 2**i + random.random() * max_jitter)

        return attempt  # type: ignore[return-value]

    return decorate(func) if bare else decorate


# --- merge_index ------------------------------------------------------------------------------

_READERS = 16  # sub-indexes read at once: each is a small object a round trip away
_RUNTIME_ERRORS: dict = {}  # ferry error class -> the same class that is also a RuntimeError


def _as_runtime_error(error: errors.FerryError) -> errors.FerryError:
    """``error`` as Mosaic's merge_index reports a sub-index it could not fetch (RuntimeError),
    still of its ferry class (a missing file stays a FileNotFoundError)."""
    if isinstance(error, RuntimeError):
        return error
    cls = _RUNTIME_ERRORS.get(type(error))
    if cls is None:
        cls = type(type(error).__name__, (type(error), RuntimeError), {"__module__": __name__})
        _RUNTIME_ERRORS[type(error)] = cls
    return cls(f"Failed to download index.json: {error}")


def _split_out(out: Union[str, os.PathLike, Tuple[str, str]]) -> Tuple[str, Optional[str]]:
    """(local, remote) of an ``out`` as Mosaic's writers take it: a path or URL, or a pair."""
    if isinstance(out, tuple):
        if len(out) != 2:
            raise errors.InvalidArgumentError(
                f"Invalid `out` argument {out!r}: a path or URL, or a (local, remote) pair"
            )
        return os.fspath(out[0]), os.fspath(out[1])
    return os.fspath(out), None


def _outputs(out: Union[str, Tuple[str, str]], keep_local: bool) -> List[str]:
    local, remote = _split_out(out)
    if remote is None:
        # A plain folder is where the merged index goes; keep_local=False does not remove it
        # (Mosaic removes the whole folder, dataset included).
        return [local]
    return [remote, local] if keep_local else [remote]


def _read_sub_index(url: str, timeout: Optional[float]) -> Tuple[str, str, bytes]:
    try:
        return _ferry.read_sub_index(url, timeout)
    except errors.FerryError as e:
        raise _as_runtime_error(e) from e


def _merge_index_from_list(
    index_file_urls: Sequence[Union[str, Tuple[str, str]]],
    out: Union[str, Tuple[str, str]],
    keep_local: bool = True,
    download_timeout: Optional[float] = 60,
) -> None:
    if not index_file_urls or not out:
        logger.warning("Either index_file_urls or out are None. Need to specify both "
                       "`index_file_urls` and `out`. No index merged")
        return
    if download_timeout is not None and not download_timeout > 0:
        raise errors.InvalidArgumentError(
            f"download_timeout must be a positive number of seconds, got {download_timeout!r}"
        )
    sources: List[str] = []
    for item in index_file_urls:
        if isinstance(item, (tuple, list)):
            local, remote = (os.fspath(part).strip().rstrip("/") for part in item)
            source = local if local and os.path.exists(local) else remote
            if not source:
                raise errors.NotFoundError(
                    f"Check data availability! local index {local} is not accessible. "
                    f"remote index {remote} does not have a valid url format"
                )
        else:
            source = os.fspath(item).strip().rstrip("/")
        if source not in sources:
            sources.append(source)
    outputs = _outputs(out, keep_local)
    with ThreadPoolExecutor(min(_READERS, len(sources))) as pool:
        parts = list(pool.map(lambda url: _read_sub_index(url, download_timeout), sources))
    text, _ = _ferry.merge_index_parts(parts)
    _ferry.write_merged_index(outputs, text)


def _merge_index_from_root(
    out: Union[str, Tuple[str, str]],
    keep_local: bool = True,
    download_timeout: Optional[float] = 60,
) -> None:
    if not out:
        logger.warning("No MDS dataset folder specified, no index merged")
        return
    local, remote = _split_out(out)
    root = (remote or local).rstrip("/")
    sources = []
    for path, _ in _ferry.find_sub_indexes(root):
        # With a (local, remote) pair the remote lists the parts; a local copy is read instead
        # where there is one.
        copy = os.path.join(local, path) if remote is not None else None
        sources.append(copy if copy and os.path.isfile(copy) else f"{root}/{path}")
    _merge_index_from_list(sources, out, keep_local, download_timeout)


def merge_index(*args: Any, **kwargs: Any) -> None:
    """Writes the index.json of a dataset whose parts are MDS datasets of their own, as Mosaic's
    ``merge_index`` does: each part's shards in order, their basenames prefixed with the name of
    the folder that holds the part's index.json. Two forms:

    ``merge_index(index_file_urls, out, keep_local=True, download_timeout=60)``: the given
    index.json files (paths or URLs; a ``(local, remote)`` pair reads the local file when it
    exists, else the remote one; duplicates are dropped) into ``out``.

    ``merge_index(out, keep_local=True, download_timeout=60)``: every index.json below ``out``
    (not ``out``'s own), in path order. (Mosaic's local form takes every ``*.json``.)

    ``out`` is a local folder, a store URL (written there directly), or a ``(local, remote)``
    pair (written to both; with ``keep_local=False`` to the remote only). ``keep_local`` has no
    effect on a plain local ``out``: the merged index there is the result. ``download_timeout``
    bounds the read of each index.json, in seconds.

    A part that cannot be read is a RuntimeError ("Failed to download index.json: ...") that is
    also ferry's error for the cause (a missing file is also a ``FileNotFoundError``); a
    ``(local, remote)`` pair with neither is a ``FileNotFoundError`` ("Check data
    availability!"). An index.json already in ``out`` is never overwritten
    (``ferry.errors.AlreadyExistsError``, a ``FileExistsError``), nor is any written then.
    """
    first = args[0] if args else kwargs.get("index_file_urls", kwargs.get("out"))
    count = len(args) + len(kwargs)
    if isinstance(first, list) and 2 <= count <= 4:
        return _merge_index_from_list(*args, **kwargs)
    if isinstance(first, (str, tuple, os.PathLike)) and 1 <= count <= 3:
        return _merge_index_from_root(*args, **kwargs)
    raise errors.InvalidArgumentError(f"Invalid arguments to merge_index: {args}, {kwargs}")


__all__ = [
    "bytes_to_int",
    "clean_stale_shared_memory",
    "get_list_arg",
    "merge_index",
    "number_abbrev_to_int",
    "retry",
    "wait_for_file_to_exist",
]
