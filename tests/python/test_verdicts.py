"""Three real runs, each made to be bound by one thing, each get their own verdict from
ferry.diagnose: the link (ferry-wan at RTT 100 ms, a small prefetch window, read by torch
DataLoader worker processes whose counters are seen node-wide); the decoding (large JPEGs
decoded and resized by one native thread, the shards already cached); the step (a sleep per
step over a local dataset). The HTML report of a run renders its plots in Chromium."""

import ctypes
import io
import os
import re
import shutil
import subprocess
import time

import pytest
import torch.utils.data
from PIL import Image

import ferry
from conftest import run_ferry, upload_dataset
from ferry import transforms as T


def _upload(tmp_path, s3rver, name, columns, rows, size_limit):
    data = tmp_path / name
    with ferry.MDSWriter(out=str(data), columns=columns, size_limit=size_limit) as w:
        for row in rows:
            w.write(row)
    return upload_dataset(data, f"s3://{s3rver['bucket']}/python/verdicts/{tmp_path.name}/{name}")


def _kind(report):
    return report["verdict"].split(":")[0]


def test_a_run_held_by_the_link_is_fetch_bound_with_its_arithmetic(tmp_path, s3rver, wan):
    url = _upload(tmp_path, s3rver, "blobs", {"blob": "bytes", "i": "int"},
                  ({"blob": os.urandom(20_000), "i": i} for i in range(300)), 1 << 16)
    wan("--delay-ms", "50")  # RTT 100 ms
    ds = ferry.StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=4,
                                predownload=4, download_concurrency=1)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    lines = []
    report = ferry.diagnose(loader, lambda batch: time.sleep(0.002), steps=1000,
                            out=lines.append)
    assert report["samples"] == 300
    assert _kind(report) == "fetch-bound", lines[0]
    assert report["waiting_fraction"] > 0.5
    # Seen through the workers: every shard's bytes, and how long one fetch took.
    assert report["bytes_fetched"] >= 300 * 20_000
    assert report["where"]["fetch_latency_s"] >= 0.1, report["where"]
    assert "in flight" in report["verdict"] and " x " in report["verdict"], report["verdict"]
    # The one change, with its number: more than the 4 samples it had ahead.
    target = int(re.search(r"raise StreamingDataset's predownload to (\d+) \(4 now\)",
                           report["verdict"]).group(1))
    assert target > 4, report["verdict"]
    assert ("no GPU" in lines[0]) == (report["gpu"] is None)


def _jpeg(seed, side=1024):
    img = Image.effect_mandelbrot((side, side), (-2 + seed / 100, -1.5, 1, 1.5), 60)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def test_a_run_held_by_decoding_is_decode_bound(tmp_path, s3rver):
    url = _upload(tmp_path, s3rver, "images", {"image": "jpeg", "i": "int"},
                  ({"image": _jpeg(i), "i": i} for i in range(48)), 1 << 20)
    ds = ferry.StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=4)
    loader = ferry.DataLoader(ds, batch_size=4, num_threads=1,
                              transform=[T.Decode(dct_scaling=False), T.Resize((900, 900))])
    for _ in loader:  # the link is not what is measured: the shards are cached first
        pass
    lines = []
    report = ferry.diagnose(loader, lambda batch: None, steps=100, out=lines.append)
    assert report["samples"] == 48
    assert _kind(report) == "decode-bound", lines[0]
    assert report["bytes_fetched"] == 0
    assert "num_threads" in report["options"]["DataLoader"]
    assert report["where"]["reading_decoding_s"] > report["where"]["fetching_s"]


@pytest.fixture
def local_dataset(tmp_path):
    with ferry.MDSWriter(out=str(tmp_path / "local"), columns={"i": "int"}) as w:
        for i in range(60):
            w.write({"i": i})
    return ferry.StreamingDataset(local=str(tmp_path / "local"), batch_size=4)


def test_a_run_held_by_its_step_is_compute_bound(local_dataset):
    loader = torch.utils.data.DataLoader(local_dataset, batch_size=4, num_workers=0)
    lines = []
    report = ferry.diagnose(loader, lambda batch: time.sleep(0.02), steps=100,
                            out=lines.append)
    assert report["steps"] == 15
    assert _kind(report) == "compute-bound", lines[0]
    assert report["waiting_fraction"] < 0.1
    assert report["options"] == {}


def test_profile_times_each_epoch(local_dataset):
    loader = torch.utils.data.DataLoader(local_dataset, batch_size=4, num_workers=0)
    with ferry.profile(loader) as prof:
        for epoch in range(2):
            for _ in prof:
                time.sleep(0.01 if epoch == 0 else 0.002)
    report = prof.report
    assert [e["steps"] for e in report["epochs"]] == [15, 15]
    assert [e["samples"] for e in report["epochs"]] == [60, 60]
    assert report["epochs"][0]["compute_s"] > report["epochs"][1]["compute_s"]
    assert report["samples"] == 120
    assert prof.verdict == report["verdict"]


def _inked_pixels(png):
    """Pixels of a screenshot that are not background: text, axes, lines."""
    img = Image.open(png).convert("L")
    return sum(1 for v in img.getdata() if v < 200)


def test_the_html_report_renders_its_plots_in_a_browser(tmp_path, local_dataset):
    chromium = shutil.which("chromium")
    assert chromium, "chromium is installed by scripts/install-deps.sh"
    loader = torch.utils.data.DataLoader(local_dataset, batch_size=4, num_workers=0)
    page = tmp_path / "run.html"
    report = ferry.diagnose(loader, lambda batch: time.sleep(0.005), steps=100,
                            out=lambda line: None, report=str(page))
    text = page.read_text()
    assert report["verdict"].split(":", 1)[1].strip()[:40] in text
    assert text.count("data:image/png;base64,") == 3  # no GPU here: three plots
    assert "src=\"http" not in text and "src=\"file" not in text  # self-contained

    _assert_renders_its_plots(chromium, page, tmp_path)


def _assert_renders_its_plots(chromium, page, tmp_path):
    """The page in headless Chromium shows its plots: thousands of pixels of axes, ticks, labels
    and lines that the same page with its images broken lacks."""
    text = page.read_text()

    def screenshot(html_file, png):
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--screenshot={png}", "--window-size=1000,2200",
                        f"file://{html_file}"], check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return _inked_pixels(png)

    rendered = screenshot(page, tmp_path / "page.png")
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace("data:image/png;base64,", "data:image/png;base64,AA"))
    without_plots = screenshot(broken, tmp_path / "broken.png")
    assert rendered - without_plots > 5000, (rendered, without_plots)


def test_ferry_stream_writes_a_report_that_renders(tmp_path, local_dataset):
    page = tmp_path / "stream.html"
    folder = local_dataset.streams[0].local
    run_ferry("stream", folder, "--epochs", "2", "--report", str(page))
    text = page.read_text()
    assert text.count("data:image/png;base64,") == 3
    assert "<td>1</td><td>60</td>" in text and "<td>2</td><td>60</td>" in text  # both epochs
    assert (page.stat().st_mode & 0o777) != 0o600
    _assert_renders_its_plots(shutil.which("chromium"), page, tmp_path)
    # Without a Python that can draw it: an error naming the page, and no page.
    env = dict(os.environ, FERRY_PYTHON=str(tmp_path / "no-python"))
    failed = run_ferry("stream", folder, "--report", str(tmp_path / "none.html"), check=False,
                       env=env)
    assert failed.returncode != 0 and "none.html" in failed.stderr, failed.stderr
    assert not (tmp_path / "none.html").exists()


def test_the_gpu_is_read_through_nvidia_smi_without_nvml(tmp_path, monkeypatch):
    from ferry import _diagnosis

    real_cdll = ctypes.CDLL

    def no_nvml(name, *args, **kwargs):
        if "nvidia-ml" in name:
            raise OSError(f"{name}: cannot open shared object file")
        return real_cdll(name, *args, **kwargs)

    monkeypatch.setattr(ctypes, "CDLL", no_nvml)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert _diagnosis._Gpu().source is None, "neither NVML nor nvidia-smi: no GPU"
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n"
                   "[ \"$1\" = --query-gpu=utilization.gpu ] || exit 3\n"
                   "printf '37\\n53\\n'\n")
    smi.chmod(0o755)
    gpu = _diagnosis._Gpu()
    assert gpu.source == "nvidia-smi"
    assert gpu.sample() == [37.0, 53.0]
