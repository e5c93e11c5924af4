"""MDSWriter: write samples into MDS shards that Mosaic Streaming (and ferry) read.

The same arguments as ``streaming.MDSWriter``; the shards are byte-identical to what the
reference writes for the same samples (and to ``ferry convert``), because the encoding and the
shard rollover happen in the native library. Compression, hashing and writing of full shards run
on background threads while Python goes on encoding. What every writer does with its ``out``
(a folder, a store URL, a pair) is ``ShardWriter``'s, which the JSON, CSV and TSV writers
(``ferry.split_writer``) share.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

from . import _ferry
from ._values import encoder
from .errors import InvalidArgumentError
from .util import _is_remote_url, bytes_to_int

_DEFAULT_SIZE_LIMIT = 1 << 26
# The keyword arguments Mosaic's writers take besides the named ones.
_MOSAIC_KWARGS = ("progress_bar", "max_workers", "retry", "exist_ok")
# A finished shard: the writer renames it into place from "<name>.tmp.<pid>.<n>" when complete.
_SHARD_FILE = re.compile(r"^shard\.\d+\.(mds|json|csv|tsv)(\.meta)?(\.[a-z0-9]+)?$")
_SCAN_INTERVAL_S = 0.1


class UnsupportedEncodingError(InvalidArgumentError, TypeError):
    """A column encoding MDS does not have (a TypeError, as Mosaic raises; also a ValueError)."""


class MissingColumnError(InvalidArgumentError, KeyError):
    """A sample without a value for a column (a KeyError, as Mosaic raises; also a ValueError)."""

    def __str__(self) -> str:  # KeyError's would quote the message
        return str(self.args[0]) if self.args else ""


def resolve_size_limit(size_limit: Union[int, float, str, None]) -> Optional[int]:
    """Bytes, or a size Mosaic's ``bytes_to_int`` reads ("64mb"); None, 0 and "" mean no limit
    (one shard). ValueError, with Mosaic's messages, below 0 and at 2**32 or more."""
    if not size_limit:
        return None
    value = bytes_to_int(size_limit)
    if value < 0:
        raise InvalidArgumentError(
            f"`size_limit` must be greater than zero, instead, found as {value}."
        )
    if value >= 2**32:
        raise InvalidArgumentError(
            f"`size_limit` must be less than 2**32, instead, found as {value}. This is because "
            f"sample byte offsets are stored with uint32."
        )
    return value or None


class ShardWriter:
    """What every writer does with its ``out``: a local folder; a store URL (``s3://``,
    ``az://``, ``gs://``, ...), where shards are written to a temporary local folder and each
    shard file is uploaded as soon as it is complete, ``index.json`` last, when the writer
    finishes; or a ``(local, remote)`` pair. The base of ``MDSWriter`` and of ``JSONWriter``,
    ``CSVWriter`` and ``TSVWriter`` (``ferry.split_writer``), which give it their native writer."""

    format = ""

    def _check_arguments(
        self,
        kwargs: Mapping[str, Any],
        accepted: Sequence[str],
        takes: str,
        columns: Any,
        why_unsupported: Callable[[str], Optional[str]],
    ) -> None:
        """Mosaic's checks of a writer's arguments: no keyword beyond Mosaic's common ones and
        ``accepted`` ("Invalid Writer argument(s)", listing what the writer ``takes``); columns
        a non-empty dict; each encoding one that ``why_unsupported`` finds no fault with."""
        kind = type(self).__name__
        unknown = [k for k in kwargs if k not in _MOSAIC_KWARGS + tuple(accepted)]
        if unknown:
            raise InvalidArgumentError(
                f"Invalid Writer argument(s): {unknown} ({kind} takes {takes})"
            )
        if not isinstance(columns, Mapping) or not columns:
            raise InvalidArgumentError("columns must be a non-empty dict of name -> encoding")
        for name in sorted(columns):
            why = why_unsupported(str(columns[name]))
            if why is not None:
                raise UnsupportedEncodingError(
                    f"{kind} passed column `{name}` with encoding `{columns[name]}` is "
                    f"unsupported ({why})"
                )

    def _open(
        self,
        out: Union[str, Tuple[str, str]],
        keep_local: bool,
        columns: Mapping[str, str],
        compression: Optional[str],
        hashes: Optional[Sequence[str]],
        size_limit: Union[int, str, None],
        exist_ok: bool,
        max_workers: Optional[int],
        make_native: Callable[[str, bool], Any],
    ) -> None:
        """Settles ``out`` and the settings, then opens ``make_native(local, exist_ok)``."""
        resolved_size_limit = resolve_size_limit(size_limit)  # before a temporary folder exists
        if isinstance(out, (tuple, list)):
            if len(out) != 2:
                raise InvalidArgumentError("out must be a path, a URL or a (local, remote) pair")
            local, remote = str(out[0]), str(out[1])
        elif _is_remote_url(str(out)):
            local, remote = tempfile.mkdtemp(prefix="ferry-writer-"), str(out)
            exist_ok = True  # our own empty temporary folder
        else:
            local, remote = str(out), None
        if local.startswith("file://"):
            local = local[len("file://") :]
        self.local = local
        self.remote = remote
        self.keep_local = keep_local
        self.columns = dict(columns)
        self.compression = compression or None
        self.hashes = list(hashes or [])
        self.size_limit = resolved_size_limit
        # None: the default of Python's thread pools, as Mosaic leaves it.
        self._max_workers = (
            min(32, (os.cpu_count() or 1) + 4) if max_workers is None else max(1, int(max_workers))
        )
        self._native = make_native(local, exist_ok)
        self._names = list(self._native.column_names)
        self._encoders: Sequence[Callable[[Any], Any]] = []
        self._finished = False
        self._pool = ThreadPoolExecutor(self._max_workers) if remote is not None else None
        self._uploads: Dict[str, Future] = {}
        self._last_scan = 0.0

    @property
    def uploaded(self) -> Sequence[str]:
        """Shard files already uploaded to the remote ``out``."""
        return sorted(name for name, f in self._uploads.items() if f.done() and not f.exception())

    @property
    def column_names(self) -> Sequence[str]:
        """Columns in stored (sorted) order."""
        return list(self._names)

    @property
    def column_encodings(self) -> Sequence[str]:
        """Encodings, in column_names order."""
        return list(self._native.column_encodings)

    def get_config(self) -> Dict[str, Any]:
        """The config every shard records, as Mosaic's ``get_config`` gives it: ``version`` (2),
        ``format``, ``compression``, ``hashes``, ``size_limit`` (bytes or None) and the
        format's own: MDS ``column_names``, ``column_encodings`` and ``column_sizes``; JSON
        ``columns`` and ``newline``; CSV and TSV ``column_names``, ``column_encodings`` and
        ``newline``."""
        return json.loads(self._native.config)

    def flush_shard(self) -> None:
        """Ends the current shard now: the next sample starts a new one. Nothing is written when
        the shard holds no sample yet (Mosaic writes an empty shard then)."""
        if self._finished:
            raise InvalidArgumentError(f"{self.local}: flush_shard after finish")
        self._native.flush_shard()

    @property
    def samples_written(self) -> int:
        return self._native.samples_written

    def write(self, sample: Mapping[str, Any]) -> None:
        """Appends one sample: a dict with a value for every column."""
        if self._finished:
            raise InvalidArgumentError(f"{self.local}: write after finish")
        try:
            values = [encode(sample[name]) for name, encode in zip(self._names, self._encoders)]
        except KeyError as e:
            raise MissingColumnError(
                f"{self.local}: the sample has no value for column {e.args[0]!r} "
                f"(columns: {', '.join(self._names)})"
            ) from None
        self._native.write(values)
        if self._pool is not None and time.monotonic() - self._last_scan >= _SCAN_INTERVAL_S:
            self._upload_finished_shards()

    def write_many(self, samples: Iterable[Mapping[str, Any]]) -> None:
        for sample in samples:
            self.write(sample)

    def finish(self) -> None:
        """Writes the last shard and ``index.json``; with a remote ``out``, waits for every
        upload and uploads ``index.json`` last (a reader never sees an index naming a shard
        that is not there yet)."""
        if self._finished:
            return
        self._finished = True
        try:
            self._native.finish()
            if self._pool is not None:
                self._upload_finished_shards()
                for name, future in sorted(self._uploads.items()):
                    future.result()  # the first failed upload raises, naming its URL
                _ferry.put_file(f"{self._remote_root()}/index.json",
                                os.path.join(self.local, "index.json"))
                if not self.keep_local:
                    shutil.rmtree(self.local, ignore_errors=True)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def _remote_root(self) -> str:
        return self.remote.rstrip("/")

    def _upload_finished_shards(self) -> None:
        self._last_scan = time.monotonic()
        for root, _, names in os.walk(self.local):
            for name in names:
                if not _SHARD_FILE.match(name):
                    continue
                path = os.path.join(root, name)
                relative = os.path.relpath(path, self.local)
                if relative not in self._uploads:
                    self._uploads[relative] = self._pool.submit(self._upload, relative, path)
        for future in self._uploads.values():
            if future.done() and future.exception() is not None:
                raise future.exception()

    def _upload(self, relative: str, path: str) -> None:
        _ferry.put_file(f"{self._remote_root()}/{relative}", path)
        if not self.keep_local:
            os.remove(path)

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        # As the reference: what was written becomes a complete dataset even when the block
        # raised (the samples before the error are kept).
        self.finish()



class MDSWriter(ShardWriter):
    """Writes MDS shards and ``index.json`` to a local folder or any store URL.

    Args:
        out: a local folder; a store URL (``s3://``, ``az://``, ``gs://``, ...) - shards are
            written to a temporary local folder and each is uploaded as soon as it is complete,
            ``index.json`` last, when the writer finishes; or a ``(local, remote)`` pair.
        columns: column name -> encoding (``"bytes"``, ``"str"``, ``"int"``, ``"jpeg"``,
            ``"ndarray:float32:3,4"``, ... - every MDS encoding).
        compression: ``"zstd"``, ``"zstd:7"``, ``"gz"``, ``"br"``, ``"bz2"``, ``"snappy"`` or
            None.
        hashes: digests recorded in ``index.json`` (``"sha1"``, ``"xxh64"``, ...).
        size_limit: shard size in bytes or a human size (``"64mb"``, read by
            ``ferry.util.bytes_to_int``); 0/None for one shard; below 2**32.
        keep_local: with a remote ``out``, keep the local copy after uploading (otherwise each
            shard is deleted once uploaded, so local disk holds only shards in flight).
        exist_ok: replace a dataset already in the local folder (its index.json and shard
            files; other files are kept). Otherwise a non-empty folder is an
            ``AlreadyExistsError`` (a ``FileExistsError``: "Directory is not empty: ...").
        max_workers: threads uploading shards to a remote ``out``.
        progress_bar, retry: accepted for Mosaic compatibility; ferry's stores retry on their
            own.

    Any other keyword argument is a ValueError ("Invalid Writer argument(s): ..."), as in
    Mosaic; an unknown encoding is ``UnsupportedEncodingError`` (a TypeError and a ValueError).

    Values: bytes-like values are stored verbatim in any column; otherwise str, int, float,
    ``Decimal``, numpy scalars and arrays, JSON-able objects, PIL images (or uint8 arrays) for
    the image encodings, anything picklable for ``pkl``. Extra keys in a sample are ignored.
    """

    format = "mds"

    def __init__(
        self,
        *,
        columns: Mapping[str, str],
        out: Union[str, Tuple[str, str]],
        keep_local: bool = False,
        compression: Optional[str] = None,
        hashes: Optional[Sequence[str]] = None,
        size_limit: Union[int, str, None] = _DEFAULT_SIZE_LIMIT,
        exist_ok: bool = False,
        max_workers: Optional[int] = 16,
        **kwargs: Any,
    ) -> None:
        if "extra_bytes_per_sample" in kwargs:
            # Mosaic's MDSWriter passes its own (4: the sample's offset) and fails the same way.
            raise TypeError(
                "MDSWriter got multiple values for keyword argument 'extra_bytes_per_sample'"
            )
        def why_unsupported(encoding: str) -> Optional[str]:
            try:
                _ferry.encoding_kind(encoding)
                return None
            except ValueError as e:
                return str(e)

        # extra_bytes_per_shard is a JointWriter argument that MDSWriter overrides (header and
        # config size): accepted and without effect, as there.
        self._check_arguments(
            kwargs,
            ("extra_bytes_per_shard",),
            "columns, out, keep_local, compression, hashes, size_limit, exist_ok, max_workers, "
            "progress_bar, retry",
            columns,
            why_unsupported,
        )
        self._open(
            out, keep_local, columns, compression, hashes, size_limit, exist_ok, max_workers,
            lambda local, exist_ok: _ferry.Writer(
                local,
                [(str(name), str(encoding)) for name, encoding in columns.items()],
                self.compression,
                self.hashes,
                self.size_limit,
                exist_ok,
            ),
        )
        self._encoders = [
            encoder(name, enc) for name, enc in zip(self._names, self._native.column_encodings)
        ]

    @property
    def column_sizes(self) -> Sequence[Optional[int]]:
        """Bytes of each fixed-size column, None for variable-size ones (column_names order)."""
        return self.get_config()["column_sizes"]



__all__ = [
    "MDSWriter",
    "MissingColumnError",
    "ShardWriter",
    "UnsupportedEncodingError",
    "resolve_size_limit",
]
