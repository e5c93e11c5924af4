"""Who a dataset's peers are (``StreamingDataset(peers=...)``): the cluster cache.

Each node runs a peer server over its cache folder, and each shard is fetched from the remote
by one node, its owner, which streams it to the others (docs/sources.md, "Peer fetch"). The
peers are the nodes' ``host:port``, the same list on every node:

- a list given as ``peers``;
- ``"torch"``: from torch.distributed, which must be initialized: every rank's hostname,
  one peer per node, on ``peer_port``; the token, unless ``FERRY_PEER_TOKEN`` is set, is
  drawn by rank 0 and sent to the others over the process group;
- None: ``FERRY_PEERS`` (comma-separated), read by the engine, and no peers without it.
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any, Dict, Optional, Sequence, Union

from .errors import InvalidArgumentError

DEFAULT_PORT = 7791


def _torch_peers(port: int, token: Optional[str]) -> Dict[str, Any]:
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise InvalidArgumentError(
            "peers='torch' needs torch.distributed initialized first (init_process_group), "
            "or give the peers as a list or in FERRY_PEERS")
    host = socket.gethostname()
    hosts: list = [None] * dist.get_world_size()
    dist.all_gather_object(hosts, host)
    # One peer per node, in the order of each node's first rank: the same list on every rank.
    nodes = list(dict.fromkeys(hosts))
    shared = [token or os.environ.get("FERRY_PEER_TOKEN") or secrets.token_hex(16)]
    dist.broadcast_object_list(shared, src=0)
    return {"addresses": [f"{h}:{port}" for h in nodes], "self": f"{host}:{port}",
            "token": shared[0]}


def resolve(peers: Union[None, str, Sequence[str]], peer_self: Optional[str],
            peer_token: Optional[str], peer_port: int) -> Optional[Dict[str, Any]]:
    """The engine's ``peers`` option, or None to leave it to FERRY_PEERS."""
    if isinstance(peer_port, bool) or not isinstance(peer_port, int) or not 0 < peer_port < 65536:
        raise InvalidArgumentError(f"peer_port must be 1 to 65535, not {peer_port!r}")
    if peers is None:
        if peer_self is None and peer_token is None:
            return None
        return {"addresses": [], "self": peer_self or "", "token": peer_token or ""}
    if peers == "torch":
        resolved = _torch_peers(peer_port, peer_token)
        if peer_self is not None:
            resolved["self"] = peer_self
        return resolved
    if isinstance(peers, str):
        peers = [p for p in peers.split(",") if p.strip()]
    addresses = [str(p).strip() for p in peers]
    if not addresses:
        raise InvalidArgumentError("peers: an empty list (give None for no peers)")
    return {"addresses": addresses, "self": peer_self or "", "token": peer_token or ""}
