"""`ferry top` in a real terminal (tmux): the live view of a cache folder's readers shows the
reading process and its figures moving while it reads."""

import os
import re
import subprocess
import sys
import time

import ferry
from conftest import upload_dataset
from ferry import _cli

READER = """
import sys, time, ferry
ds = ferry.StreamingDataset(remote=sys.argv[1], local=sys.argv[2], batch_size=1)
print("open", flush=True)
for i, s in enumerate(ds):
    time.sleep(0.01)
print("done", flush=True)
"""


def _upload(tmp_path, s3rver, samples=600):
    data = tmp_path / "data"
    with ferry.MDSWriter(out=str(data), columns={"data": "bytes"}, size_limit=1 << 15) as w:
        for _ in range(samples):
            w.write({"data": os.urandom(1000)})
    return upload_dataset(data, f"s3://{s3rver['bucket']}/python/top/{tmp_path.name}")


def _node_row(screen):
    rows = [line for line in screen.splitlines() if line.startswith("node ")]
    assert rows, screen
    return rows[-1].split()


def test_top_under_tmux_shows_the_reader_and_its_figures_moving(tmp_path, s3rver):
    url = _upload(tmp_path, s3rver)
    cache = tmp_path / "cache"
    reader = subprocess.Popen([sys.executable, "-c", READER, url, str(cache)],
                              stdout=subprocess.PIPE, text=True)
    tmux = ["tmux", "-L", f"ferry-test-{os.getpid()}", "-f", "/dev/null"]
    try:
        assert reader.stdout.readline().strip() == "open"
        subprocess.run(tmux + ["new-session", "-d", "-x", "150", "-y", "20", _cli.executable(),
                               "top", str(cache), "--interval", "0.25"], check=True)
        screens = []
        deadline = time.monotonic() + 20
        while len(screens) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
            screen = subprocess.run(tmux + ["capture-pane", "-p"], check=True,
                                    stdout=subprocess.PIPE, text=True).stdout
            if re.search(rf"^\s*{reader.pid} python3", screen, re.M) and \
                    _node_row(screen)[1] not in ("-", "0"):
                screens.append(screen)
        assert len(screens) == 2, f"no view with the reader reading:\n{screen}"
        first, second = screens
        assert str(cache) in first
        # A redraw in place: one view on the screen, not one per refresh.
        assert first.count("ferry top") == 1 and second.count("ferry top") == 1
        downloaded = [re.search(r"downloaded (\S+ \S+)", s).group(1) for s in screens]
        assert first != second, "the figures did not move"
        assert float(_node_row(second)[1]) > 0, second  # samples/s
        assert downloaded[0] != "0 B" and downloaded[1] != "0 B", downloaded
    finally:
        subprocess.run(tmux + ["kill-server"], check=False, stderr=subprocess.DEVNULL)
        reader.kill()
        reader.wait()
