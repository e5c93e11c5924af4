"""The HTML reports: one self-contained page (plots as PNG inside it, no file beside it), drawn
with matplotlib's Figure alone (no pyplot: no backend is chosen, nor any figure of the caller's
touched, and no display is needed).

- ``ferry.profile`` / ``ferry.diagnose(..., report=...)``: the verdict, the figures of each
  epoch, where the wait went, and plots of throughput and bytes in flight over time, the data
  wait of every step, the cache's fill, and the GPU's utilisation when there is one.
- ``ferry stream --report``: each epoch's figures, and plots of throughput and bytes in flight,
  samples per second and the cache's fill over time. The CLI runs
  ``python -m ferry._report stream RUN.json OUT.html`` with what it measured.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import secrets
import sys
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


def _axes():
    """A figure of its own and its axes: nothing global, collected like any object."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3))
    return fig, fig.subplots()


def _line(x, y, xlabel, ylabel, color="C0", ylim=None, linewidth=None) -> str:
    fig, ax = _axes()
    ax.plot(x, y, color=color, linewidth=linewidth)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _png(fig)


def _throughput(t, read_bytes, in_flight) -> str:
    fig, ax = _axes()
    mid = [(t[i] + t[i - 1]) / 2 for i in range(1, len(t))]
    ax.plot(mid, [r / 1e6 for r in _rates(t, read_bytes)], color="C0", label="fetched, MB/s")
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB/s")
    ax2 = ax.twinx()
    ax2.plot(t, [b / 1e6 for b in in_flight], color="C1", label="in flight, MB")
    ax2.set_ylabel("MB in flight")
    ax.legend(loc="upper left")
    ax2.legend(loc="upper right")
    return _png(fig)


def _cache_fill(t, cache_bytes) -> str:
    return _line(t, [b / 1e6 for b in cache_bytes], "seconds", "MB downloaded into the cache")


CACHE_FILL = "Cache fill (downloaded less evicted, since the start)"


def _plots(series: Dict[str, List[float]], step_waits: Dict[str, List[float]]) -> List[tuple]:
    """[(title, base64 PNG)] of a profiled loop; ``step_waits`` is {"step": [...], "wait":
    [...]} (a long run's steps averaged in groups)."""
    t = series["t"]
    plots = [("Throughput and bytes in flight",
              _throughput(t, series["read_bytes"], series["in_flight"])),
             ("Data wait per step",
              _line(step_waits["step"], [w * 1e3 for w in step_waits["wait"]], "step",
                    "ms waiting for the batch", linewidth=0.8)),
             (CACHE_FILL, _cache_fill(t, series["cache_bytes"]))]
    gpu = series.get("gpu", [])
    if any(not math.isnan(g) for g in gpu):
        plots.append(("GPU utilisation", _line(t, gpu, "seconds", "GPU busy, %", color="C2",
                                               ylim=(0, 100))))
    return plots


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table>{'<tr>' + head + '</tr>' if head else ''}{body}</table>"


_STYLE = """<style>
body { font-family: sans-serif; margin: 2em; max-width: 60em; color: #222; }
.verdict { font-size: 1.15em; padding: 0.8em; background: #f3f6fa;
           border-left: 4px solid #1f77b4; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: left; }
img { max-width: 100%; }
</style>"""


def _images(plots: Sequence[tuple]) -> str:
    return "".join(f"<h2>{html.escape(title)}</h2><img alt=\"{html.escape(title)}\" "
                   f"src=\"data:image/png;base64,{png}\">" for title, png in plots)


def render_stream_html(run: Dict[str, Any]) -> str:
    """The page of a ``ferry stream`` run: {"url", "epochs": [--json's objects], "series"}."""
    epochs = _table([(e["epoch"] + 1, e["samples"], f"{e['seconds']:.2f}",
                      f"{e['samples_per_s']:.0f}", f"{e['mb_per_s']:.1f}",
                      f"{e['bytes_fetched'] / 1e6:.1f}", e["remote_requests"], e["cache_hits"],
                      e["cache_misses"], f"{e['wait_s']:.2f}",
                      f"{e['time_to_first_sample_s']:.3f}") for e in run["epochs"]],
                    ["epoch", "samples", "seconds", "samples/s", "MB/s", "MB fetched",
                     "requests", "cache hits", "misses", "waited, s", "first sample, s"])
    s = run["series"]
    t = s["t"]
    mid = [(t[i] + t[i - 1]) / 2 for i in range(1, len(t))]
    plots = [("Throughput and bytes in flight", _throughput(t, s["read_bytes"], s["in_flight"])),
             ("Samples per second", _line(mid, _rates(t, s["samples"]), "seconds", "samples/s")),
             (CACHE_FILL, _cache_fill(t, s["cache_bytes"]))]
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ferry stream: {html.escape(run['url'])}</title>
{_STYLE}</head><body>
<h1>ferry stream</h1>
<p>{html.escape(run['url'])}, {html.escape(when)}</p>
<h2>Epochs</h2>{epochs}
{_images(plots)}
</body></html>
"""


def render_html(report: Dict[str, Any], series: Dict[str, List[float]],
                step_waits: Dict[str, List[float]]) -> str:
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
    plots = _images(_plots(series, step_waits))
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ferry: is training waiting on data?</title>
{_STYLE}</head><body>
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
               step_waits: Dict[str, List[float]], path: str) -> None:
    """Writes the page of a profiled loop to ``path``."""
    _write(render_html(report, series, step_waits), path)


def _write(text: str, path: str) -> None:
    """Writes ``text`` to ``path`` through a temporary in the same folder (never half a page)."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".ferry-report-{os.getpid()}-{secrets.token_hex(6)}")
    # Mode 0666 less the umask, as any file gets (not mkstemp's 0600): the kernel applies it,
    # where reading the umask would mean setting it, for every thread of the process at once.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: Sequence[str]) -> int:
    if len(argv) != 3 or argv[0] != "stream":
        print("usage: python -m ferry._report stream RUN.json OUT.html", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        run = json.load(f)
    _write(render_stream_html(run), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
