"""Random access (ds[i]) of samples whose shards are not local, by range and by whole shards
(issue 26). For each count N: N distinct random sample ids (seeded), read one after another
with ds[i] into an empty cache folder, once with download_on_access=False (ferry's default:
each shard's offset table once, then a ranged GET per sample, the shard fetched whole from its
2nd... kRangedGetsPerShard-th sample on) and once with download_on_access=True (every shard fetched
whole at its first sample, as Mosaic Streaming does), alternately. Prints a markdown table:
seconds, samples/s, bytes fetched from the remote and requests.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python/random_access.py URL \\
        --local DIR [--counts 20,200,1000] [--rounds 2] [--seed 7]

URL's store settings come from the environment (bench/random_access.sh points them at s3rver
through ferry-wan).
"""

import argparse
import random
import shutil
import time

import ferry


def _remote(name):
    return sum(v for k, v in ferry.metrics().items()
               if k.startswith("/ferry/storage/") and k.endswith("/" + name))


def _run(url, local, ids, on_access):
    shutil.rmtree(local, ignore_errors=True)
    requests, received = _remote("requests"), _remote("bytes_read")
    start = time.monotonic()
    ds = ferry.StreamingDataset(remote=url, local=local, batch_size=1, image_format="bytes",
                                download_on_access=on_access)
    opened = time.monotonic()
    payload = 0
    for i in ids:
        payload += len(ds[i]["data"])
    end = time.monotonic()
    return {"open_s": opened - start, "read_s": end - opened,
            "bytes": _remote("bytes_read") - received,
            "requests": _remote("requests") - requests, "payload": payload}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--local", required=True)
    parser.add_argument("--counts", default="20,200,1000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    total = len(ferry.StreamingDataset(remote=args.url, local=args.local, batch_size=1))
    print("| ds[i] calls | access | round | seconds | samples/s | MB fetched | requests |")
    print("|---|---|---|---|---|---|---|")
    for count in (int(c) for c in args.counts.split(",")):
        ids = random.Random(args.seed + count).sample(range(total), count)
        for rnd in range(1, args.rounds + 1):
            # Alternate which goes first.
            for on_access in ((False, True) if rnd % 2 else (True, False)):
                r = _run(args.url, args.local, ids, on_access)
                name = "whole shards (download_on_access)" if on_access else "by range (default)"
                print(f"| {count} | {name} | {rnd} | {r['read_s']:.2f} | "
                      f"{count / r['read_s']:.0f} | {r['bytes'] / 1e6:.1f} | {r['requests']} |",
                      flush=True)


if __name__ == "__main__":
    main()
