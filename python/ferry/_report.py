"""The HTML report of ``ferry.profile`` / ``ferry.diagnose(..., report=...)``: one self-contained
page (plots as PNG inside it, no file beside it) with the verdict, the figures of each epoch,
where the wait went, and four plots - throughput and bytes in flight over time, the data wait of
every step, the cache's fill, and the GPU's utilisation when there is one. The plots are drawn
with matplotlib (Agg: no display needed)."""

from __future__ import annotations

import base64
import html
import io
import math
import os
import tempfile
import time
from typing import Any, Dict, List, Sequence


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _rates(t: Sequence[float], cumulative: Sequence[float]) -> List[float]:
    out = []
    for i in range(1, len(t)):
        dt = t[i] - t[i - 1]
        out.append((cumulative[i] - cumulative[i - 1]) / dt if dt > 0 else 0.0)
    return out


def _plots(series: Dict[str, List[float]], step_waits: Sequence[float]) -> List[tuple]:
    """[(title, base64 PNG)] of the run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = series["t"]
    plots = []
    fig, ax = plt.subplots(figsize=(8, 3))
    mid = [(t[i] + t[i - 1]) / 2 for i in range(1, len(t))]
    ax.plot(mid, [r / 1e6 for r in _rates(t, series["read_bytes"])], color="C0",
            label="fetched, MB/s")
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB/s")
    ax2 = ax.twinx()
    ax2.plot(t, [b / 1e6 for b in series["in_flight"]], color="C1", label="in flight, MB")
    ax2.set_ylabel("MB in flight")
    ax.legend(loc="upper left")
    ax2.legend(loc="upper right")
    plots.append(("Throughput and bytes in flight", _png(fig)))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 3))
    ax.plot(range(len(step_waits)), [w * 1e3 for w in step_waits], color="C0", linewidth=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("ms waiting for the batch")
    plots.append(("Data wait per step", _png(fig)))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 3))
    ax.plot(t, [b / 1e6 for b in series["cache_bytes"]], color="C0")
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB downloaded into the cache")
    plots.append(("Cache fill (downloaded less evicted, since the start)", _png(fig)))
    plt.close(fig)

    gpu = series.get("gpu", [])
    if any(not math.isnan(g) for g in gpu):
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.plot(t, gpu, color="C2")
        ax.set_ylim(0, 100)
        ax.set_xlabel("seconds")
        ax.set_ylabel("GPU busy, %")
        plots.append(("GPU utilisation", _png(fig)))
        plt.close(fig)
    return plots


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table>{'<tr>' + head + '</tr>' if head else ''}{body}</table>"


def render_html(report: Dict[str, Any], series: Dict[str, List[float]],
                step_waits: Sequence[float]) -> str:
    epochs = _table([(e["epoch"], e["steps"], e["samples"], f"{e['wait_s']:.2f}",
                      f"{e['compute_s']:.2f}", f"{100 * e['waiting_fraction']:.1f} %")
                     for e in report["epochs"]],
                    ["epoch", "steps", "samples", "waiting, s", "computing, s", "waiting"])
    where = report["where"]
    latency = where["fetch_latency_s"]
    gpu = report["gpu"]
    figures = _table([
        ("waiting on data", f"{100 * report['waiting_fraction']:.1f} % "
                            f"({report['wait_s']:.2f} s of "
                            f"{report['wait_s'] + report['compute_s']:.2f} s)"),
        ("samples per second", f"{report['samples_per_s']:.0f}"),
        ("dataset", report["dataset"] or "-"),
        ("readers", report["readers"]),
        ("fetched", f"{report['bytes_fetched'] / 1e6:.1f} MB in {report['requests']} requests"),
        ("waiting for fetches (per reader)", f"{where['fetching_s']:.2f} s"),
        ("reading, decoding, transforms, queue", f"{where['reading_decoding_s']:.2f} s"),
        ("bytes in flight (mean)", f"{where['bytes_in_flight'] / 1e6:.1f} MB"),
        ("one fetch takes", "-" if latency is None else f"{latency:.3f} s"),
        ("GPU", "no GPU" if gpu is None else
         f"{gpu['utilization']:.0f} % busy ({gpu['source']})" if gpu["utilization"] is not None
         else f"unreadable ({gpu['source']})"),
    ])
    plots = "".join(f"<h2>{html.escape(title)}</h2><img alt=\"{html.escape(title)}\" "
                    f"src=\"data:image/png;base64,{png}\">"
                    for title, png in _plots(series, step_waits))
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ferry: is training waiting on data?</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 60em; color: #222; }}
.verdict {{ font-size: 1.15em; padding: 0.8em; background: #f3f6fa;
            border-left: 4px solid #1f77b4; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: left; }}
img {{ max-width: 100%; }}
</style></head><body>
<h1>Is training waiting on data?</h1>
<p>{html.escape(when)}, {report['steps']} steps</p>
<p class="verdict"><b>{html.escape(report['kind'])}</b>:
{html.escape(report['verdict'].split(':', 1)[-1].strip())}</p>
<h2>Figures</h2>{figures}
<h2>Epochs</h2>{epochs}
{plots}
</body></html>
"""


def write_html(report: Dict[str, Any], series: Dict[str, List[float]],
               step_waits: Sequence[float], path: str) -> None:
    """Writes the page to ``path`` through a temporary in the same folder (never half a page)."""
    text = render_html(report, series, step_waits)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ferry-report-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
