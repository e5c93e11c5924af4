"""What ``StreamingDataset.shards`` holds: one ``ShardInfo`` per shard, with what Mosaic
Streaming's shard readers tell a user about a shard (its samples, files, sizes and columns).
Samples are read through the dataset, not through these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple


@dataclass(frozen=True)
class FileInfo:
    """One file of a shard: the raw shard, or its compressed form."""

    basename: str
    bytes: int
    hashes: Dict[str, str] = field(default_factory=dict)


class ShardInfo:
    """One shard: ``format`` ("mds", "webdataset", "json", "csv", "tsv"), ``samples`` (also
    ``len()`` and ``size``), ``raw_data`` and ``zip_data`` (``FileInfo``; ``zip_data`` is None
    unless compressed), ``file_pairs`` ([(raw, zip)]: the data, then a JSON/CSV/TSV shard's
    ``.meta``, as ``raw_meta`` and ``zip_meta`` too),
    ``compression``, ``hashes``, ``size_limit``, ``column_names``, ``column_encodings``,
    ``column_sizes``, and ``dirname`` / ``split``: where the stream's cache folder is."""

    def __init__(self, info: Dict[str, Any], dirname: Optional[str], split: Optional[str]):
        self.dirname = dirname
        self.split = split or ""
        self.stream: int = info["stream"]  # its stream's position in the dataset's streams
        self.format: str = info["format"]
        self.samples: int = info["samples"]
        self.compression: Optional[str] = info["compression"]
        self.hashes: List[str] = list(info["hashes"])
        self.size_limit: Optional[int] = info["size_limit"]
        self.column_names: List[str] = list(info["column_names"])
        self.column_encodings: List[str] = list(info["column_encodings"])
        self.column_sizes: List[Optional[int]] = list(info["column_sizes"])
        self.raw_data = FileInfo(*info["raw_data"])
        self.zip_data = FileInfo(*info["zip_data"]) if info["zip_data"] is not None else None
        self.file_pairs: List[Tuple[FileInfo, Optional[FileInfo]]] = [
            (self.raw_data, self.zip_data)
        ] + [
            (FileInfo(*raw), FileInfo(*zipped) if zipped is not None else None)
            for raw, zipped in info["companions"]
        ]
        if len(self.file_pairs) > 1:
            self.raw_meta, self.zip_meta = self.file_pairs[1]

    @property
    def size(self) -> int:
        """Samples in the shard."""
        return self.samples

    def __len__(self) -> int:
        return self.samples

    def get_raw_size(self) -> int:
        """Bytes of the raw (decompressed) shard: all its files."""
        return sum(raw.bytes for raw, _ in self.file_pairs)

    def get_zip_size(self) -> Optional[int]:
        """Bytes of the compressed shard (all its files), or None when it is not compressed."""
        if self.zip_data is None:
            return None
        return sum(zipped.bytes for _, zipped in self.file_pairs if zipped is not None)

    def get_max_size(self) -> int:
        """The most the shard takes on disk: raw and compressed together, as while it is
        decompressed."""
        return self.get_raw_size() + (self.get_zip_size() or 0)

    def get_persistent_size(self, keep_zip: bool) -> int:
        """What the shard keeps on disk once local: with ``keep_zip`` its compressed file too."""
        return self.get_max_size() if keep_zip and self.compression else self.get_raw_size()

    def __repr__(self) -> str:
        return (f"ShardInfo({self.raw_data.basename!r}, samples={self.samples}, "
                f"compression={self.compression!r})")


__all__ = ["FileInfo", "ShardInfo"]
