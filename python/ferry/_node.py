"""The node's counters: every process reading a cache folder publishes its own in a file under
``<local>/.ferry/metrics`` and any process sums them (``ferry.metrics(local=...)``). Here, the
Python side of it: a process's label, and a last flush when a multiprocessing worker exits
(it ends in ``os._exit``, which runs no C++ exit hook)."""

from __future__ import annotations

import os
from typing import Dict, Optional, Union

from . import _ferry

_prepared_pid: Optional[int] = None


def metrics(local: Union[str, os.PathLike, None] = None) -> Dict[str, int]:
    """Every counter and gauge by name: ``{'/ferry/cache/hits': 12, ...}``.

    Without ``local``: this process's own. With ``local`` (a cache folder): the node's - the
    sum over every process reading that folder now (DataLoader workers, ranks, other jobs), with
    the counters of those that have exited; so ``/ferry/cache/downloaded_bytes`` is every byte
    downloaded into the folder. Gauges are the live processes' sum
    (``/ferry/stream/bytes_in_flight``) - or, for those that are each process's setting
    (``/ferry/cache/limit_bytes``, ``/ferry/stream/predownload``, ``/ferry/stream/concurrency``,
    ``/ferry/cache/download_parts``, ``/ferry/stream/fetch_latency_us``,
    ``/ferry/files/concurrency``), the largest.
    """
    if local is None:
        return _ferry.metrics()
    return _ferry.node_metrics(os.fspath(local))["values"]


def serve_metrics(port: int = 0, local: Union[str, os.PathLike, None] = None,
                  host: str = "127.0.0.1") -> "_ferry.MetricsServer":
    """Serves the counters in Prometheus' text format at ``http://host:port/metrics`` until the
    returned server is closed (``server.close()``) or collected; ``server.port`` is the port
    (``port=0``: any free one). With ``local`` (a cache folder): the node's sums - every process
    reading it - labelled ``folder="..."``; without: this process's own. Counters are named
    ``ferry_cache_downloaded_bytes_total``, gauges ``ferry_stream_bytes_in_flight``, a store's
    ``ferry_storage_bytes_read_total{store="s3"}``. Loopback only unless ``host`` says otherwise
    (``"0.0.0.0"``: every interface)."""
    return _ferry.serve_metrics(port, None if local is None else os.fspath(local), host)


def prepare_process() -> None:
    """Called before a process opens its native dataset: names the process for ``ferry top``
    and, in a multiprocessing child, flushes its counters when it exits."""
    global _prepared_pid
    pid = os.getpid()
    if _prepared_pid == pid:
        return
    _prepared_pid = pid
    label = _label()
    if label:
        _ferry.set_process_label(label)
    import multiprocessing
    import multiprocessing.util

    if multiprocessing.parent_process() is not None:
        # Run by multiprocessing's exit of the child, before os._exit.
        multiprocessing.util.Finalize(None, _ferry.flush_metrics, exitpriority=100)


def _label() -> str:
    parts = []
    rank = os.environ.get("RANK")
    if rank is not None:
        parts.append(f"rank {rank}")
    try:
        import sys

        torch_data = sys.modules.get("torch.utils.data")
        info = torch_data.get_worker_info() if torch_data is not None else None
    except Exception:  # noqa: BLE001 - a label is never worth a failure
        info = None
    if info is not None:
        parts.append(f"worker {info.id}/{info.num_workers}")
    return " ".join(parts)
