"""JSONWriter, CSVWriter and TSVWriter: write Mosaic Streaming's JSON, CSV and TSV datasets.

The same arguments as ``streaming.JSONWriter``, ``CSVWriter`` and ``TSVWriter``, and the same
files, byte for byte: the native writer (``ferry/format/split_writer.h``) encodes each sample as
Mosaic's does (a JSON object as ``json.dumps(sort_keys=True)`` writes it; CSV and TSV values as
``str()`` joined by ``,`` or a tab, after a header line of the column names), splits shards by
the same rule and writes each shard's ``.meta`` beside it. ``StreamingDataset`` reads what they
write, as Mosaic does.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, Union

from . import _ferry
from .errors import InvalidArgumentError
from .writer import _DEFAULT_SIZE_LIMIT, ShardWriter

_ENCODINGS = ("str", "int", "float")


def _encoder(column: str, encoding: str) -> Callable[[Any], Any]:
    """Checks a value as Mosaic's writers do (a str, an int, a float; numpy scalars count)."""

    def refuse(value: Any):
        raise InvalidArgumentError(
            f"column {column!r} is {encoding}: a {type(value).__qualname__} cannot be stored"
        )

    if encoding == "str":
        return lambda v: v if isinstance(v, str) else refuse(v)
    if encoding == "int":
        return lambda v: (
            int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else refuse(v)
        )
    return lambda v: float(v) if isinstance(v, float) or _is_numpy_float(v) else refuse(v)


def _is_numpy_float(value: Any) -> bool:
    return type(value).__module__ == "numpy" and isinstance(value, numbers.Real) and not isinstance(
        value, numbers.Integral
    )


class _SplitWriter(ShardWriter):
    def __init__(
        self,
        *,
        columns: Mapping[str, str],
        out: Union[str, Tuple[str, str]],
        newline: str = "\n",
        keep_local: bool = False,
        compression: Optional[str] = None,
        hashes: Optional[Sequence[str]] = None,
        size_limit: Union[int, str, None] = _DEFAULT_SIZE_LIMIT,
        exist_ok: bool = False,
        max_workers: Optional[int] = 16,
        **kwargs: Any,
    ) -> None:
        self._check_arguments(
            kwargs,
            (),
            "columns, out, newline, keep_local, compression, hashes, size_limit, exist_ok, "
            "max_workers, progress_bar, retry",
            columns,
            lambda encoding: None
            if encoding in _ENCODINGS
            else f"a {self.format} column is str, int or float",
        )
        self.newline = newline
        self._open(
            out, keep_local, columns, compression, hashes, size_limit, exist_ok, max_workers,
            lambda local, exist_ok: _ferry.SplitWriter(
                local,
                self.format,
                [(str(name), str(encoding)) for name, encoding in columns.items()],
                newline,
                self.compression,
                self.hashes,
                self.size_limit,
                exist_ok,
            ),
        )
        self._encoders = [
            _encoder(name, enc) for name, enc in zip(self._names, self._native.column_encodings)
        ]


class JSONWriter(_SplitWriter):
    """Writes Mosaic's JSON format: each sample a line of JSON, its offsets in a ``.meta``.

    Args:
        columns: column name -> ``"str"``, ``"int"`` or ``"float"``.
        out: a local folder, a store URL or a ``(local, remote)`` pair (``ShardWriter``).
        newline: what ends each sample (``"\\n"``).
        compression, hashes, size_limit, keep_local, exist_ok, max_workers: as ``MDSWriter``.
        progress_bar, retry: accepted for Mosaic compatibility.

    A value of the wrong type (a str for an int column, ...) is an ``InvalidArgumentError``
    naming the column; extra keys in a sample are ignored.
    """

    format = "json"


class CSVWriter(_SplitWriter):
    """Writes Mosaic's CSV format: a header line, then each sample's values joined by ``,``.
    A str value may not hold ``,`` or the newline (Mosaic's rule: nothing is quoted). The
    arguments are ``JSONWriter``'s."""

    format = "csv"


class TSVWriter(_SplitWriter):
    """Writes Mosaic's TSV format: as ``CSVWriter``, with a tab between values."""

    format = "tsv"


__all__ = ["CSVWriter", "JSONWriter", "TSVWriter"]
