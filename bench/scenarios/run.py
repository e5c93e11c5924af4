#!/usr/bin/python3
"""Cross-cloud scenario runner: the same data read from the S3 emulator through ferry-wan at
several round-trip times, by the naive per-file loader users start from and by ferry.

    /usr/bin/python3 bench/scenarios/run.py [--grid smoke|quick|full] [--out DIR]

It starts the loopback servers (scripts/test-servers.sh) unless FERRY_TEST_S3RVER_* says they
run, generates the synthetic JPEGs (bench/data), uploads them as files and as MDS shards, then
for each profile (pure delay, or delay plus a per-connection cap) and RTT measures:
  ceiling        ferry-fetch-bench: every shard with 16 requests in flight (the link's limit)
  naive-boto3-wN torch DataLoader(num_workers=N), one boto3 GET per file
  ferry-stream   `ferry stream --shuffle --touch` (native, raw bytes), epochs 1 and 2
  ferry-torch    ferry.StreamingDataset (raw bytes) under torch DataLoader(num_workers=2)
  ferry-decode   ferry.DataLoader with RandomResizedCrop(224) + flip + ToTensor, epochs 1, 2
  ferry-files    ferry.FileDataset over the files themselves (raw bytes), epochs 1 and 2
Each measurement runs in its own process, bounded in samples and time, and reports samples/s,
MB/s, link utilisation (MB/s / ceiling), time to the first batch and peak RSS. Writes
results.json, results.md and two plots (throughput vs RTT per method; bytes in flight and data
wait over one ferry-decode run). The `files` grid is issue 6's comparison alone: 10,000 files at
RTT 0 and 100 ms, FileDataset against the naive loader with 8 workers.
"""

import argparse
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "release"
FERRY = BUILD / "src" / "cli" / "ferry"
WAN = BUILD / "bench" / "ferry-wan"
FETCH = BUILD / "bench" / "ferry-fetch-bench"
MAKE_IMAGES = BUILD / "bench" / "data" / "ferry-make-images"

GRIDS = {
    "smoke": {"images": 48, "size_limit": "1mb", "rtts": [0, 40], "profiles": ["delay"],
              "naive_workers": [2], "naive_samples": 32, "timeout": 90},
    "quick": {"images": 2000, "size_limit": "64mb", "rtts": [0, 100],
              "profiles": ["delay", "capped"], "naive_workers": [2, 8], "naive_samples": 400,
              "timeout": 300},
    "full": {"images": 10000, "size_limit": "64mb", "rtts": [0, 50, 100, 150],
             "profiles": ["delay", "capped"], "naive_workers": [2, 8], "naive_samples": 1000,
             "timeout": 600},
    "files": {"images": 10000, "size_limit": "64mb", "rtts": [0, 100], "profiles": ["delay"],
              "naive_workers": [8], "naive_samples": 1000, "timeout": 600,
              "methods": ["ferry-files"]},
}
METHODS = ["ferry-stream", "ferry-torch", "ferry-decode", "ferry-files"]
CAP_MBPS = 25  # the "capped" profile: one TCP stream across clouds


# -- worker side: one measurement per process --------------------------------------------------

def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measure(batches, limit, sizes):
    """Iterates `batches` until `limit` samples; returns (samples, bytes, seconds, first_s)."""
    start = time.perf_counter()
    first = None
    samples = nbytes = 0
    for batch in batches:
        if first is None:
            first = time.perf_counter() - start
        n, b = sizes(batch)
        samples += n
        nbytes += b
        if limit and samples >= limit:
            break
    return samples, nbytes, time.perf_counter() - start, first or 0.0


def worker_naive(spec):
    import boto3
    import torch.utils.data

    class PerFile(torch.utils.data.IterableDataset):
        def __init__(self, keys):
            self.keys = keys

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            wid, n = (info.id, info.num_workers) if info else (0, 1)
            s3 = boto3.client("s3", endpoint_url=spec["endpoint"], region_name="us-east-1",
                              aws_access_key_id=spec["key"], aws_secret_access_key=spec["secret"])
            for k in self.keys[wid::n]:
                yield s3.get_object(Bucket=spec["bucket"], Key=k)["Body"].read()

    loader = torch.utils.data.DataLoader(PerFile(spec["keys"]), batch_size=16,
                                         num_workers=spec["workers"], collate_fn=list)
    s, b, t, first = _measure(loader, spec["limit"], lambda x: (len(x), sum(map(len, x))))
    return [{"epoch": 1, "samples": s, "bytes": b, "seconds": t, "first_s": first}]


def worker_ferry_torch(spec):
    import torch.utils.data

    import ferry

    ds = ferry.StreamingDataset(batch_size=32, remote=spec["url"], local=spec["cache"], shuffle=True,
                                image_format="bytes")
    loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=2,
                                         collate_fn=lambda b: [s["data"] for s in b])
    out = []
    for epoch in (1, 2):
        s, b, t, first = _measure(loader, 0, lambda x: (len(x), sum(map(len, x))))
        out.append({"epoch": epoch, "samples": s, "bytes": b, "seconds": t, "first_s": first})
    return out


def worker_ferry_decode(spec):
    import ferry
    from ferry import transforms as T

    ds = ferry.StreamingDataset(batch_size=32, remote=spec["url"], local=spec["cache"], shuffle=True)
    loader = ferry.DataLoader(ds, batch_size=32, num_threads=2, columns=["data"],
                              transform=[T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                                         T.ToTensor()])
    out = []
    timeline = []
    for epoch in (1, 2):
        stop = threading.Event()
        start = time.perf_counter()

        def sample():
            while not stop.is_set():
                m = ferry.metrics()
                timeline.append({"epoch": epoch, "t": time.perf_counter() - start,
                                 "bytes_in_flight": m.get("/ferry/stream/bytes_in_flight", 0),
                                 # the training loop's wait on data so far (loader.stats())
                                 "wait_s": loader._stats.wait_s})
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            s, b, t, first = _measure(loader, 0,
                                      lambda x: (len(x["data"]), 0))
        finally:
            stop.set()
            sampler.join()
        stats = loader.stats()
        out.append({"epoch": epoch, "samples": s, "bytes": stats.bytes_fetched, "seconds": t,
                    "first_s": first, "waiting_fraction": stats.waiting_fraction})
    return out, timeline


def worker_ferry_files(spec):
    import ferry

    ds = ferry.FileDataset(spec["url"], local=spec["cache"], shuffle=True)
    out = []
    for epoch in (1, 2):
        s, b, t, first = _measure(ds, 0, lambda x: (1, len(x["data"])))
        m = ferry.metrics()
        out.append({"epoch": epoch, "samples": s, "bytes": b, "seconds": t, "first_s": first,
                    "concurrency": m.get("/ferry/files/concurrency", 0),
                    "remote_requests": sum(v for k, v in m.items()
                                           if k.startswith("/ferry/storage/")
                                           and k.endswith("/requests"))})
    return out


def worker_main(spec):
    kind = spec["kind"]
    timeline = None
    if kind == "naive":
        rows = worker_naive(spec)
    elif kind == "ferry-files":
        rows = worker_ferry_files(spec)
    elif kind == "ferry-torch":
        rows = worker_ferry_torch(spec)
    else:
        rows, timeline = worker_ferry_decode(spec)
    print(json.dumps({"rows": rows, "peak_rss_mb": _peak_rss_mb(), "timeline": timeline}))


# -- driver side --------------------------------------------------------------------------------

def run(cmd, timeout, env=None, **kwargs):
    return subprocess.run(cmd, timeout=timeout, env=env, check=True, text=True,
                          capture_output=True, **kwargs).stdout


class Servers:
    """The loopback servers: reused when FERRY_TEST_S3RVER_* is set, else started here."""

    def __init__(self):
        self.started = False
        if "FERRY_TEST_S3RVER_ENDPOINT" not in os.environ:
            out = run([str(ROOT / "scripts" / "test-servers.sh"), "start", "--quiet"], 120)
            for line in out.splitlines():
                if line.startswith("export "):
                    key, _, value = line[len("export "):].partition("=")
                    os.environ[key] = value.strip("'\"")
            self.started = True
        e = os.environ
        self.endpoint = e["FERRY_TEST_S3RVER_ENDPOINT"]
        self.bucket = e["FERRY_TEST_S3RVER_BUCKET"]
        self.key = e["FERRY_TEST_S3RVER_ACCESS_KEY"]
        self.secret = e["FERRY_TEST_S3RVER_SECRET_KEY"]

    def stop(self):
        if self.started:
            subprocess.run([str(ROOT / "scripts" / "test-servers.sh"), "stop"],
                           capture_output=True, timeout=60)


class Wan:
    def __init__(self, target_port, delay_ms, conn_mbps, work):
        port_file = work / "wan.port"
        port_file.unlink(missing_ok=True)
        args = [str(WAN), "--target", f"127.0.0.1:{target_port}", "--delay-ms", str(delay_ms),
                "--port-file", str(port_file)]
        if conn_mbps:
            args += ["--conn-mbps", str(conn_mbps)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.025)
        self.endpoint = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", choices=sorted(GRIDS), default="quick")
    parser.add_argument("--out", default=str(ROOT / "build" / "bench" / "scenarios"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker_main(json.loads(pathlib.Path(args.worker).read_text()))
    grid = GRIDS[args.grid]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="ferry-scenarios-"))
    for tool in (FERRY, WAN, FETCH, MAKE_IMAGES):
        if not tool.exists():
            sys.exit(f"{tool} is missing: run make build")
    servers = Servers()
    results, timeline = [], None
    try:
        env = dict(os.environ, AWS_ACCESS_KEY_ID=servers.key, AWS_SECRET_ACCESS_KEY=servers.secret,
                   AWS_REGION="us-east-1", AWS_ENDPOINT_URL=servers.endpoint)
        images = work / "images"
        run([str(MAKE_IMAGES), str(images), "--count", str(grid["images"]), "--classes", "10",
             "--seed", "7"], 600)
        shards = work / "mds"
        run([str(FERRY), "convert", str(images), str(shards), "-q", "--size-limit",
             grid["size_limit"], "--columns", "data,label"], 600)
        prefix = f"scenarios-{os.getpid()}"
        run([str(FERRY), "cp", "-r", "-q", "--jobs", "16", str(images),
             f"s3://{servers.bucket}/{prefix}/files"], 900, env=env)
        run([str(FERRY), "cp", "-r", "-q", "--jobs", "8", str(shards),
             f"s3://{servers.bucket}/{prefix}/mds"], 900, env=env)
        # The server has just written GBs: let them reach the disk now rather than during the
        # first point measured.
        os.sync()
        files = sorted(images.rglob("*.jpg"))
        keys = [f"{prefix}/files/{p.relative_to(images)}" for p in files]
        mean_bytes = sum(p.stat().st_size for p in files) / max(1, len(files))
        largest = max(shards.glob("shard.*"), key=lambda p: p.stat().st_size)
        largest_shard = f"{prefix}/mds/{largest.name}"
        port = servers.endpoint.rsplit(":", 1)[1]
        for profile in grid["profiles"]:
            for rtt in grid["rtts"]:
                wan = Wan(port, rtt / 2, CAP_MBPS if profile == "capped" else 0, work)
                try:
                    rows, tl = measure_point(grid, servers, wan.endpoint, prefix, keys, work,
                                             profile, rtt, mean_bytes, largest_shard)
                    results += rows
                    if tl and (timeline is None or rtt == max(grid["rtts"])):
                        timeline = {"profile": profile, "rtt_ms": rtt, "samples": tl}
                finally:
                    wan.stop()
    finally:
        servers.stop()
        shutil.rmtree(work, ignore_errors=True)
    (out / "results.json").write_text(json.dumps(
        {"grid": args.grid, "images": grid["images"], "results": results,
         "timeline": timeline}, indent=1))
    (out / "results.md").write_text(markdown(results))
    plots(results, timeline, out)
    print(markdown(results))
    print(f"results in {out}")


def measure_point(grid, servers, endpoint, prefix, keys, work, profile, rtt, mean_bytes,
                  largest_shard):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=servers.key, AWS_SECRET_ACCESS_KEY=servers.secret,
               AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint)
    timeout = grid["timeout"]
    rows = []
    timeline = None
    # The ceiling: the better of every shard fetched whole with 16 requests in flight and the
    # largest shard as 16 ranged parts at once (with few shards, the first has few connections).
    rates = []
    for args in (["many", "--prefix", f"{prefix}/mds/shard.", "--inflight", "16"],
                 ["one", "--key", largest_shard, "--parts", "16"]):
        for line in run([str(FETCH), *args, "--bucket", servers.bucket], timeout,
                        env=env).splitlines():
            words = line.split()
            if "MB/s" in words:
                rates.append(float(words[words.index("MB/s") - 1]) * 1e6)
    ceiling = max(rates)
    point = {"profile": profile, "rtt_ms": rtt, "ceiling_mb_per_s": ceiling / 1e6}

    def add(method, epoch, samples, nbytes, seconds, first_s, rss, **extra):
        rate = nbytes / seconds if seconds else 0
        # Link utilisation means something only while the data crosses the link: epoch 1 (the
        # per-file loader fetches every epoch, so its one epoch counts).
        use = rate / ceiling if ceiling and epoch == 1 else None
        rows.append({**point, "method": method, "epoch": epoch, "samples": samples,
                     "samples_per_s": samples / seconds if seconds else 0,
                     "mb_per_s": rate / 1e6, "utilisation": use, "first_batch_s": first_s,
                     "peak_rss_mb": rss, **extra})

    def worker(spec):
        spec = dict(spec, endpoint=endpoint, bucket=servers.bucket, key=servers.key,
                    secret=servers.secret)
        # Through a file: the key list of a large grid is longer than one argument may be.
        spec_file = work / "worker-spec.json"
        spec_file.write_text(json.dumps(spec))
        cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", str(spec_file)]
        return json.loads(run(cmd, timeout, env=dict(env, PYTHONPATH=str(BUILD / "python")))
                          .splitlines()[-1])

    for n in grid["naive_workers"]:
        r = worker({"kind": "naive", "workers": n, "keys": keys[: grid["naive_samples"] * 4],
                    "limit": grid["naive_samples"]})
        for row in r["rows"]:
            add(f"naive-boto3-w{n}", row["epoch"], row["samples"], row["bytes"], row["seconds"],
                row["first_s"], r["peak_rss_mb"])
    methods = grid.get("methods", METHODS)
    url = f"s3://{servers.bucket}/{prefix}/mds"
    if "ferry-stream" in methods:
        cache = work / f"cache-stream-{profile}-{rtt}"
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", str(FERRY), "stream", url,
                               "--local", str(cache), "--epochs", "2", "--shuffle", "--touch",
                               "--json"],
                              timeout=timeout, env=env, check=True, text=True,
                              capture_output=True)
        rss = float(proc.stderr.strip().splitlines()[-1]) / 1024
        for epoch, j in enumerate((json.loads(l) for l in proc.stdout.splitlines()
                                   if l.startswith("{")), start=1):
            add("ferry-stream", epoch, j["samples"], j["bytes"], j["seconds"],
                j["time_to_first_sample_s"], rss)
        shutil.rmtree(cache, ignore_errors=True)
    if "ferry-files" in methods:
        cache = work / f"cache-files-{profile}-{rtt}"
        r = worker({"kind": "ferry-files", "url": f"s3://{servers.bucket}/{prefix}/files",
                    "cache": str(cache)})
        requests_before = 0
        for row in r["rows"]:
            add("ferry-files", row["epoch"], row["samples"], row["bytes"], row["seconds"],
                row["first_s"], r["peak_rss_mb"], concurrency=row["concurrency"],
                remote_requests=row["remote_requests"] - requests_before)
            requests_before = row["remote_requests"]
        shutil.rmtree(cache, ignore_errors=True)
    for kind in ("ferry-torch", "ferry-decode"):
        if kind not in methods:
            continue
        cache = work / f"cache-{kind}-{profile}-{rtt}"
        r = worker({"kind": kind, "url": url, "cache": str(cache)})
        for row in r["rows"]:
            extra = {"waiting_fraction": row["waiting_fraction"]} if "waiting_fraction" in row \
                else {}
            # ferry-decode hands out decoded tensors: count the encoded bytes it consumed.
            nbytes = row["bytes"] if kind == "ferry-torch" else row["samples"] * mean_bytes
            add(kind, row["epoch"], row["samples"], nbytes, row["seconds"], row["first_s"],
                r["peak_rss_mb"], **extra)
        shutil.rmtree(cache, ignore_errors=True)
        if r.get("timeline"):
            timeline = r["timeline"]
    return rows, timeline


def markdown(results):
    lines = ["| profile | RTT ms | method | epoch | samples/s | MB/s | link use | first batch s | "
             "peak RSS MB |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['profile']} | {r['rtt_ms']} | {r['method']} | {r['epoch']} | "
                     f"{r['samples_per_s']:.0f} | {r['mb_per_s']:.0f} | "
                     f"{'-' if r['utilisation'] is None else format(r['utilisation'], '.2f')} | "
                     f"{r['first_batch_s']:.2f} | "
                     f"{r['peak_rss_mb']:.0f} |")
    return "\n".join(lines) + "\n"


def plots(results, timeline, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for (method, profile, epoch) in sorted({(r["method"], r["profile"], r["epoch"])
                                            for r in results}):
        points = sorted((r["rtt_ms"], r["samples_per_s"]) for r in results
                        if (r["method"], r["profile"], r["epoch"]) == (method, profile, epoch))
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                label=f"{method} ({profile}, epoch {epoch})")
    ax.set_xlabel("round-trip time (ms)")
    ax.set_ylabel("samples/s")
    ax.set_yscale("log")
    ax.legend(fontsize=6)
    ax.set_title("throughput vs RTT")
    fig.tight_layout()
    fig.savefig(out / "throughput_vs_rtt.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    if timeline:
        samples = [s for s in timeline["samples"] if s["epoch"] == 1] or timeline["samples"]
        t = [s["t"] for s in samples]
        ax.plot(t, [s["bytes_in_flight"] / 1e6 for s in samples], label="MB in flight")
        ax2 = ax.twinx()
        ax2.plot(t, [s["wait_s"] for s in samples], color="tab:red", label="data wait (s)")
        ax2.set_ylabel("cumulative data wait (s)")
        ax.set_title(f"ferry-decode epoch 1, {timeline['profile']}, RTT {timeline['rtt_ms']} ms")
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB in flight")
    fig.tight_layout()
    fig.savefig(out / "timeline.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
