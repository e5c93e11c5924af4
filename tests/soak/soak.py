#!/usr/bin/env python3
"""The soak: a long, bounded run of the drop-in path under faults (``make soak``, 20 minutes; a
2-minute version in ``make reliability``). Run by scripts/soak.sh, which starts the servers.

Jobs: ``--processes`` (4) Python processes, each a ``StreamingDataset`` under torch's
``DataLoader`` with ``--workers`` (2) persistent workers, reading epoch after epoch, shuffled,
with ``validate_hash`` and a shuffle block of 3 shards, from s3rver through ferry-wan into one
cache folder whose limit holds half the dataset. ferry-wan injects 5 % faults (cut, reset, stalled and flipped bodies,
refused requests, 503 and 500 replies, and the lies: short bodies, other ranges, HTML pages, a
changed object) and throttles in bursts (requests beyond 20/s refused with 503 SlowDown for 5 s
of every 30). Every ``--kill-every`` seconds one job - never the first, the survivor - is
SIGKILLed with its workers and started again.

Checked, and written to OUT/summary.json:
  - every epoch of every job reads every sample once, each one's bytes as written (none lost,
    repeated or corrupt); no job fails;
  - the survivor's resident memory, open descriptors and threads (its process and its workers)
    from warm-up (the first quarter of the run) to the end show no growth: the last third's
    median within 10 % (and 32 MiB) of the first third's peak for memory, within 8 descriptors
    and 4 threads;
  - the cache folder's shard files stay within the limit plus the documented slack (one shard
    per download in flight beyond the first, over every reader: 2 x readers - 1 shards).
Exit status 0 when all of that holds, 1 otherwise (the reasons on stderr).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = 3000
BLOB = 4000
SHARD_BYTES = 96 << 10


def blob_of(i: int) -> bytes:
    """Sample i's bytes: a function of i alone, so a reader checks what it got."""
    seed = hashlib.blake2b(str(i).encode(), digest_size=64).digest()
    return (seed * (BLOB // 64 + 1))[:BLOB]


# ---------------------------------------------------------------------------------------------
# Resource use of a process and its children, from /proc.

def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def usage(pid: int) -> dict:
    """Resident bytes, open descriptors and threads of `pid` and its children, summed."""
    rss = fds = threads = 0
    for p in [pid] + _children(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("Threads:"):
                        threads += int(line.split()[1])
            fds += len(os.listdir(f"/proc/{p}/fd"))
        except OSError:
            continue  # gone meanwhile
    return {"rss": rss, "fds": fds, "threads": threads}


# ---------------------------------------------------------------------------------------------
# A job: one process reading epochs through a DataLoader, reporting as JSON lines on stdout.

def run_job(args) -> int:
    import torch.utils.data
    import ferry

    def emit(record):
        print(json.dumps(record), flush=True)

    stop = threading.Event()

    def sample_usage():
        while not stop.wait(2.0):
            emit({"kind": "usage", "t": time.time(), **usage(os.getpid())})

    dataset = ferry.StreamingDataset(remote=args.remote, local=args.local,
                                     cache_limit=args.cache_limit, shuffle=True,
                                     shuffle_seed=args.index + 1, shuffle_block_size=72,
                                     validate_hash="xxh64", batch_size=64,
                                     download_concurrency=2)
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=args.workers,
                                         persistent_workers=True, collate_fn=list)
    sampler = threading.Thread(target=sample_usage, daemon=True)
    sampler.start()
    expected = [blob_of(i) for i in range(SAMPLES)]
    for epoch in range(args.epochs):
        if time.time() >= args.deadline:
            break
        started = time.time()
        counts = [0] * SAMPLES
        corrupt = 0
        for batch in loader:
            for sample in batch:
                i = int(sample["id"])
                if not 0 <= i < SAMPLES or bytes(sample["blob"]) != expected[i]:
                    corrupt += 1
                    continue
                counts[i] += 1
        emit({"kind": "epoch", "epoch": epoch, "samples": sum(counts),
              "lost": counts.count(0), "repeated": sum(c - 1 for c in counts if c > 1),
              "corrupt": corrupt, "seconds": time.time() - started})
    stop.set()
    return 0


# ---------------------------------------------------------------------------------------------
# The supervisor.

def shard_bytes_in(folder: str) -> tuple[int, int, int]:
    """Bytes of the shard files under `folder` (ferry's own .ferry/ aside), of those the
    temporaries of downloads, and how many temporaries."""
    total = temporary = temporaries = 0
    for dirpath, dirnames, names in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d != ".ferry"]
        for name in names:
            if name.startswith("shard."):
                try:
                    size = os.stat(os.path.join(dirpath, name)).st_size
                except OSError:
                    continue  # evicted meanwhile
                total += size
                if name.endswith(".ferry-tmp"):
                    temporary += size
                    temporaries += 1
    return total, temporary, temporaries


def write_dataset(url: str) -> int:
    """Writes the dataset to `url`; returns its largest shard's size."""
    import ferry

    with ferry.MDSWriter(out=url, columns={"id": "int", "blob": "bytes"}, hashes=["xxh64"],
                         size_limit=SHARD_BYTES) as writer:
        for i in range(SAMPLES):
            writer.write({"id": i, "blob": blob_of(i)})
    return SHARD_BYTES  # a shard closes before a sample would take it past the limit


def start_wan(binary: str, target: str, out: str) -> tuple[subprocess.Popen, str]:
    port_file = os.path.join(out, "wan.port")
    kinds = "truncate,reset,stall,flip,refuse,http503,busy,http500,short,range,html,etag"
    proc = subprocess.Popen(
        [binary, "--target", target, "--port-file", port_file, "--fault-rate", "0.05",
         "--fault-kinds", kinds, "--fault-seed", "11", "--fault-max-offset", "100000",
         "--fault-stall-ms", "300", "--throttle-rps", "20", "--throttle-burst-s", "5",
         "--throttle-every-s", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 10
    while not (os.path.exists(port_file) and open(port_file).read().endswith("\n")):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("soak: ferry-wan did not start")
        time.sleep(0.02)
    return proc, f"http://127.0.0.1:{open(port_file).read().strip()}"


class Job:
    def __init__(self, index: int, life: int, args, env: dict):
        self.index, self.life = index, life
        self.log_path = os.path.join(args.out, f"job{index}.{life}.jsonl")
        command = [sys.executable, os.path.abspath(__file__), "--job", "--index", str(index),
                   "--remote", args.remote, "--local", args.local, "--cache-limit",
                   str(args.cache_limit), "--workers", str(args.workers), "--epochs",
                   str(args.epochs), "--deadline", str(args.deadline)]
        with open(self.log_path, "w") as log, open(self.log_path + ".err", "w") as err:
            # A session of its own: a kill takes the job's DataLoader workers with it.
            self.proc = subprocess.Popen(command, stdout=log, stderr=err, env=env,
                                         start_new_session=True)
        self.killed = False

    def kill(self):
        self.killed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def records(self, kind: str) -> list[dict]:
        out = []
        with open(self.log_path) as f:
            for line in f:
                if line.startswith("{"):
                    record = json.loads(line)
                    if record["kind"] == kind:
                        out.append(record)
        return out


def growth(series: list[dict], key: str) -> tuple[int, int]:
    """(peak of the first third, median of the last third) of `series`' `key`: a leak raises the
    floor for good, where what a reader holds at a moment (a lock per pinned shard, connections
    in flight) comes and goes."""
    third = max(1, len(series) // 3)
    last = sorted(s[key] for s in series[-third:])
    return max(s[key] for s in series[:third]), last[len(last) // 2]


def supervise(args) -> int:
    os.makedirs(args.out, exist_ok=True)
    endpoint = os.environ.get("FERRY_TEST_S3RVER_ENDPOINT")
    if not endpoint:
        raise SystemExit("soak: no S3 test server (run through scripts/soak.sh)")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=os.environ["FERRY_TEST_S3RVER_ACCESS_KEY"],
               AWS_SECRET_ACCESS_KEY=os.environ["FERRY_TEST_S3RVER_SECRET_KEY"],
               AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint,
               FERRY_LOW_SPEED_LIMIT="4096", FERRY_LOW_SPEED_TIME="2",
               # Every download started again, with why, in the jobs' logs (OUT/job*.err).
               FERRY_LOG=os.environ.get("FERRY_LOG", "info"))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        env.pop(name, None)
    os.environ.update(env)
    run = f"{os.getpid()}-{int(time.time())}"
    args.remote = f"s3://{os.environ['FERRY_TEST_S3RVER_BUCKET']}/soak/{run}"
    largest = write_dataset(args.remote)
    dataset_bytes = SAMPLES * (BLOB + 16)
    # Half the dataset: the readers' working sets (shuffle blocks of 3 shards, what they fetch
    # ahead and keep behind) fit it together. Each job narrows its own shuffle to half a tighter
    # limit, and four jobs' narrowed working sets would not fit it: the limit would be exceeded
    # by what is in use (docs/streaming.md, "Slack"), which is not what this checks.
    args.cache_limit = dataset_bytes // 2
    args.local = os.path.join(args.out, "cache")
    # A folder left by an earlier soak holds another remote (each soak writes its own dataset),
    # which ferry refuses to mix up.
    shutil.rmtree(args.local, ignore_errors=True)
    readers = args.processes * args.workers
    slack = (2 * readers - 1) * largest

    wan, wan_endpoint = start_wan(args.wan, endpoint.rsplit("/", 1)[-1], args.out)
    env["AWS_ENDPOINT_URL"] = wan_endpoint
    started = time.time()
    args.deadline = started + args.seconds
    problems: list[str] = []
    failed: set[str] = set()  # the logs of jobs whose failure is reported
    jobs = [Job(i, 0, args, env) for i in range(args.processes)]
    every: list[Job] = list(jobs)
    kills = 0
    next_kill = started + args.kill_every
    victim = 1
    peak_disk = 0
    peak_temporaries = (0, 0)  # bytes and files of downloads' temporaries at the peak
    try:
        while any(j.proc.poll() is None for j in jobs):
            now = time.time()
            if now > args.deadline + args.grace:
                problems.append(f"jobs still running {args.grace:.0f} s after the deadline")
                break
            disk, temporary, temporaries = shard_bytes_in(args.local)
            if disk > peak_disk:
                peak_disk, peak_temporaries = disk, (temporary, temporaries)
            for j in jobs:
                code = j.proc.poll()
                if code not in (None, 0) and not j.killed and j.log_path not in failed:
                    failed.add(j.log_path)
                    with open(j.log_path + ".err") as err:
                        problems.append(f"job {j.index}.{j.life} exited with {code}: "
                                        f"{err.read()[-2000:]}")
            if args.processes > 1 and now >= next_kill and now < args.deadline - args.kill_every / 2:
                j = jobs[victim]
                if j.proc.poll() is None:
                    j.kill()
                    kills += 1
                    jobs[victim] = Job(victim, j.life + 1, args, env)
                    every.append(jobs[victim])
                victim = victim % (args.processes - 1) + 1
                next_kill += args.kill_every
            time.sleep(0.5)
    finally:
        for j in jobs:
            if j.proc.poll() is None:
                j.kill()
        wan.send_signal(signal.SIGTERM)
        wan_out, _ = wan.communicate(timeout=30)
    elapsed = time.time() - started
    totals = json.loads(wan_out.strip().splitlines()[-1])

    epochs = samples = 0
    for j in every:
        for e in j.records("epoch"):
            epochs += 1
            samples += e["samples"]
            if e["lost"] or e["repeated"] or e["corrupt"]:
                problems.append(f"job {j.index}.{j.life} epoch {e['epoch']}: {e['lost']} lost, "
                                f"{e['repeated']} repeated, {e['corrupt']} corrupt")
        if not j.killed and j.proc.returncode not in (0, None) and j.log_path not in failed:
            problems.append(f"job {j.index}.{j.life} exited with {j.proc.returncode}")
    survivor = jobs[0]
    survivor_epochs = len(survivor.records("epoch"))
    # From warm-up to the deadline: as the other jobs end, the survivor's share of the cache
    # (the shards it may pin, each with its lock open) grows.
    series = [u for u in survivor.records("usage")
              if started + args.seconds / 4 <= u["t"] <= args.deadline]
    measured = {}
    if len(series) < 6:
        problems.append(f"the survivor reported its use {len(series)} times after warm-up")
    else:
        for key, bound in (("rss", None), ("fds", 8), ("threads", 4)):
            first, last = growth(series, key)
            measured[key] = {"first_peak": first, "last_median": last}
            allowed = first + (max(first // 10, 32 << 20) if bound is None else bound)
            if last > allowed:
                problems.append(f"the survivor's {key} grew from {first} to {last} "
                                f"(allowed {allowed})")
    if peak_disk > args.cache_limit + slack:
        problems.append(f"the cache folder held {peak_disk} bytes of shards ({peak_temporaries[0]} "
                        f"of them in {peak_temporaries[1]} downloads' temporaries), above the limit "
                        f"{args.cache_limit} plus the slack {slack}")
    faults = sum(v for k, v in totals["faults"].items() if k != "throttle")
    summary = {
        "seconds": round(elapsed), "processes": args.processes, "workers": args.workers,
        "jobs_started": len(every), "kills": kills, "epochs": epochs,
        "survivor_epochs": survivor_epochs, "samples": samples,
        "requests": totals["requests"], "faults": faults,
        "throttled": totals["faults"].get("throttle", 0), "faults_by_kind": totals["faults"],
        "cache_limit": args.cache_limit, "slack": slack, "peak_disk": peak_disk,
        "peak_disk_temporaries": {"bytes": peak_temporaries[0], "files": peak_temporaries[1]},
        "survivor": measured, "problems": problems,
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    mib = 1 << 20
    line = (f"soak: {elapsed:.0f} s, {args.processes} jobs x {args.workers} workers, "
            f"{len(every)} started, {kills} SIGKILLed; {epochs} epochs ({survivor_epochs} by "
            f"the survivor), {samples} samples, none lost, repeated or corrupt; "
            f"{faults} faults and {summary['throttled']} throttle replies in "
            f"{totals['requests']} requests; peak disk {peak_disk / mib:.1f} MiB of a "
            f"{args.cache_limit / mib:.1f} MiB limit (+{slack / mib:.1f} MiB slack)")
    if measured:
        first = {k: v["first_peak"] for k, v in measured.items()}
        last = {k: v["last_median"] for k, v in measured.items()}
        line += (f"; the survivor after warm-up (first third's peak -> last third's median): "
                 f"RSS {first['rss'] / mib:.0f} -> {last['rss'] / mib:.0f} MiB, descriptors "
                 f"{first['fds']} -> {last['fds']}, threads {first['threads']} -> "
                 f"{last['threads']}")
    if problems:
        for p in problems:
            print(f"soak: {p}", file=sys.stderr)
        print(line.replace("none lost, repeated or corrupt", "WITH PROBLEMS"))
        return 1
    print(line)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1200, help="how long jobs start epochs")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1000, help="at most, per job")
    parser.add_argument("--kill-every", type=float, default=60)
    parser.add_argument("--grace", type=float, default=300,
                        help="seconds after --seconds for the last epochs to end")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "soak"))
    parser.add_argument("--wan", default=os.path.join(ROOT, "build", "release", "bench", "ferry-wan"))
    # A job's own arguments (the supervisor starts them).
    parser.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--remote", help=argparse.SUPPRESS)
    parser.add_argument("--local", help=argparse.SUPPRESS)
    parser.add_argument("--cache-limit", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    return run_job(args) if args.job else supervise(args)


if __name__ == "__main__":
    sys.exit(main())
