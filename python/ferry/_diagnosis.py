"""ferry.profile and ferry.diagnose: how long a training loop waits on data, where the wait goes,
and the one change to make.

The loop's own timing says how much of each step waited in ``next()`` (data) and how much ran
between batches (compute). The node's counters (``ferry.metrics(local=...)``: every process
reading the dataset's cache folders, DataLoader worker processes included) say what the readers
did meanwhile: bytes fetched, time waiting for a shard or a file, bytes in flight, and how long
one fetch takes. A sampler thread reads them four times a second for the report's plots, with
the GPU's utilisation when there is one (NVML, else ``nvidia-smi``).
"""

from __future__ import annotations

import ctypes
import math
import os
import shutil
import subprocess
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch

from . import _ferry
from .dataset import StreamingDataset
from .files import FileDataset
from .loader import DataLoader, _metric_sum, _source_bytes

SAMPLE_EVERY_S = 0.25
COMPUTE_BOUND = 0.10  # waiting at most this share of the time: the data keeps up
# The most points a plotted series keeps: past it, neighbours are averaged in pairs, so that a
# profile around a week of training holds a few hundred KB and still draws the whole run.
MAX_POINTS = 8192


class _Series:
    """Columns of equal length, appended a row at a time, each row the mean of ``stride`` rows
    given: once the columns hold MAX_POINTS rows, neighbouring rows are averaged in pairs and
    the stride doubles, so every row stands for as many of the rows given."""

    def __init__(self, *names: str) -> None:
        self.columns: Dict[str, List[float]] = {name: [] for name in names}
        self._stride = 1
        self._pending: Dict[str, float] = dict.fromkeys(names, 0.0)
        self._pending_rows = 0

    def append(self, **row: float) -> None:
        for name, value in row.items():
            self._pending[name] += value
        self._pending_rows += 1
        if self._pending_rows < self._stride:
            return
        for name, values in self.columns.items():
            values.append(self._pending[name] / self._pending_rows)
            self._pending[name] = 0.0
        self._pending_rows = 0
        if len(next(iter(self.columns.values()))) >= MAX_POINTS:
            for name, values in self.columns.items():
                self.columns[name] = [(values[i] + values[i + 1]) / 2
                                      for i in range(0, len(values) - 1, 2)]
            self._stride *= 2

    def __getitem__(self, name: str) -> List[float]:
        return self.columns[name]


# -- what is being read, and by whom ------------------------------------------------------------

class _Setup:
    """What ``diagnose`` looks at: the dataset's kind and state, the loader in front of it, and
    the cache folders whose node-wide counters show its readers.

    ``readers`` is the number of threads or processes reading the dataset: a ferry.DataLoader's
    threads, a torch DataLoader's worker processes (1 without), or the caller itself."""

    def __init__(self, loader: Any) -> None:
        self.loader = ""
        self.threads = 1
        self.readers = 1
        self.images = False
        dataset = loader
        if isinstance(loader, DataLoader):
            self.loader, dataset = "DataLoader", loader.dataset
            self.threads = self.readers = loader.num_threads
            self.images = any(transform is not None for _, transform in loader._columns)
        elif isinstance(loader, torch.utils.data.DataLoader):
            self.loader, dataset = "torch.utils.data.DataLoader", loader.dataset
            self.threads = loader.num_workers
            self.readers = max(1, loader.num_workers)
        self.dataset = ""
        self.remote = self.pack = False
        self.auto_concurrency = True
        self.folders: List[str] = []
        self.predownload: Optional[int] = None  # as given (None: auto)
        self.prices: Dict[str, Tuple[str, float]] = {}  # source counter -> label, USD per GB
        if isinstance(dataset, StreamingDataset):
            for stream in dataset.streams:
                for url, egress in getattr(stream, "egress", {}).items():
                    label = egress["label"] or _source_label(url)
                    self.prices[_source_counter(label)] = (label, egress["usd_per_gb"])
            self.predownload = dataset._options.get("predownload")
            self.dataset = "StreamingDataset"
            self.remote = any(stream.remote for stream in dataset.streams)
            self.folders = sorted({os.path.abspath(s.local) for s in dataset.streams
                                   if s.remote and s.local})
        elif isinstance(dataset, FileDataset):
            self.dataset = "FileDataset"
            self.remote = dataset.local is not None  # else read in place, nothing fetched
            self.pack = bool(dataset._options.get("pack"))
            self.auto_concurrency = dataset._options.get("concurrency") is None
            if dataset.local:
                self.folders = [os.path.abspath(dataset.local)]
        self.one_sample_per_step = dataset is loader and bool(self.dataset)

    def counters(self) -> Tuple[Dict[str, int], List[Dict[str, int]]]:
        """(counters and gauges summed over the readers, each live process's values).

        From the cache folders' node-wide counters when there are any (a process publishing to
        two folders is counted once; what exited processes counted, from the folder that holds
        the most); else this process's own."""
        if not self.folders:
            own = _ferry.metrics()
            return own, [own]
        by_pid: Dict[int, Dict[str, int]] = {}
        exited: Dict[str, int] = {}
        for folder in self.folders:
            node = _ferry.node_metrics(folder)
            for process in node["processes"]:
                by_pid.setdefault(process["pid"], process["values"])
            for name, value in node["exited"].items():
                exited[name] = max(exited.get(name, 0), value)
        total = dict(exited)
        for values in by_pid.values():
            for name, value in values.items():
                total[name] = total.get(name, 0) + value
        return total, list(by_pid.values())


def _source_label(url: str) -> str:
    """The engine's label of a source without one (SourceLabel): its store and bucket, or the
    folder of a local path."""
    if "://" not in url:
        return "file://" + os.path.abspath(url).rstrip("/")
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}" if rest.split("/", 1)[0] else url.rstrip("/")


def _source_counter(label: str) -> str:
    """The counter of a source's bytes (SourceCounterName)."""
    name = "".join(c if c.isascii() and (c.isalnum() or c in "-.") else "_" for c in label)
    return f"/ferry/source/{name}/bytes_read"


def _sources(before: Dict[str, int], after: Dict[str, int],
             prices: Dict[str, Tuple[str, float]]) -> Dict[str, Dict[str, float]]:
    """The bytes each source delivered (docs/sources.md, "Egress"), and their estimated egress
    cost at the prices the streams give: {label: {"bytes", "usd"}}."""
    out: Dict[str, Dict[str, float]] = {}
    for name, value in after.items():
        if not (name.startswith("/ferry/source/") and name.endswith("/bytes_read")):
            continue
        n = value - before.get(name, 0)
        if n <= 0:
            continue
        label, price = prices.get(name, (name[len("/ferry/source/"):-len("/bytes_read")], 0.0))
        out[label] = {"bytes": n, "usd": n / 1e9 * price}
    return out


def _latency(processes: List[Dict[str, int]]) -> Optional[float]:
    """The streaming readers' mean time of one fetch, in seconds (None: none measured)."""
    latencies = [p["/ferry/stream/fetch_latency_us"] / 1e6 for p in processes
                 if p.get("/ferry/stream/fetch_latency_us", 0) > 0]
    return sum(latencies) / len(latencies) if latencies else None


class _Measured:
    """What one run counted (differences of the readers' counters), with the loop's timing."""

    def __init__(self, before: Dict[str, int], after: Dict[str, int], wait_s: float,
                 compute_s: float, processes: Optional[List[Dict[str, int]]] = None,
                 in_flight: Optional[float] = None,
                 fetch_latency_s: Optional[float] = None) -> None:
        def delta(name: str) -> int:
            return after.get(name, 0) - before.get(name, 0)

        self.wait_s, self.compute_s = wait_s, compute_s
        total = wait_s + compute_s
        self.waiting_fraction = wait_s / total if total else 0.0
        self.bytes_fetched = _source_bytes(after) - _source_bytes(before)
        # Files fetched from the source: a FileDataset's fetches, less those its cache served.
        self.files_fetched = max(0, delta("/ferry/files/fetched") - delta("/ferry/cache/hits"))
        self.packed_reads = delta("/ferry/files/packed_reads")
        # Time the readers spent waiting for a shard or a file to arrive, summed over readers.
        self.fetch_wait_s = (delta("/ferry/stream/wait_ns") + delta("/ferry/files/wait_ns")) / 1e9
        self.requests = _metric_sum(after, "/ferry/storage/", "/requests") - _metric_sum(
            before, "/ferry/storage/", "/requests")
        # Throttle replies of the stores, and the time requests waited them out at the gates.
        self.throttled = delta("/ferry/storage/throttled")
        self.throttle_wait_s = delta("/ferry/storage/throttle_wait_ns") / 1e9
        self.gauges = after
        # One fetch's time, as the streaming readers measured it (sampled during the run: worker
        # processes take their gauges with them), else as the live ones say now.
        self.fetch_latency_s = (fetch_latency_s if fetch_latency_s is not None
                                else _latency(processes or [after]))
        # Bytes the readers had in flight, on average over the run (sampled), else now.
        self.in_flight = (in_flight if in_flight is not None
                          else float(after.get("/ferry/stream/bytes_in_flight", 0)))


# -- the verdict --------------------------------------------------------------------------------

def _now(measured: _Measured, gauge: str, auto: bool) -> str:
    value = measured.gauges.get(gauge, 0)
    if value <= 0:
        return ""
    return f" (auto chose {value})" if auto else f" ({value} now)"


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def _fetch_arithmetic(m: _Measured, given: Optional[int]) -> Tuple[str, Optional[int]]:
    """Little's law over the run: the bytes in flight the loop needs, against those it had; and
    the predownload that would hold them (None: not enough measured)."""
    latency, in_flight = m.fetch_latency_s, m.in_flight
    elapsed = m.wait_s + m.compute_s
    if not latency or m.bytes_fetched <= 0 or elapsed <= 0:
        return "", None
    moved = m.bytes_fetched / elapsed
    if m.compute_s > 0.05 * elapsed:
        wanted = m.bytes_fetched / m.compute_s  # what the loop takes while it computes
        why = f"the loop takes {_mb(wanted)}/s when it computes"
    else:
        wanted = 2 * moved  # it computes nothing: any more is taken at once
        why = f"the loop computes next to nothing, so twice the {_mb(moved)}/s it got"
    needed = wanted * latency
    text = (f"{_mb(in_flight)} in flight moved {_mb(moved)}/s at {latency:.2f} s a fetch; {why}, "
            f"which needs {_mb(wanted)}/s x {latency:.2f} s = {_mb(needed)} in flight")
    predownload = given or m.gauges.get("/ferry/stream/predownload", 0)
    if predownload <= 0 or in_flight <= 0:
        return text, None
    return text, max(predownload + 1, math.ceil(predownload * needed / in_flight))


def _advice(setup: _Setup, m: _Measured) -> Tuple[str, Dict[str, List[str]]]:
    """The verdict and what to change, naming only options of the classes in use: returns the
    text and {class: [the options it names]}."""
    named: Dict[str, List[str]] = {}

    def option(owner: str, name: str) -> str:
        named.setdefault(owner, []).append(name)
        return name

    waiting = f"{100 * m.waiting_fraction:.0f} % waiting"
    if m.waiting_fraction <= COMPUTE_BOUND:
        return (f"compute-bound: {waiting} on data; the data keeps up, a faster loader would "
                f"not help"), named
    fetch_share = m.fetch_wait_s / setup.readers / m.wait_s if m.wait_s > 0 else 0.0
    fetches = setup.remote or not setup.dataset  # a local dataset reads through no store
    share = f"the readers waited for fetches {100 * min(fetch_share, 1.0):.0f} % of that"
    if fetches and m.bytes_fetched > 0 and m.throttled and m.throttle_wait_s >= m.wait_s:
        # Requests spent at least the loop's whole wait waiting out throttle replies (summed
        # over the requests in flight): more requests at once only draw more of them.
        return (f"fetch-bound: {waiting}, and the store sent {m.throttled} throttle replies "
                f"({m.throttle_wait_s:.1f} s waited out at its gates, over the requests in "
                f"flight): fewer, larger requests help (larger shards), or the data spread over "
                f"more prefixes; more requests at once only draw more throttle replies"), named
    if fetches and m.bytes_fetched > 0 and fetch_share >= 0.5:
        if setup.dataset == "FileDataset":
            what = ("every file of this first epoch is fetched once, to be packed; later epochs "
                    "read the packs" if setup.pack else "the files are fetched one request each")
            auto = _now(m, "/ferry/files/concurrency", setup.auto_concurrency)
            return (f"fetch-bound: {waiting}, {share} ({what}): raise FileDataset's "
                    f"{option('FileDataset', 'concurrency')}{auto} or "
                    f"{option('FileDataset', 'max_bytes_in_flight')}, stage the folder closer "
                    f"(ferry cp -r), or convert it to shards once (ferry convert) and train "
                    f"from those with StreamingDataset"), named
        if setup.dataset == "StreamingDataset":
            arithmetic, target = _fetch_arithmetic(m, setup.predownload)
            predownload = option("StreamingDataset", "predownload")
            now = (f" ({setup.predownload} now)" if setup.predownload else
                   _now(m, "/ferry/stream/predownload", True))
            raise_to = (f"raise StreamingDataset's {predownload} to {target}{now}" if target
                        else f"raise StreamingDataset's {predownload}{now}")
            return (f"fetch-bound: {waiting}, {share}"
                    f"{'; ' + arithmetic if arithmetic else ''}: {raise_to}, with "
                    f"{option('StreamingDataset', 'download_concurrency')}"
                    f"{_now(m, '/ferry/stream/concurrency', True)} and "
                    f"{option('StreamingDataset', 'max_bytes_in_flight')} to carry it (ferry "
                    f"doctor URL --dataset measures the link), use larger shards, or stage the "
                    f"shards closer (ferry cp -r)"), named
        return (f"fetch-bound: {waiting}, {share}: fetch more at once, or stage the data closer "
                f"(ferry cp -r)"), named
    if setup.dataset and not setup.remote:
        why = "a local dataset: nothing to fetch"
    elif m.bytes_fetched > 0:
        why = (f"{m.bytes_fetched / 1e6:.1f} MB were fetched, but the readers waited for them "
               f"only {100 * min(fetch_share, 1.0):.0f} % of the time")
    elif m.packed_reads:
        why = "nothing fetched: the files come from the packs"
    else:
        why = "nothing fetched: the data came from the cache"
    cores = len(os.sched_getaffinity(0))
    steps = []
    if setup.dataset == "FileDataset" and setup.remote and not setup.pack:
        steps.append(f"{option('FileDataset', 'pack')}=True (later epochs then read a few local "
                     f"shards instead of one file per sample)")
    if setup.loader == "DataLoader":
        steps.append(f"raise DataLoader's {option('DataLoader', 'num_threads')} "
                     f"({setup.threads} now, {cores} cores)")
        if setup.images:
            steps.append(f"shrink the decoding: Decode({option('Decode', 'dct_scaling')}=True) "
                         f"before a shrinking Resize, or RandomResizedCrop first (it decodes "
                         f"only the crop)")
    elif setup.loader:
        steps.append(f"raise {setup.loader}'s {option(setup.loader, 'num_workers')} "
                     f"({setup.threads} now, {cores} cores), or read with ferry.DataLoader "
                     f"(decoding and collating in native threads)")
    else:
        steps.append(f"read it with ferry.DataLoader and several "
                     f"{option('DataLoader', 'num_threads')}")
    return f"decode-bound: {waiting} on reading, decoding and transforms ({why}): " \
           f"{'; '.join(steps)}", named


def _describe(setup: _Setup, m: _Measured) -> str:
    if setup.dataset != "FileDataset":
        return setup.dataset + ("" if setup.remote or not setup.dataset else ", local")
    if not setup.remote:
        return "FileDataset, read in place"
    parts = []
    if m.files_fetched:
        parts.append(f"{m.files_fetched} files fetched" + (" into the pack" if setup.pack else ""))
    if m.packed_reads:
        parts.append(f"{m.packed_reads} read from packs")
    return ", ".join(["FileDataset"] + (parts or ["no file fetched"]))


# -- the GPU ------------------------------------------------------------------------------------

class _NvmlRates(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Gpu:
    """The GPUs' utilisation (%), from NVML (libnvidia-ml, through ctypes) or ``nvidia-smi``;
    ``source`` is None where there is neither. ``close()`` shuts NVML down again."""

    def __init__(self) -> None:
        self.source: Optional[str] = None
        self._nvml = None
        self._handles: List[ctypes.c_void_p] = []
        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
            if nvml.nvmlInit_v2() == 0:
                count = ctypes.c_uint(0)
                if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0 and count.value > 0:
                    for i in range(count.value):
                        handle = ctypes.c_void_p()
                        if nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) == 0:
                            self._handles.append(handle)
                    if self._handles:
                        self._nvml, self.source = nvml, "nvml"
        except (OSError, AttributeError):
            pass
        self._smi = None
        if self.source is None:
            self._smi = shutil.which("nvidia-smi")
            if self._smi is not None and self.sample() is not None:
                self.source = "nvidia-smi"

    def sample(self) -> Optional[List[float]]:
        """Each GPU's utilisation now, or None when it cannot be read."""
        if self._nvml is not None:
            out = []
            for handle in self._handles:
                rates = _NvmlRates()
                if self._nvml.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(rates)) != 0:
                    return None
                out.append(float(rates.gpu))
            return out
        if self._smi is not None:
            try:
                text = subprocess.run(
                    [self._smi, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=5,
                    check=True).stdout
                values = [float(line) for line in text.split() if line.strip()]
                return values or None
            except (OSError, ValueError, subprocess.SubprocessError):
                return None
        return None

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.nvmlShutdown()
            self._nvml = None


# -- the profile --------------------------------------------------------------------------------

class Profile:
    """Times a training loop around ``loader``, epoch by epoch, and samples what its readers do.

    ::

        with ferry.profile(loader, report="run.html") as prof:
            for epoch in range(2):
                for batch in prof:          # one pass over the loader: an epoch
                    train_step(batch)
        print(prof.verdict)

    Each pass (``for batch in prof``) iterates ``loader`` once, timing ``next()`` (the wait for
    data) apart from the rest (compute). ``result()`` - also ``prof.report`` after the block -
    has the figures of every epoch and of the whole, where the wait went, the GPU's utilisation
    and the verdict (see ``ferry.diagnose``); with ``report=``, leaving the block writes it as a
    self-contained HTML page with plots.
    """

    def __init__(self, loader: Any, report: Optional[str] = None,
                 max_steps: Optional[int] = None) -> None:
        if report:
            import matplotlib  # noqa: F401 - the page needs it: say so now, not after the run

        self.loader = loader
        self.report_path = report
        self.max_steps = max_steps
        self.setup = _Setup(loader)
        self.epochs: List[Dict[str, Any]] = []
        self.steps = 0
        self.step_waits = _Series("step", "wait")  # each step's wait for data, in order
        self.series = _Series("t", "read_bytes", "in_flight", "cache_bytes", "gpu", "latency")
        self.report: Optional[Dict[str, Any]] = None
        self._gpu: Optional[_Gpu] = None
        self._stop = threading.Event()
        self._sampler: Optional[threading.Thread] = None
        self._before: Dict[str, int] = {}
        self._started = 0.0

    # The block.
    def __enter__(self) -> "Profile":
        self._gpu = _Gpu()
        self._before, _ = self.setup.counters()
        self._started = time.perf_counter()
        self._sample()
        self._sampler = threading.Thread(target=self._sample_loop, name="ferry-profile",
                                         daemon=True)
        self._sampler.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()
        self._sample()
        if self._gpu is not None:
            self._gpu.close()
        self.report = self.result()
        if self.report_path and exc[0] is None:
            from ._report import write_html

            write_html(self.report, self.series.columns, self.step_waits.columns,
                       self.report_path)

    def _sample_loop(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            self._sample()

    def _sample(self) -> None:
        values, processes = self.setup.counters()
        latency = _latency(processes)
        gpu = self._gpu.sample() if self._gpu is not None and self._gpu.source else None

        def grown(name: str) -> int:
            return values.get(name, 0) - self._before.get(name, 0)

        self.series.append(
            t=time.perf_counter() - self._started,
            read_bytes=float(_source_bytes(values) - _source_bytes(self._before)),
            in_flight=float(values.get("/ferry/stream/bytes_in_flight", 0)),
            cache_bytes=float(grown("/ferry/cache/downloaded_bytes") -
                              grown("/ferry/cache/evicted_bytes")),
            gpu=sum(gpu) / len(gpu) if gpu else float("nan"),
            latency=float("nan") if latency is None else latency)

    # The loop.
    def __iter__(self) -> Iterator[Any]:
        epoch = {"epoch": len(self.epochs), "steps": 0, "samples": 0, "wait_s": 0.0,
                 "compute_s": 0.0}
        self.epochs.append(epoch)
        it = iter(self.loader)
        try:
            t = time.perf_counter()
            while self.max_steps is None or self.steps < self.max_steps:
                try:
                    batch = next(it)
                except StopIteration:
                    break
                t1 = time.perf_counter()
                epoch["wait_s"] += t1 - t
                self.step_waits.append(step=float(self.steps), wait=t1 - t)
                self.steps += 1
                epoch["steps"] += 1
                epoch["samples"] += self._batch_samples(batch)
                yield batch
                t = time.perf_counter()
                epoch["compute_s"] += t - t1
        finally:  # also when the caller breaks out: the readers' files and threads go now
            close = getattr(it, "close", None)
            if close is not None:
                close()

    def _batch_samples(self, batch: Any) -> int:
        if self.setup.one_sample_per_step:
            return 1
        first = next(iter(batch.values())) if isinstance(batch, dict) else batch
        try:
            return len(first)
        except TypeError:
            return 1

    # The figures.
    def result(self) -> Dict[str, Any]:
        after, processes = self.setup.counters()
        wait = sum(e["wait_s"] for e in self.epochs)
        compute = sum(e["compute_s"] for e in self.epochs)
        samples = sum(e["samples"] for e in self.epochs)
        steps = sum(e["steps"] for e in self.epochs)
        in_flight = self.series["in_flight"]
        latencies = [x for x in self.series["latency"] if x == x]
        m = _Measured(self._before, after, wait, compute, processes,
                      in_flight=sum(in_flight) / len(in_flight) if in_flight else None,
                      fetch_latency_s=sum(latencies) / len(latencies) if latencies else None)
        verdict, named = _advice(self.setup, m)
        total = wait + compute
        for e in self.epochs:
            both = e["wait_s"] + e["compute_s"]
            e["waiting_fraction"] = e["wait_s"] / both if both else 0.0
        gpu = [g for g in self.series["gpu"] if g == g]
        fetching = min(wait, m.fetch_wait_s / self.setup.readers)
        return {
            "steps": steps, "samples": samples, "wait_s": wait, "compute_s": compute,
            "waiting_fraction": m.waiting_fraction,
            "samples_per_s": samples / total if total else 0.0,
            "bytes_fetched": m.bytes_fetched, "files_fetched": m.files_fetched,
            "packed_reads": m.packed_reads, "fetch_wait_s": m.fetch_wait_s,
            "requests": m.requests, "throttled": m.throttled,
            "throttle_wait_s": m.throttle_wait_s,
            "sources": _sources(self._before, after, self.setup.prices),
            "where": {"fetching_s": fetching, "reading_decoding_s": max(0.0, wait - fetching),
                      "bytes_in_flight": m.in_flight, "fetch_latency_s": m.fetch_latency_s},
            "epochs": [dict(e) for e in self.epochs],
            "gpu": ({"source": self._gpu.source, "utilization": sum(gpu) / len(gpu) if gpu
                     else None} if self._gpu is not None and self._gpu.source else None),
            "dataset": _describe(self.setup, m), "readers": self.setup.readers,
            "verdict": verdict, "kind": verdict.split(":")[0], "options": named,
        }

    @property
    def verdict(self) -> str:
        return (self.report or self.result())["verdict"]


def profile(loader: Any, report: Optional[str] = None) -> Profile:
    """A ``Profile`` of a training loop over ``loader`` (a context manager; see ``Profile``)."""
    return Profile(loader, report=report)


def _summary(report: Dict[str, Any]) -> str:
    total = report["wait_s"] + report["compute_s"]
    gpu = report["gpu"]
    gpu_text = ("no GPU" if gpu is None else
                f"GPU {gpu['utilization']:.0f} % busy" if gpu["utilization"] is not None else
                "GPU utilisation unreadable")
    epochs = "; ".join(f"epoch {e['epoch']}: {100 * e['waiting_fraction']:.0f} % waiting"
                       for e in report["epochs"]) if len(report["epochs"]) > 1 else ""
    return (f"ferry.diagnose: {report['steps']} steps, {report['samples']} samples, "
            f"{100 * report['waiting_fraction']:.1f} % waiting on data ({report['wait_s']:.2f} s "
            f"of {total:.2f} s){' (' + epochs + ')' if epochs else ''}, "
            f"{report['samples_per_s']:.0f} samples/s, {report['bytes_fetched'] / 1e6:.1f} MB "
            f"fetched ({report['dataset'] or 'data'})"
            f"{_throttled(report)}{_egress(report)}, {gpu_text} -> {report['verdict']}")


def _egress(report: Dict[str, Any]) -> str:
    sources = report.get("sources") or {}
    if not sources:
        return ""
    return ", from " + ", ".join(
        f"{label} {s['bytes'] / 1e6:.1f} MB" + (f" (about ${s['usd']:.2f} of egress)"
                                                 if s["usd"] else "")
        for label, s in sources.items())


def _throttled(report: Dict[str, Any]) -> str:
    if not report.get("throttled"):
        return ""
    return (f", {report['throttled']} throttle replies ({report['throttle_wait_s']:.1f} s "
            f"waited)")


def diagnose(loader: Any, step_fn: Callable[[Any], Any], steps: int = 50,
             out: Callable[[str], Any] = print, report: Optional[str] = None,
             epochs: int = 1) -> Dict[str, Any]:
    """Runs ``steps`` training steps (``step_fn(batch)``; over at most ``epochs`` passes) and
    reports how much of the time the loop waited on data, where the wait went, the GPU's
    utilisation ("no GPU" where there is none), the store's throttling where there was any, and
    a verdict - compute-bound, fetch-bound or decode-bound - with the change to make and the
    arithmetic behind it (for a throttled store: fewer, larger requests), naming only options
    of the classes in use.

    ``loader`` is a ``ferry.DataLoader``, a torch ``DataLoader`` (worker processes included:
    their counters are read node-wide from the dataset's cache folders), a
    ``StreamingDataLoader``, or the dataset itself. The report (a dict, see ``Profile.result``)
    has the figures, ``"verdict"``, ``"kind"`` and ``"options"``: {class: [the options the
    verdict names]}. With ``report="run.html"`` it is also written as an HTML page with plots.
    """
    prof = Profile(loader, report=report, max_steps=steps)
    with prof:
        for _ in range(epochs):
            before = prof.steps
            for batch in prof:
                step_fn(batch)
            if prof.steps == before or prof.steps >= steps:
                break
    result = prof.report
    out(_summary(result))
    return result


__all__ = ["Profile", "diagnose", "profile"]
