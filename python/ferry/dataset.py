"""StreamingDataset: a torch IterableDataset over MDS datasets in any object store.

A drop-in for ``streaming.StreamingDataset``: the same arguments, samples as dicts of decoded
values, correct under ``torch.utils.data.DataLoader(num_workers=N)`` and torch.distributed
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``), with ``state_dict`` /
``load_state_dict`` for mid-epoch resumption. Fetching, caching, ordering and prefetching
happen in the native engine (docs/streaming.md); this module is the thin Python face.
"""

from __future__ import annotations

import bisect
import os
import warnings
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _ferry, _handoff, _peers
from ._values import decoder
from .errors import DataLossError, IndexDecodeError, InvalidArgumentError, MissingIndexError
from .shards import ShardInfo
from .stream import Stream, _count, _size, streams_registry
from .util import _is_remote_url, number_abbrev_to_int
from .world import (_check_same_plan, _in_dataloader_worker, _NativeDataset, _replicated,
                    _worker)


# The shard formats ferry reads (ShardFormatNames).
_FORMATS = ("mds", "webdataset", "json", "csv", "tsv")

def _epoch_size(value: Any) -> Optional[int]:
    """Samples per epoch: an int, or a count with Mosaic's abbreviations ("100k" = 10**5,
    "1b" = 10**9), not a byte size."""
    if value is None or value == 0:
        return None
    if isinstance(value, bool):
        raise InvalidArgumentError(f"epoch_size must be a number of samples, not {value!r}")
    samples = number_abbrev_to_int(value)
    if samples < 0:
        raise InvalidArgumentError(f"Epoch size cannot be negative. Received {samples}.")
    return samples


def _sample_index(index: Any, size: int) -> int:
    """An index as an int in [0, size): ints and numpy integers, negative ones from the end."""
    if isinstance(index, bool) or not hasattr(index, "__index__"):
        raise InvalidArgumentError(f"a sample index is an integer, not {index!r}")
    i = index.__index__()
    if i < 0:
        i += size
    if not 0 <= i < size:
        raise IndexError(f"sample index {index} out of range (the dataset has {size} samples)")
    return i


_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")


def _check_local_index(stream: Stream) -> None:
    """Mosaic's error for a stream with no remote and no index.json in its folder (unless the
    folder holds WebDataset tars, which are counted in place)."""
    if stream.remote is not None or stream.local is None or _is_remote_url(stream.local):
        return
    folder = os.path.join(stream.local, stream.split or "")
    index = os.path.join(folder, "index.json")
    if not os.path.exists(index) and not (
            os.path.isdir(folder) and any(name.endswith(_TAR_SUFFIXES)
                                          for name in os.listdir(folder))):
        raise MissingIndexError(
            f"No `remote` provided, but local file {index} does not exist either (a folder of "
            f"files without an index is read with ferry.FileDataset, or packed with "
            f"`ferry convert`)")


def _stream_root(stream: Stream) -> str:
    """The folder a stream's shards come from, as a sample's ``__url__`` names it: its remote
    (the folder of a WebDataset shard pattern), else its local folder, and its split."""
    root = (stream.remote or stream.local).rstrip("/")
    if stream.remote:
        selection = _ferry.shard_selection(stream.remote)  # a WebDataset shard pattern
        if selection is not None:
            root = selection[0].rstrip("/")
    return f"{root}/{stream.split}" if stream.split else root


class StreamingDataset(_NativeDataset):
    """Samples of one or more MDS datasets, streamed through a shared local cache.

    Args (as in Mosaic Streaming):
        remote, local, split: one stream (or give ``streams``). ``remote`` may list the places
            that hold one dataset, in preference order (``["az://staged/train",
            "s3://source/train"]``): mirrors, read with failover (``Stream``, docs/sources.md).
        streams: a list of ``Stream`` to mix (each takes what it was not given from the
            dataset's split, download_retry, download_timeout, validate_hash, keep_zip).
        stream_name, stream_config: without ``streams``, the one stream is
            ``streams_registry.get(stream_name)(**stream_config, remote=..., local=..., ...)``:
            a Stream subclass registered in ``ferry.stream.streams_registry``.
        epoch_size: samples per epoch (an int, or "100k", "1b": Mosaic's abbreviations) over
            streams weighted by ``proportion`` (or not at all);
            without it, proportions share all the streams' samples. Once built, every stream's
            ``proportion``, ``repeat`` and ``choose`` hold what it gives each epoch.
        predownload: samples fetched ahead per worker; None sizes it from the link ("auto").
        cache_limit: bytes (or "100gb") each cache folder may hold, its index.json counted;
            below what the index.json files take, or four times the largest shard (raw and
            compressed together), is a ValueError, as with the reference. Shards in use are
            never evicted, and a dataset without ``remote`` (or with ``remote`` the same folder
            as ``local``) is never evicted at all.
        keep_zip, validate_hash: keep compressed files; check downloads with this digest.
        sampling_method: ``"balanced"`` or ``"fixed"``.
        num_canonical_nodes: fixes the order across world shapes (None: Mosaic's default, the
            nodes, 64 x the nodes for py1s; saved by ``state_dict`` so a resumed run keeps it).
            On a first run it must divide or be divided by the number of nodes.
        batch_size: the DataLoader's batch per device: the order deals whole batches to the
            workers in the order the DataLoader takes them. Needed to iterate under a torch
            DataLoader, as in Mosaic. Every rank yields exactly ``len(dataset)`` samples.
        shuffle, shuffle_algo (naive, py1s, py1b, py1br, py1e), shuffle_seed,
            shuffle_block_size: see docs/streaming.md.
        allow_unsafe_types: read ``pkl`` columns (unpickled: runs code from the dataset).
        batching_method: ``"random"`` (every batch mixes the streams), ``"per_stream"``,
            ``"stratified"`` or ``"device_per_stream"`` (docs/streaming.md).
        replication: groups of this many consecutive ranks read the same samples.
    ferry's own:
        format: the shard format the streams must hold (``"mds"``, ``"webdataset"``,
            ``"json"``, ``"csv"``, ``"tsv"``), checked against each index at open; None (the
            default) reads whatever each ``index.json`` says, formats mixed across streams.
        drop_last: cut the epoch to whole world batches (ranks x batch_size) instead of
            repeating fewer than ``ranks`` samples.
        egress: without ``streams``, the stream's egress accounting per source URL (``Stream``,
            docs/sources.md, "Egress").
        peers: a cluster cache (docs/sources.md, "Peer fetch"): the ``host:port`` of every
            node's peer server, this node's included, or ``"torch"`` (from torch.distributed:
            one per node, on ``peer_port``); None reads ``FERRY_PEERS``. Each shard of a remote
            stream is fetched by one node and served to the others from its cache folder, so it
            crosses the cloud boundary once per cluster.
        peer_self: which of ``peers`` this node is (default ``FERRY_PEER_SELF``, else the one
            with this machine's hostname).
        peer_token: the secret the nodes share (default ``FERRY_PEER_TOKEN``; with
            ``"torch"`` and neither, rank 0 draws one).
        peer_port: the port of each node's peer server with ``peers="torch"``.
        image_format: ``"pil"`` (jpeg/png/pil columns as PIL images, as the reference),
            ``"numpy"`` (uint8 arrays) or ``"bytes"`` (the stored JPEG/PNG files, undecoded).
        download_concurrency: shards fetched at once per worker (None: auto).
        node_download_concurrency: shards fetched at once from each cache folder by all the
            workers and processes of the node that read it with this value (None: no limit
            beyond each worker's own).
        download_parts: ranged parts a shard of 32 MiB or more is fetched as, at once (None:
            auto, 1 to 8 from how the downloads' rates respond to their number; ``ferry doctor``
            measures it ahead of time).
        digest_records: keep each downloaded shard file's size and XXH3 beside it, so that a
            file from before a reboot (downloads are not flushed) is checked exactly on its
            first use after it, and fetched again if a power cut damaged it (default True).
        store_checksums: check each download against the checksum the store sends with it for
            free (S3's x-amz-checksum-crc64nvme/crc32c/crc32 or an ETag that is an MD5, GCS's
            x-goog-hash, Azure's Content-MD5), fetching it again on a mismatch (default True).
        max_bytes_in_flight: bytes fetched ahead per worker (under a ``cache_limit``, at most
            the worker's share of what the cache budget leaves for the look-ahead).
        strict_cache_limit: a ``cache_limit`` that cannot hold the shuffle's working set (the
            shards the node's readers use at once) is an error when iterating, instead of
            reading the widest shuffle that fits (a smaller ``shuffle_block_size``, or ``py1s``;
            logged once with the ``cache_limit`` that would hold the order asked for).
        offline: read the cache folder's copy of ``index.json`` without asking the remote
            whether it changed (by default one HEAD per stream at open revalidates it): a cache
            filled earlier stays usable while the remote cannot be reached.
        download_on_access: ``ds[i]`` of a sample whose shard is not in the cache: False (the
            default) reads the sample by range (the shard's offset table, then the sample) and
            fetches the shard whole from its second sample asked for in this process on; True
            fetches the whole shard at the first access, as Mosaic does.
    Accepted for compatibility and not needed (docs/python.md says why): download_retry,
    download_timeout, partition_algo (``"relaxed"`` or ``"orig"``), sampling_granularity (>= 1),
    shuffle_block_size=None.
    """

    def __init__(
        self,
        *,
        streams: Optional[Sequence[Stream]] = None,
        remote: Optional[str] = None,
        local: Optional[str] = None,
        split: Optional[str] = None,
        download_retry: int = 2,
        download_timeout: float = 60,
        validate_hash: Optional[str] = None,
        keep_zip: bool = False,
        epoch_size: Union[int, str, None] = None,
        predownload: Optional[int] = None,
        cache_limit: Union[int, str, None] = None,
        sampling_method: str = "balanced",
        sampling_granularity: int = 1,
        partition_algo: str = "relaxed",
        num_canonical_nodes: Optional[int] = None,
        batch_size: Optional[int] = None,
        shuffle: bool = False,
        shuffle_algo: str = "py1e",
        shuffle_seed: int = 9176,
        shuffle_block_size: Optional[int] = None,
        batching_method: str = "random",
        allow_unsafe_types: bool = False,
        replication: Optional[int] = None,
        stream_name: str = "stream",
        stream_config: Optional[Dict[str, Any]] = None,
        drop_last: bool = False,
        image_format: str = "pil",
        download_concurrency: Optional[int] = None,
        max_bytes_in_flight: Union[int, str, None] = None,
        download_parts: Optional[int] = None,
        node_download_concurrency: Optional[int] = None,
        strict_cache_limit: bool = False,
        offline: bool = False,
        format: Optional[str] = None,
        download_on_access: bool = False,
        digest_records: bool = True,
        store_checksums: bool = True,
        egress: Optional[Dict[str, Dict[str, Any]]] = None,
        peers: Union[None, str, Sequence[str]] = None,
        peer_self: Optional[str] = None,
        peer_token: Optional[str] = None,
        peer_port: int = _peers.DEFAULT_PORT,
    ) -> None:
        super().__init__()
        if format is not None and format not in _FORMATS:
            raise InvalidArgumentError(
                f"format must be one of {', '.join(_FORMATS)} or None, not {format!r}")
        if bool(streams) == bool(remote or local):
            raise InvalidArgumentError(
                "You must provide either streams or remote/local, but not both")
        default = {"remote": remote, "local": local, "split": split,
                   "download_retry": download_retry, "download_timeout": download_timeout,
                   "validate_hash": validate_hash, "keep_zip": keep_zip}
        if streams:
            if egress is not None:
                raise InvalidArgumentError("with `streams`, give each Stream its own `egress`")
            self.streams = list(streams)
            for stream in self.streams:
                if not isinstance(stream, Stream):
                    raise InvalidArgumentError(
                        f"streams must be ferry.Stream objects, not {type(stream).__name__}")
                stream.apply_default(default)
        else:
            # Built from the registry, so that a Stream subclass registered under stream_name
            # gets its own arguments from stream_config.
            extra = {"egress": egress} if egress is not None else {}
            stream = streams_registry.get(stream_name)(
                **{**(stream_config or {}), **default, **extra})
            if not isinstance(stream, Stream):
                raise InvalidArgumentError(
                    f"stream_name {stream_name!r} made a {type(stream).__name__}, not a "
                    f"ferry.Stream")
            self.streams = [stream]
        Stream.validate_weights(self.streams)
        if image_format not in ("pil", "numpy", "bytes"):
            raise InvalidArgumentError(
                f"image_format must be 'pil', 'numpy' or 'bytes', not {image_format!r}"
            )
        if replication is not None and (isinstance(replication, bool)
                                        or not isinstance(replication, int) or replication < 1):
            raise InvalidArgumentError("Replication factor must be positive.")
        self.replication = replication
        hashes = {s.validate_hash for s in self.streams if s.validate_hash} | (
            {validate_hash} if validate_hash else set()
        )
        if len(hashes) > 1:
            raise InvalidArgumentError(f"streams ask for different validate_hash: {sorted(hashes)}")
        self.shuffle = bool(shuffle)
        self.shuffle_seed = _count(shuffle_seed, "shuffle_seed")
        self.num_canonical_nodes = _count(num_canonical_nodes, "num_canonical_nodes", 1)
        # None (Mosaic's default) is allowed until iterating under a torch DataLoader, which
        # needs it (ferry.DataLoader passes its own).
        self.batch_size = _count(batch_size, "batch_size", 1)
        self.image_format = image_format
        self.allow_unsafe_types = bool(allow_unsafe_types)
        self._options = {
            "streams": [s._options() for s in self.streams],
            "shuffle": self.shuffle,
            "shuffle_algo": shuffle_algo,
            "shuffle_seed": self.shuffle_seed,
            "shuffle_block_size": _count(shuffle_block_size, "shuffle_block_size", 1),
            "batch_size": self.batch_size or 1,
            "drop_last": bool(drop_last),
            "epoch_size": _epoch_size(epoch_size),
            "sampling_method": sampling_method,
            # Their ranges are checked once, by the engine.
            "predownload": _count(predownload, "predownload"),
            "download_concurrency": _count(download_concurrency, "download_concurrency"),
            "download_parts": _count(download_parts, "download_parts"),
            "node_download_concurrency": _count(
                node_download_concurrency, "node_download_concurrency"
            ),
            "max_bytes_in_flight": _size(max_bytes_in_flight, "max_bytes_in_flight"),
            "cache_limit": _size(cache_limit, "cache_limit"),
            "strict_cache_limit": bool(strict_cache_limit),
            "offline": bool(offline),
            "download_on_access": bool(download_on_access),
            "digest_records": bool(digest_records),
            "store_checksums": bool(store_checksums),
            "peers": _peers.resolve(peers, peer_self, peer_token, peer_port),
            "keep_zip": bool(keep_zip or any(s.keep_zip for s in self.streams)),
            "validate_hash": next(iter(hashes), None),
            "allow_unsafe_types": self.allow_unsafe_types,
            "batching_method": batching_method,
            # Not used, but checked by the engine: a typo is an error rather than ignored.
            "partition_algo": partition_algo,
            "sampling_granularity": sampling_granularity,
        }
        self._epoch_offset = 0  # sample_in_epoch this process resumed from
        self._initial_nodes = None  # physical nodes of the run a loaded state came from
        self._current = None  # (sample id, values) iteration hands a subclass's __getitem__
        self._handoff_token = _handoff.register(self)  # python/ferry/_handoff.py
        self._workers = 1  # DataLoader workers per rank (StreamingDataLoader tells the parent)
        self._batch = self.batch_size or 1  # the loader's batches (ferry.DataLoader's own)
        if predownload is not None and batch_size is not None and predownload < batch_size:
            warnings.warn(f"predownload < batch_size ({predownload} < {batch_size}). This may "
                          f"result in slower batch time. Recommendation is to set predownload "
                          f"to at-least batch_size.", stacklevel=2)
        # Open now: a bad URL, missing index or bad option fails here, not in a worker. The index
        # is checked against the remote once: workers read the copy this open checked (the order
        # they plan is the parent's), with no round trip each.
        if sampling_method not in ("balanced", "fixed"):
            raise InvalidArgumentError(f"Invalid sampling method: {sampling_method}. Must be one "
                                       f"of `balanced` or `fixed`.")
        for stream in self.streams:
            _check_local_index(stream)
        try:
            native = self._native()
        except DataLossError as e:
            if "index.json" not in str(e) or "JSON" not in str(e):
                raise
            raise IndexDecodeError(str(e)) from None
        if format is not None:
            for info in self.shards:
                if info.format != format:
                    stream = self.streams[info.stream]
                    raise InvalidArgumentError(
                        f"format={format!r}, but {stream.remote or stream.local} holds "
                        f"{info.format} shards ({info.raw_data.basename})")
        self.format = format
        self._num_samples = native.num_samples  # fixed by the index: read once, not per sample
        for stream, weights in zip(self.streams, native.stream_weights):
            stream._set_weights(*weights)
        self._options["offline"] = True
        self._decoders = [
            decoder(enc, image_format, self.allow_unsafe_types) for _, enc in native.columns
        ]
        self._columns = [name for name, _ in native.columns]
        _check_same_plan(self._plan_identity())

    def _plan_identity(self) -> Dict[str, Any]:
        """What decides the order every rank deals from: the data (each stream's remote, or its
        local folder without one, and sample count) and the settings of the order."""
        keys = ("shuffle", "shuffle_algo", "shuffle_seed", "shuffle_block_size", "batch_size",
                "drop_last", "epoch_size", "sampling_method", "batching_method")
        return {
            "dataset": type(self).__name__,
            "streams": [{"data": s.remote or s.local, "split": s.split,
                         "weights": list(s._given_weights())} for s in self.streams],
            "samples": self._num_samples,
            "num_canonical_nodes": self.num_canonical_nodes,
            "replication": self.replication,
            **{k: self._options[k] for k in keys},
        }

    def _open_native(self):
        options = dict(self._options)
        if self.num_canonical_nodes is not None:
            options["num_canonical_nodes"] = self.num_canonical_nodes
        return _ferry.Dataset(options)

    # -- samples ------------------------------------------------------------------------------

    @property
    def columns(self) -> List[str]:
        return list(self._columns)

    @property
    def num_samples(self) -> int:
        """Samples over all streams (before mixing)."""
        return self._num_samples

    def __len__(self) -> int:
        """Samples one rank reads per epoch, exactly what iterating yields: ceil(epoch size /
        ranks) as the reference (with ``drop_last``, the rank's share of whole world batches;
        with a ``batching_method`` other than random, of the whole batches it makes)."""
        nodes, ranks_per_node, _, _ = self._world()
        return self._native().plan((nodes, ranks_per_node, 1), self.next_epoch)["samples_per_rank"]

    def _sample(self, values: Any, sample_id: int) -> Dict[str, Any]:
        if isinstance(values, dict):  # a sample that names its own fields (WebDataset)
            values["__url__"] = self._shard_url(sample_id)
            return values
        return {
            name: (value if decode is None else decode(value))
            for name, decode, value in zip(self._columns, self._decoders, values)
        }

    def __getitem__(self, index: Any) -> Any:
        """``ds[i]`` (an int or numpy integer, negative from the end), or a list of samples for a
        slice, a sequence or an array of indices. Goes through ``get_item``, so a subclass may
        override either, as with the reference; iteration goes through ``__getitem__`` too when
        a subclass overrides one of them."""
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.num_samples))]
        if not isinstance(index, (str, bytes)) and hasattr(index, "__len__"):
            return [self[i] for i in (index.tolist() if hasattr(index, "tolist") else index)]
        return self.get_item(_sample_index(index, self.num_samples))

    def get_item(self, sample_id: int, retry: int = 7) -> Dict[str, Any]:
        """The sample ``sample_id`` (0 <= sample_id < num_samples) as a dict of decoded values;
        reads it by range, or fetches its shard, if it is not in the cache (``download_on_access``;
        ``retry`` is accepted for compatibility:
        the engine retries by its own policy)."""
        current = self._current
        if current is not None and current[0] == sample_id:
            return self._sample(current[1], sample_id)
        _, _, values = self._native().get(sample_id)
        return self._sample(values, sample_id)

    def _overridden(self) -> bool:
        cls = type(self)
        return (cls.__getitem__ is not StreamingDataset.__getitem__
                or cls.get_item is not StreamingDataset.get_item)

    # -- shards and the cache (Mosaic's names) -------------------------------------------------

    @property
    def size(self) -> int:
        """Samples over all streams (``num_samples``)."""
        return self.num_samples

    @property
    def epoch_size(self) -> int:
        """Samples of one epoch over all ranks, after the streams are mixed."""
        return self._native().epoch_samples

    @property
    def shards(self) -> List[ShardInfo]:
        """Every stream's shards, in order (those of ``streams[0]`` first), as ``ShardInfo``."""
        if getattr(self, "_shard_infos", None) is None:
            self._shard_infos = [
                ShardInfo(info, self.streams[info["stream"]].local,
                          self.streams[info["stream"]].split)
                for info in self._native().shards
            ]
        return list(self._shard_infos)

    def _shard_url(self, sample_id: int) -> str:
        """Where the shard of sample ``sample_id`` comes from (a WebDataset sample's
        ``__url__``): its stream's remote, else its local folder, and the shard's name."""
        starts = getattr(self, "_shard_starts", None)
        if starts is None:
            starts, total = [], 0
            for info in self.shards:
                starts.append(total)
                total += info.samples
            self._shard_starts = starts
        # Empty shards share their start with the next: the last shard starting at or before
        # the sample that holds samples.
        k = bisect.bisect_right(starts, sample_id) - 1
        while self._shard_infos[k].samples == 0:
            k -= 1
        info = self._shard_infos[k]
        roots = getattr(self, "_stream_roots", None)
        if roots is None:
            roots = self._stream_roots = [_stream_root(stream) for stream in self.streams]
        # The file fetched: a gzipped tar's own name, not the tar the cache keeps.
        return f"{roots[info.stream]}/{(info.zip_data or info.raw_data).basename}"

    @property
    def num_shards(self) -> int:
        return len(self.shards)

    @property
    def samples_per_shard(self) -> np.ndarray:
        """Samples of each shard (numpy int64), in the order of ``shards``."""
        return np.array([shard.samples for shard in self.shards], np.int64)

    @property
    def cache_usage(self) -> int:
        """Bytes in the streams' cache folders now, as Mosaic counts them: each index.json and
        the shard files (raw and compressed) present. ``cache_limit`` holds these (and ferry's
        few bytes of records in ``.ferry/``)."""
        return self._native().cache_usage

    def _shard_id(self, shard_id: Any) -> int:
        if isinstance(shard_id, bool) or not hasattr(shard_id, "__index__"):
            raise InvalidArgumentError(f"a shard id is an integer, not {shard_id!r}")
        i = shard_id.__index__()
        n = len(self.shards if getattr(self, "_shard_infos", None) is None else self._shard_infos)
        if not -n <= i < n:
            raise IndexError(f"shard {shard_id} out of range (the dataset has {n} shards)")
        return i % n

    def prepare_shard(self, shard_id: int, blocking: bool = True) -> None:
        """Makes shard ``shard_id`` local now (downloaded, checked, decompressed), evicting
        others under ``cache_limit`` as a download does. With ``blocking=False``, a download of
        it already running in another worker or process is not waited for."""
        self._native().prepare_shard(self._shard_id(shard_id), bool(blocking))

    def evict_shard(self, shard_id: int) -> None:
        """Deletes shard ``shard_id``'s files from its cache folder (nothing if it is not local;
        it is fetched again when read). Raises ``FailedPreconditionError`` (a RuntimeError),
        deleting nothing, while an iterator of any process on the node reads it, or when its
        stream has no remote: then its files are the only copy of the data."""
        self._native().evict_shard(self._shard_id(shard_id))

    def evict_coldest_shard(self) -> None:
        """Evicts the least recently used shard that can be evicted (see ``evict_shard``);
        ``ValueError`` when there is none."""
        self._native().evict_coldest_shard()

    # -- epochs and resumption ----------------------------------------------------------------

    def state_dict(self, num_samples: int, from_beginning: bool) -> Dict[str, Any]:
        """Where the world is: ``num_samples`` read this epoch over all ranks (since the start of
        the epoch if ``from_beginning``, else since this run resumed)."""
        nodes, ranks_per_node, _, _ = self._world()
        with self._epochs.get_lock():
            epoch = self._epochs[0]
        offset = 0 if from_beginning else self._epoch_offset
        return {
            "epoch": epoch,
            "sample_in_epoch": offset + int(num_samples),
            "num_canonical_nodes": self._canonical_nodes(),
            "shuffle_seed": self.shuffle_seed,
            "initial_physical_nodes": self._initial_nodes or nodes,
        }

    def _canonical_nodes(self) -> int:
        if self.num_canonical_nodes is not None:
            return self.num_canonical_nodes
        nodes, ranks_per_node, _, _ = self._world()
        plan = self._native().plan((nodes, ranks_per_node, self._workers), 0)
        return plan["num_canonical_nodes"]

    def load_state_dict(self, obj: Dict[str, Any]) -> None:
        """Resumes at the state ``state_dict`` returned: the next iteration continues its epoch."""
        try:
            epoch = _count(obj["epoch"], "epoch")
            sample_in_epoch = _count(obj["sample_in_epoch"], "sample_in_epoch")
        except KeyError as e:
            raise InvalidArgumentError(f"state has no {e.args[0]!r}") from None
        if obj.get("shuffle_seed") not in (None, self.shuffle_seed):
            raise InvalidArgumentError(
                f"the state was saved with shuffle_seed {obj['shuffle_seed']}, "
                f"this dataset has {self.shuffle_seed}"
            )
        saved_nodes = obj.get("num_canonical_nodes")
        if self.num_canonical_nodes is None and saved_nodes:
            # The order depends on it: keep the saved run's, whatever the world is now.
            self.num_canonical_nodes = int(saved_nodes)
            self._pid = None  # re-open with it
        self._initial_nodes = obj.get("initial_physical_nodes")
        # The epoch's samples (fewer when drop_last or a batching method leaves some out);
        # what lies past them is padding.
        nodes, ranks_per_node, _, _ = self._world()
        end = min(self._native().epoch_samples,
                  self._native().plan((nodes, ranks_per_node, 1), epoch)["epoch_samples"])
        if sample_in_epoch >= end:
            # Saved at the very end (padding included): go on with the next epoch.
            epoch, sample_in_epoch = epoch + 1, 0
        with self._epochs.get_lock():
            self._epochs[0] = epoch
            self._epochs[1] = 0
        self._resume = {"epoch": epoch, "sample_in_epoch": sample_in_epoch}

    def _begin_epoch(self, workers: int, batch_size: Optional[int] = None) -> None:
        """Called in the main process before a DataLoader starts its workers for an epoch."""
        self._workers = max(1, workers)
        self._batch = batch_size or self.batch_size or 1
        resume = self._resume
        self._epoch_offset = (
            resume["sample_in_epoch"] if resume and resume["epoch"] == self.next_epoch else 0
        )

    # -- what ferry.DataLoader asks of a dataset ------------------------------------------------

    def _loader_columns(self) -> List[Tuple[str, str]]:
        return list(self._native().columns)

    def _loader_options(self, batch_size: int) -> Dict[str, Any]:
        options = dict(self._options, batch_size=batch_size)
        if self.num_canonical_nodes is not None:
            options["num_canonical_nodes"] = self.num_canonical_nodes
        return options

    def _loader_batches(self, native, world: Tuple[int, int, int], batch_size: int,
                        drop_last: bool) -> int:
        self._check_partition(world[0])
        plan = native.plan(world, self.next_epoch)
        return sum(n // batch_size if drop_last else -(-n // batch_size)
                   for n in plan["samples_per_worker"])

    # -- iteration ----------------------------------------------------------------------------

    def _world(self) -> Tuple[int, int, int, int]:
        """(nodes, ranks per node, node, rank in node) of the order: torch.distributed's, with
        ``replication`` applied."""
        return _replicated(self._physical_world(), self.replication)

    def _check_partition(self, nodes: int) -> None:
        """Mosaic's rule for a first run: canonical and physical nodes divide one another (so
        each node reads its own shards). ferry's order is valid for any pair, so a run resumed
        on another node count (``partition_algo="relaxed"``, the default) is not held to it."""
        canonical = self._canonical_nodes()
        resumed_elsewhere = (self._options["partition_algo"] == "relaxed"
                             and self._initial_nodes not in (None, nodes))
        if canonical % nodes and nodes % canonical and not resumed_elsewhere:
            raise InvalidArgumentError(
                "Either canonical or physical nodes must be evenly divisible by the other, "
                f"otherwise striping slices of shards over nodes may lead to each node "
                f"downloading all shards (num_canonical_nodes {canonical}, {nodes} nodes)")

    def _check_py1e(self) -> None:
        """The reference's py1e error and warning: ferry's py1e orders any C, but a canonical
        node without samples, or a block narrower than a shard, says the settings are off."""
        canonical = self._canonical_nodes()
        if self._native().epoch_samples < canonical:
            raise InvalidArgumentError(
                f"The number of samples assigned to a canonical node is 0. This very likely "
                f"indicates that the number of samples in this stream is less than the number "
                f"of canonical nodes, which is {canonical}. Please check your index.json file "
                f"and ensure that your dataset has been written out correctly.")
        block = self._options["shuffle_block_size"] or 1 << 18
        if block < int(max(self.samples_per_shard, default=0)):
            warnings.warn("Shuffle block size was smaller than shard size for some shards. This "
                          "will result in these shards not being shuffled with other shards. Set "
                          "shuffle_block_size to a larger value for a higher quality shuffle.",
                          stacklevel=3)

    def _start(self, world: Tuple[int, int, int], worker_id: int, epoch: int):
        """(plan worker, resume_from, skip) for this DataLoader worker: the world's order does
        not depend on its shape, so a resumed epoch drops the samples the world read."""
        resume = self._resume if self._resume and self._resume["epoch"] == epoch else None
        self._epoch_offset = resume["sample_in_epoch"] if resume else 0
        return worker_id, self._epoch_offset, 0

    def __iter__(self) -> Iterator[Any]:
        if self.batch_size is None:
            raise InvalidArgumentError(
                "Please pass `batch_size` to StreamingDataset. It should be set the same as the "
                "DataLoader, and is the number of samples per batch, for each device. It is "
                "necessary for deterministic resumption and optimal performance.")
        nodes, ranks_per_node, node, rank = self._world()
        self._check_partition(nodes)
        if self.shuffle and self._options["shuffle_algo"] == "py1e":
            self._check_py1e()
        worker_id, workers = _worker()
        self._workers = workers
        epoch = self._next_epoch(workers)
        world = (nodes, ranks_per_node, workers)
        plan_worker, resume_from, skip = self._start(world, worker_id, epoch)
        native = self._native()
        # In a DataLoader worker, what it yields is pickled to the main process: fields read
        # from cache files go as their place in the file (python/ferry/_handoff.py).
        handoff = ((_handoff.SampleBytes, self._handoff_token)
                   if _in_dataloader_worker() and _handoff.enabled() else None)
        it = native.iterate(world, (node, rank, plan_worker), epoch, resume_from, skip,
                            handoff)
        try:
            if not self._overridden():
                for sample_id, _, values in it:
                    yield self._sample(values, sample_id)
                return
            # A subclass's __getitem__ / get_item sees every sample, read ahead as usual: the
            # base get_item answers from the sample in hand instead of fetching it again.
            for sample_id, _, values in it:
                self._current = (sample_id, values)
                try:
                    item = self[sample_id]
                finally:
                    self._current = None
                yield item
        finally:
            it.close()

__all__ = ["Stream", "StreamingDataset"]
