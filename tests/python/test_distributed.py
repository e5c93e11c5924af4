"""Training on many nodes, as real processes: each rank a process started with the variables
torchrun sets (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
MASTER_PORT) in a gloo process group - by torchrun itself (one agent per simulated node), or by
the test - each simulated node with its own cache folder, one remote dataset on the S3 test
server (tests/python/distributed_rank.py is one rank). Also the world from a process group alone,
spawn workers, and ranks that disagree."""

import collections
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest
import torch.utils.data

import ferry

HERE = pathlib.Path(__file__).parent
SAMPLES = 1003  # not a multiple of any world here: the padding rule is exercised
BATCH = 8
JOB_TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def remote_dataset(tmp_path_factory):
    """A dataset of SAMPLES ids in small shards on s3rver (written once for the module)."""
    endpoint = os.environ.get("FERRY_TEST_S3RVER_ENDPOINT")
    if not endpoint:
        pytest.fail("no S3 test server: run through scripts/run-tests.sh (make test)")
    env = {"AWS_ENDPOINT_URL": endpoint,
           "AWS_ACCESS_KEY_ID": os.environ["FERRY_TEST_S3RVER_ACCESS_KEY"],
           "AWS_SECRET_ACCESS_KEY": os.environ["FERRY_TEST_S3RVER_SECRET_KEY"],
           "AWS_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        name = tmp_path_factory.mktemp("distributed").name
        url = f"s3://{os.environ['FERRY_TEST_S3RVER_BUCKET']}/python/distributed/{name}"
        with ferry.MDSWriter(out=url, columns={"id": "int"}, size_limit="2kb") as writer:
            for i in range(SAMPLES):
                writer.write({"id": i})
        yield url, env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _wait(procs, what):
    deadline = time.monotonic() + JOB_TIMEOUT_S
    logs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
            logs.append(out.decode(errors="replace"))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.communicate()
        pytest.fail(f"{what} did not finish in {JOB_TIMEOUT_S} s (a rank hung)")
    for i, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, f"{what}: process {i} exited {p.returncode}:\n{log[-3000:]}"


def _clean_env(env):
    out = dict(os.environ, **env)
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                 "MASTER_ADDR", "MASTER_PORT"):
        out.pop(name, None)
    return out


def _rank_args(tmp, url, out, local, extra):
    return [str(HERE / "distributed_rank.py"), "--remote", url, "--local", local, "--out", out,
            "--batch-size", str(BATCH), *extra]


def _run_torchrun(tmp, url, env, nodes, ranks_per_node, extra=()):
    """One torchrun agent per simulated node (Debian's torchrun needs --redirects and --tee),
    each node's ranks with the node's own cache folder; results by rank."""
    tmp.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    procs = []
    for node in range(nodes):
        command = ["torchrun", "--nnodes", str(nodes), "--nproc_per_node", str(ranks_per_node),
                   "--node_rank", str(node), "--master_addr", "127.0.0.1", "--master_port",
                   str(port), "--redirects", "1", "--tee", "1",
                   *_rank_args(tmp, url, str(tmp / "rank{rank}.json"), str(tmp / "node{node}"),
                               extra)]
        procs.append(subprocess.Popen(command, env=_clean_env(env), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT))
    _wait(procs, f"torchrun {nodes}x{ranks_per_node}")
    return [json.loads((tmp / f"rank{r}.json").read_text())
            for r in range(nodes * ranks_per_node)]


def _run_job(tmp, url, env, nodes, ranks_per_node, *, extra=(), per_rank_args=None,
             torchrun_env=True):
    """Starts nodes x ranks_per_node rank processes ourselves - with the variables torchrun
    sets, or (torchrun_env=False) with none, the rank going to init_process_group - and returns
    their results by rank."""
    tmp.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    world = nodes * ranks_per_node
    procs = []
    for rank in range(world):
        node = rank // ranks_per_node
        rank_env = _clean_env(env)
        args = [sys.executable, *_rank_args(tmp, url, str(tmp / f"rank{rank}.json"),
                                            str(tmp / f"node{node}"), extra)]
        if torchrun_env:
            rank_env.update(RANK=str(rank), LOCAL_RANK=str(rank % ranks_per_node),
                            WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(ranks_per_node),
                            GROUP_RANK=str(node), MASTER_ADDR="127.0.0.1",
                            MASTER_PORT=str(port))
        else:
            args += ["--init", f"tcp://127.0.0.1:{port}", "--rank", str(rank),
                     "--world-size", str(world)]
        if per_rank_args:
            args += per_rank_args(rank)
        procs.append(subprocess.Popen(args, env=rank_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT))
    _wait(procs, f"a {nodes}x{ranks_per_node} job")
    return [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(world)]


def _check_epoch(results, ranks):
    """Every sample at least once, at most `ranks - 1` repeats; equal counts per rank."""
    for r in results:
        assert "error" not in r, r["error"]
    counts = collections.Counter(i for r in results for b in r["batches"] for i in b)
    assert set(counts) == set(range(SAMPLES))
    repeats = sum(c - 1 for c in counts.values())
    assert repeats <= ranks - 1
    per_rank = [sum(len(b) for b in r["batches"]) for r in results]
    assert per_rank == [results[0]["len"]] * ranks, "every rank yields exactly len(dataset)"
    assert len({len(r["batches"]) for r in results}) == 1, "equal batch counts: no rank hangs"


def test_two_nodes_of_two_ranks_under_torchrun_read_every_sample_once(tmp_path, remote_dataset):
    url, env = remote_dataset
    results = _run_torchrun(tmp_path, url, env, 2, 2, extra=["--workers", "2"])
    assert [r["world"] for r in results] == [[2, 2, n, r] for n in range(2) for r in range(2)]
    _check_epoch(results, 4)
    # Each node reads its own shards: both caches hold some, neither holds them all.
    shards = [len(list((tmp_path / f"node{n}").rglob("shard.*.mds"))) for n in range(2)]
    assert all(s > 0 for s in shards)


def test_a_job_checkpointed_on_two_nodes_resumes_on_one_node_of_four_ranks(tmp_path,
                                                                           remote_dataset):
    url, env = remote_dataset
    first = _run_job(tmp_path / "a", url, env, 2, 2, extra=["--stop-after", "7"])
    state = first[0]["state"]
    assert all(r["state"] == state for r in first), "every rank reports the same state"
    (tmp_path / "state.json").write_text(json.dumps(state))
    second = _run_job(tmp_path / "b", url, env, 1, 4,
                      extra=["--resume", str(tmp_path / "state.json")])
    assert [r["world"] for r in second] == [[1, 4, 0, r] for r in range(4)]
    before = collections.Counter(i for r in first for b in r["batches"] for i in b)
    after = collections.Counter(i for r in second for b in r["batches"] for i in b)
    assert sum(before.values()) == 4 * 7 * BATCH
    # The rest of the epoch, on another shape: every unread sample, nothing read twice beyond
    # the padding of the two worlds.
    assert set(before) | set(after) == set(range(SAMPLES))
    assert sum((before + after).values()) - SAMPLES <= 2 * 3
    assert len({len(r["batches"]) for r in second}) == 1


def test_the_world_comes_from_the_process_group_when_the_variables_are_absent(tmp_path,
                                                                             remote_dataset):
    # init_process_group(rank=, world_size=) with no RANK / WORLD_SIZE / LOCAL_WORLD_SIZE: the
    # ranks are grouped by host (one host: one node of two), and spawn workers carry that world.
    url, env = remote_dataset
    results = _run_job(tmp_path, url, env, 1, 2, torchrun_env=False,
                       extra=["--workers", "2", "--context", "spawn"])
    assert [r["world"] for r in results] == [[1, 2, 0, 0], [1, 2, 0, 1]]
    _check_epoch(results, 2)


def test_ranks_that_build_different_datasets_fail_at_once_naming_the_difference(tmp_path,
                                                                               remote_dataset):
    url, env = remote_dataset
    start = time.monotonic()
    results = _run_job(tmp_path, url, env, 1, 2,
                       per_rank_args=lambda rank: ["--seed", str(17 + rank)])
    assert time.monotonic() - start < 60
    for r in results:
        assert "InvalidArgumentError" in r.get("error", ""), r
        assert "shuffle_seed: " in r["error"] and "17" in r["error"] and "18" in r["error"]


def _ids(loader):
    return [int(i) for batch in loader for i in batch["id"]]


def test_spawn_and_forkserver_workers_read_the_epochs_fork_workers_read(tmp_path,
                                                                         remote_dataset):
    url, _ = remote_dataset
    orders = {}
    for context in ("fork", "spawn", "forkserver"):
        ds = ferry.StreamingDataset(remote=url, local=str(tmp_path / context), shuffle=True,
                                    batch_size=BATCH)
        loader = torch.utils.data.DataLoader(ds, batch_size=BATCH, num_workers=2,
                                             multiprocessing_context=context)
        orders[context] = [_ids(loader), _ids(loader)]
    assert orders["spawn"] == orders["fork"]
    assert orders["forkserver"] == orders["fork"]
    assert orders["fork"][0] != orders["fork"][1], "the second epoch has its own order"
    assert sorted(orders["fork"][1]) == list(range(SAMPLES))
