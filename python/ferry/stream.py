"""Stream: one source of samples for StreamingDataset; streams_registry, the Stream classes
StreamingDataset(stream_name=...) can build; and the argument checks the Python classes share."""

from __future__ import annotations

import hashlib
import numbers
import operator
import os
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

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


def _egress(egress: Optional[Dict[str, Dict[str, Any]]],
            sources: List[Optional[str]]) -> Dict[str, Dict[str, Any]]:
    """``egress`` checked: each key a source of the stream, each value {"label", "usd_per_gb",
    "budget", "epoch_budget"} (all optional; a budget in bytes or "500gb")."""
    out: Dict[str, Dict[str, Any]] = {}
    for url, given in (egress or {}).items():
        url = _path(url, "egress")
        if url not in sources:
            raise InvalidArgumentError(
                f"egress for {url}, which is not the stream's remote or one of its mirrors")
        unknown = set(given) - {"label", "usd_per_gb", "budget", "epoch_budget"}
        if unknown:
            raise InvalidArgumentError(
                f"egress for {url}: unknown keys {sorted(unknown)} "
                "(label, usd_per_gb, budget, epoch_budget)")
        price = float(given.get("usd_per_gb") or 0)
        if price < 0:
            raise InvalidArgumentError(f"egress for {url}: a negative price")
        out[url] = {"label": str(given.get("label") or ""), "usd_per_gb": price,
                    "budget": _size(given.get("budget"), f"egress budget of {url}"),
                    "epoch_budget": _size(given.get("epoch_budget"),
                                          f"egress epoch_budget of {url}")}
    return out


def _count(value: Any, name: str, minimum: int = 0) -> Optional[int]:
    # The upper bound is the engine's type (uint32, uint64): the native module names the option
    # when a value does not fit.
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")


def _path(value: Any, name: str) -> Optional[str]:
    """A URL or path argument as a string; anything else (a list of them, a number) is an error
    naming the argument, never turned into a path by str(). A ``remote`` may be a list of tar
    URLs, as WebDataset takes them: it becomes their "::" list."""
    if value is None or isinstance(value, str):
        return value
    if (name == "remote" and isinstance(value, (list, tuple)) and value
            and all(isinstance(v, str) and v.endswith(_TAR_SUFFIXES) for v in value)):
        return "::".join(value)
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


def _local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", 0))


def _weight(value: Any, name: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"`{name}` must be a number, not {value!r}")
    if not value >= 0:  # NaN too
        raise InvalidArgumentError(f"`{name}` must be non-negative, got {value!r}")
    return float(value)


def _whole(value: Any, name: str) -> Optional[int]:
    if value is None:
        return None
    try:
        whole = operator.index(value) if not isinstance(value, bool) else None
    except TypeError:
        whole = None
    if whole is None:
        raise InvalidArgumentError(f"`{name}` must be a whole number, not {value!r}")
    if whole < 0:
        raise InvalidArgumentError(f"`{name}` must be non-negative, got {whole}")
    return whole


class Stream:
    """One source of samples for ``StreamingDataset``, as Mosaic Streaming's ``Stream``.

    ``remote``: any store URL, or None for data already in ``local``; for WebDataset tars of one
    folder also a brace pattern (``"s3://b/train-{000000..000127}.tar"``), a "::" list of tar
    URLs, or a Python list of them (docs/python.md). A list of dataset folders holding the same
    dataset (``["az://staged/train", "s3://source/train"]``) is one remote and its ``mirrors``,
    in preference order: each shard comes from the first that answers, and a failed read goes on
    from the next at the byte it reached (docs/sources.md). ``egress``: per source URL (the
    remote or a mirror), ``{"label": "aws-us-east-1", "usd_per_gb": 0.09, "budget": "500gb"}``:
    its name in the counters (``/ferry/source/<label>/bytes_read``), its egress price, and the
    bytes it may deliver into the node's cache from the open on (then reads go to the other
    mirrors, and with none left raise ``ResourceExhaustedError`` rather than spend more);
    ``"epoch_budget"`` the same for each epoch.
    ``local``: its cache folder
    (or, without ``remote``, the dataset's folder); unset, Mosaic's folder for the remote,
    ``<tempdir>/<blake2s of remote>/<split>``, so that a cache Mosaic filled there is read
    (created if missing). With neither, that folder is ``<tempdir>/<split>``, which must not exist
    (``FileExistsError``, as Mosaic); such a stream then has no data to read. ``split``: the
    sub-folder of both (``''`` for none).

    How much of it an epoch takes: at most one of ``proportion`` (its share of the dataset's
    ``epoch_size``, or of all the streams' samples without one; every stream must then give a
    proportion), ``repeat`` (copies, rounded down to whole samples) or ``choose`` (samples). Once a
    ``StreamingDataset`` is built from it, all three hold the resolved values.

    ``download_retry``, ``download_timeout``, ``validate_hash``, ``keep_zip``: None takes the
    dataset's value (``apply_default``). ferry retries and times out downloads by its own policy
    (docs/python.md), so the first two are kept as attributes only; ``keep_zip`` from any stream
    keeps compressed files for all of them, and the streams of one dataset must agree on
    ``validate_hash``.
    """

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
        mirrors: Optional[Sequence[str]] = None,
        egress: Optional[Dict[str, Dict[str, Any]]] = None,
    ) -> None:
        if isinstance(mirrors, (str, os.PathLike)):
            mirrors = [mirrors]
        mirrors = list(mirrors or [])
        if isinstance(remote, (list, tuple)) and remote and not all(
                isinstance(v, str) and v.endswith(_TAR_SUFFIXES) for v in remote):
            remote, mirrors = remote[0], list(remote[1:]) + mirrors
        remote, local, split = _path(remote, "remote"), _path(local, "local"), _path(split, "split")
        self.remote = remote
        #: The other places holding this dataset, after ``remote`` in preference order.
        self.mirrors: List[str] = [_path(m, "mirrors") for m in mirrors]
        if self.mirrors and remote is None:
            raise InvalidArgumentError("`mirrors` need a `remote`: the first place to read from")
        #: Egress accounting per source, by URL: {"label", "usd_per_gb", "budget",
        #: "epoch_budget"} each.
        self.egress: Dict[str, Dict[str, Any]] = _egress(egress, [remote, *self.mirrors])
        self._local = local
        self.split = split or ""
        if sum(x is not None for x in (proportion, repeat, choose)) > 1:
            raise InvalidArgumentError(
                "give at most one of `proportion`, `repeat` and `choose`: the others are derived")
        # What the user gave (None: not given); the public attributes hold the resolved values
        # once a dataset is built.
        self._proportion = self.proportion = _weight(proportion, "proportion")
        self._repeat = self.repeat = _weight(repeat, "repeat")
        self._choose = self.choose = _whole(choose, "choose")
        self._resolved: Optional[Tuple[Any, Any, Any]] = None
        self._download_retry = self.download_retry = _whole(download_retry, "download_retry")
        if download_timeout is not None and (isinstance(download_timeout, bool) or not isinstance(
                download_timeout, numbers.Real) or not download_timeout > 0):
            raise InvalidArgumentError(
                f"`download_timeout` must be positive, got {download_timeout!r}")
        self._download_timeout = self.download_timeout = download_timeout
        self.validate_hash = validate_hash
        if local is not None:
            self.local = local
        else:
            self.local = self._get_temporary_directory()
            if remote is not None:
                # The folder Mosaic caches this remote in: reused, whoever filled it (the cache
                # checks its index against the remote's).
                os.makedirs(self.local, exist_ok=True)
            elif _local_rank() == 0:
                # Without a remote the folder is no cache of anything: a fresh one, as Mosaic.
                if os.path.exists(self.local):
                    raise FileExistsError(
                        f"Could not create a temporary local directory {self.local} because it "
                        f"already exists: give the stream a `remote`, or a `local` folder")
                os.makedirs(self.local)
        self._keep_zip = self.keep_zip = keep_zip
        self.safe_keep_zip: Optional[bool] = None
        if keep_zip is not None:
            self.safe_keep_zip = bool(keep_zip) or self.remote in (None, self.local)

    def _get_temporary_directory(self) -> str:
        """The default ``local``: Mosaic's folder for this remote and split."""
        digest = ""
        if self.remote is not None:
            digest = hashlib.blake2s(self.remote.encode("utf-8"), digest_size=16).hexdigest()
        return os.path.join(tempfile.gettempdir(), digest, self.split)

    def apply_default(self, default: Dict[str, Any]) -> None:
        """Sets what the stream was not given from the dataset's ``default`` (a dict with
        ``split``, ``download_retry``, ``download_timeout``, ``validate_hash``, ``keep_zip``)."""
        if not (self.remote or self._local):
            raise InvalidArgumentError(
                "`remote` and/or `local` path must be provided: this stream has neither")
        if not self.split:
            self.split = default.get("split") or ""
        if self._download_retry is None:
            self.download_retry = default.get("download_retry")
        if self._download_timeout is None:
            self.download_timeout = default.get("download_timeout")
        if self.validate_hash is None:
            self.validate_hash = default.get("validate_hash") or None
        if self._keep_zip is None:
            self.keep_zip = bool(default.get("keep_zip"))
            self.safe_keep_zip = self.keep_zip or self.remote in (None, self.local)

    def get_index_size(self) -> int:
        """Bytes of the stream's ``index.json`` in its local folder (there once a dataset has
        opened the stream)."""
        return os.stat(os.path.join(self.local, self.split, "index.json")).st_size

    def _given_weights(self) -> Tuple[Optional[float], Optional[float], Optional[int]]:
        """(proportion, repeat, choose) as the user set them. The resolved values a dataset wrote
        count as unset, so that a stream can serve another dataset."""
        current = (self.proportion, self.repeat, self.choose)
        if self._resolved is not None and current == self._resolved:
            return self._proportion, self._repeat, self._choose
        return (_weight(self.proportion, "proportion"), _weight(self.repeat, "repeat"),
                _whole(self.choose, "choose"))

    def _set_weights(self, proportion: float, repeat: float, choose: int) -> None:
        self.proportion, self.repeat, self.choose = proportion, repeat, choose
        self._resolved = (proportion, repeat, choose)

    @classmethod
    def validate_weights(cls, streams: Sequence["Stream"]) -> Tuple[bool, bool]:
        """(relative, unspecified): whether the streams are weighted by proportion, and whether
        none gives a weight. Proportions in some streams and not in others are an error."""
        weights = [stream._given_weights() for stream in streams]
        relative = bool(weights) and weights[0][0] is not None
        unspecified = True
        for stream_id, given in enumerate(weights):
            if sum(x is not None for x in given) > 1:
                raise InvalidArgumentError(
                    f"Streams must provide at most one of `proportion`, `repeat`, or `choose` "
                    f"(error in stream {stream_id})")
            if (given[0] is not None) != relative:
                raise InvalidArgumentError(
                    f"Relative (`proportion`) and absolute (`repeat`, `choose`, none) stream "
                    f"weights are incompatible with each other (error in stream {stream_id})")
            if any(x is not None for x in given):
                unspecified = False
        return relative, unspecified

    @classmethod
    def apply_weights(cls, streams: Sequence["Stream"], samples_per_stream: Sequence[int],
                      choose_per_epoch: Optional[int], seed: int) -> int:
        """Resolves every stream's proportion, repeat and choose from the samples each holds and
        sets them on the streams; returns the samples per epoch. ``choose_per_epoch`` is the
        epoch size (for proportions, or no weights); the samples that rounding leaves over go to
        streams drawn with ``seed`` (the engine's rule: src/stream/stream_mix.h)."""
        cls.validate_weights(streams)
        resolved, epoch_size = _ferry.resolve_stream_weights(
            [int(n) for n in samples_per_stream], [s._given_weights() for s in streams],
            int(choose_per_epoch) if choose_per_epoch else None, int(seed))
        for stream, weights in zip(streams, resolved):
            stream._set_weights(*weights)
        return epoch_size

    def _options(self) -> Dict[str, Any]:
        proportion, repeat, choose = self._given_weights()
        return {
            "remote": self.remote,
            "mirrors": self.mirrors,
            "egress": self.egress,
            "local": self.local,
            "split": self.split,
            "proportion": proportion,
            "repeat": repeat,
            "choose": choose,
        }


class RegistryError(InvalidArgumentError):
    """A name the registry does not hold."""


class Registry:
    """Named factories (a class, or a function returning an object), as the ``catalogue``
    registries Mosaic Streaming keeps: ``register(name, func=f)`` adds one (or, without ``func``,
    returns a decorator that does), ``get(name)`` returns it. Registering a name again replaces
    its entry. Unlike catalogue, it reads no package entry points."""

    def __init__(self, name: str, description: str = "") -> None:
        self.name = name
        self.description = description
        self._entries: Dict[str, Callable[..., Any]] = {}

    def register(self, name: str, *, func: Optional[Callable[..., Any]] = None):
        if func is None:
            return lambda f: self.register(name, func=f)
        if not callable(func):
            raise InvalidArgumentError(f"{self.name}: {name!r} must be a class or a function")
        self._entries[name] = func
        return func

    def __call__(self, name: str, func: Optional[Callable[..., Any]] = None):
        return self.register(name, func=func)

    register_class = register

    def get(self, name: str) -> Callable[..., Any]:
        try:
            return self._entries[name]
        except KeyError:
            raise RegistryError(f"{self.name} has no {name!r}; it holds "
                                f"{', '.join(map(repr, sorted(self._entries))) or 'nothing'}"
                                ) from None

    def get_all(self) -> Dict[str, Callable[..., Any]]:
        return dict(self._entries)

    def has(self, name: str) -> bool:
        return name in self._entries

    __contains__ = has


streams_registry = Registry(
    "streams_registry",
    "Stream classes StreamingDataset(stream_name=...) builds its one stream with.")
streams_registry.register("stream", func=Stream)


__all__ = ["Registry", "RegistryError", "Stream", "streams_registry"]
