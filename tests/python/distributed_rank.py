"""One rank of a job that tests/python/test_distributed.py starts as separate processes, with the
variables torchrun sets (or, with --no-env, none: the rank and world go to init_process_group
only). It joins a gloo process group, reads a StreamingDataset under a StreamingDataLoader and
writes what it read to a JSON file: the sample ids of every batch, len(dataset), and the
loader's state_dict after --stop-after batches (when given). Not a test module itself."""

import argparse
import json
import os
import sys

import torch.distributed as dist

import ferry


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--remote", required=True)
    # --out may hold {rank} and --local {node} (GROUP_RANK), for torchrun.
    parser.add_argument("--local", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--context", default=None, help="DataLoader multiprocessing_context")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--stop-after", type=int, default=None, help="batches, then state_dict")
    parser.add_argument("--resume", default=None, help="a state_dict (JSON) to load first")
    parser.add_argument("--init", default="env://", help="init_process_group's init_method")
    parser.add_argument("--rank", type=int, default=None)
    parser.add_argument("--world-size", type=int, default=None)
    args = parser.parse_args()

    if args.rank is None:
        dist.init_process_group("gloo", init_method=args.init)
    else:
        dist.init_process_group("gloo", init_method=args.init, rank=args.rank,
                                world_size=args.world_size)
    # Placeholders for a launcher that starts every rank with the same arguments (torchrun).
    args.out = args.out.replace("{rank}", str(dist.get_rank()))
    args.local = args.local.replace("{node}", os.environ.get("GROUP_RANK", "0"))
    result = {"rank": dist.get_rank()}
    try:
        ds = ferry.StreamingDataset(remote=args.remote, local=args.local, shuffle=True,
                                    shuffle_seed=args.seed, batch_size=args.batch_size,
                                    num_canonical_nodes=2)
        result["world"] = list(ds._world())
        result["len"] = len(ds)
        loader = ferry.StreamingDataLoader(ds, batch_size=args.batch_size,
                                           num_workers=args.workers,
                                           multiprocessing_context=args.context)
        if args.resume:
            with open(args.resume, encoding="utf-8") as f:
                loader.load_state_dict(json.load(f))
        batches = []
        for batch in loader:
            batches.append([int(i) for i in batch["id"]])
            if args.stop_after is not None and len(batches) == args.stop_after:
                result["state"] = loader.state_dict()
                break
        result["batches"] = batches
        # Every rank ends the epoch together: a rank that ran out early would hang here.
        dist.barrier()
    except ferry.errors.FerryError as e:
        result["error"] = f"{type(e).__name__}: {e}"
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.replace(args.out + ".tmp", args.out)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
