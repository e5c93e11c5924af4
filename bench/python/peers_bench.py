"""Epochs of N simulated nodes reading one remote dataset, each a process with its own cache
folder (and, with --peers, its own peer server on loopback): how long the slowest node took,
and what each got from its peers. The caller (bench/sources_bench.sh) puts the remote behind
ferry-wan and reads the bytes that crossed it from the proxy.

Prints one JSON object: {"nodes", "peers", "epoch_s" (per epoch, the slowest node's; epoch 1
from the open on), "open_s" (slowest open), "samples", "peer_bytes", "served_bytes", "failovers"}."""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid

NODE = textwrap.dedent("""
    import json, os, sys, time
    import ferry
    local, remote, barrier = sys.argv[1], sys.argv[2], sys.argv[3]
    epochs, algo = int(sys.argv[4]), sys.argv[5]
    start = time.monotonic()
    dataset = ferry.StreamingDataset(remote=remote, local=local, shuffle=True, batch_size=32,
                                     shuffle_algo=algo)
    opened = time.monotonic()
    times, samples = [], 0
    for epoch in range(epochs):
        begun = time.monotonic()
        samples += sum(1 for _ in dataset)
        times.append(time.monotonic() - (start if epoch == 0 else begun))
    print(json.dumps({"open_s": opened - start, "epoch_s": times, "samples": samples}),
          flush=True)
    # A job's last barrier: serve the others until every node is done.
    deadline = time.monotonic() + 600
    while not os.path.exists(barrier) and time.monotonic() < deadline:
        time.sleep(0.05)
    values = ferry.metrics()
    print(json.dumps({"peer_bytes": values.get("/ferry/peer/bytes_read", 0),
                      "served_bytes": values.get("/ferry/peer/served_bytes", 0),
                      "failovers": values.get("/ferry/peer/failovers", 0)}), flush=True)
""")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the remote dataset")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--peers", action="store_true", help="a cluster cache among the nodes")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--shuffle-algo", default="py1e")
    parser.add_argument("--jobs", action="store_true",
                        help="each node a job of its own, reading the whole dataset (a sweep, "
                             "or the jobs of a region), not one job's share")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="ferry-peers-bench-")
    peers = [f"127.0.0.1:{p}" for p in free_ports(args.nodes)]
    barrier = os.path.join(work, "barrier")
    token = uuid.uuid4().hex  # one per run, shared by its nodes
    procs = []
    for node in range(args.nodes):
        env = dict(os.environ, RANK=str(node), WORLD_SIZE=str(args.nodes), LOCAL_WORLD_SIZE="1")
        if args.jobs:
            env.update(RANK="0", WORLD_SIZE="1")
        if args.peers:
            env.update(FERRY_PEERS=",".join(peers), FERRY_PEER_SELF=peers[node],
                       FERRY_PEER_TOKEN=token)
        procs.append(subprocess.Popen(
            [sys.executable, "-c", NODE, os.path.join(work, f"node{node}"), args.url, barrier,
             str(args.epochs), args.shuffle_algo],
            env=env, stdout=subprocess.PIPE, text=True))
    epochs = []
    for proc in procs:
        line = proc.stdout.readline()
        if not line:
            sys.exit(f"a node failed (exit {proc.wait()})")
        epochs.append(json.loads(line))
    open(barrier, "w").close()
    counters = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            sys.exit(f"a node failed (exit {proc.returncode})")
        counters.append(json.loads(out.strip().splitlines()[-1]))
    print(json.dumps({
        "nodes": args.nodes, "peers": args.peers, "jobs": args.jobs,
        "epoch_s": [round(max(e["epoch_s"][i] for e in epochs), 2) for i in range(args.epochs)],
        "open_s": round(max(e["open_s"] for e in epochs), 2),
        "samples": sum(e["samples"] for e in epochs),
        "peer_bytes": sum(c["peer_bytes"] for c in counters),
        "served_bytes": sum(c["served_bytes"] for c in counters),
        "failovers": sum(c["failovers"] for c in counters)}))

if __name__ == "__main__":
    main()
