"""ferry.DataLoader: native decode + transforms equal the same pipeline done with PIL + numpy;
batches come as torch's DataLoader would give them; exact resumption; memory stays flat over many
epochs; deleting a loader stops its threads; bad input is a clear error."""

import gc
import io
import os

import numpy as np
import pytest
import torch
from PIL import Image

import ferry
from ferry import transforms as T

N = 96


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    out = tmp_path_factory.mktemp("images") / "ds"
    rng = np.random.default_rng(7)
    with ferry.MDSWriter(out=str(out), columns={"image": "jpeg", "label": "int", "name": "str",
                                                "gray": "png"},
                         size_limit="64kb") as writer:
        for i in range(N):
            h, w = 40 + (i * 7) % 50, 30 + (i * 11) % 60
            # Smooth content, like photographs, plus noise.
            y, x = np.mgrid[0:h, 0:w]
            pixels = np.stack([(x * 4 + i) % 256, (y * 3) % 256, (x + y) % 256], -1)
            pixels = (pixels + rng.integers(0, 20, pixels.shape)).clip(0, 255).astype(np.uint8)
            writer.write({"image": Image.fromarray(pixels), "label": i % 10, "name": f"n{i}",
                          "gray": Image.fromarray(pixels[:, :, 0])})
    return out


def _pil(encoded: bytes) -> Image.Image:
    return Image.open(io.BytesIO(encoded)).convert("RGB")


def _center_crop(image: Image.Image, h: int, w: int) -> np.ndarray:
    # torchvision's CenterCrop on a PIL image (round half to even, as Python's round).
    top = int(round((image.height - h) / 2.0))
    left = int(round((image.width - w) / 2.0))
    return np.asarray(image.crop((left, top, left + w, top + h)))


def _by_id(ds_bytes, loader, column="image"):
    for batch in loader:
        for k, sample_id in enumerate(batch["__ids__"].tolist()):
            yield ds_bytes[sample_id], batch[column][k].numpy()


def test_decode_and_center_crop_equal_pil_pixel_for_pixel(images):
    ds = ferry.StreamingDataset(batch_size=1, local=str(images))
    raw = ferry.StreamingDataset(batch_size=1, local=str(images), image_format="bytes")
    loader = ferry.DataLoader(ds, batch_size=8, num_threads=2,
                              transform=[T.Decode(dct_scaling=False), T.CenterCrop((36, 28))])
    count = 0
    for sample, got in _by_id(raw, loader):
        want = _center_crop(_pil(sample["image"]), 36, 28)  # pads small images with black
        assert got.shape == (36, 28, 3) and got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)
        count += 1
    assert count == N


def test_resize_is_pillows_bilinear_within_one_unit(images):
    ds = ferry.StreamingDataset(batch_size=1, local=str(images))
    raw = ferry.StreamingDataset(batch_size=1, local=str(images), image_format="bytes")
    loader = ferry.DataLoader(
        ds, batch_size=8, num_threads=2, columns=["image", "gray"],
        transform={"image": [T.Decode(dct_scaling=False), T.Resize(33), T.CenterCrop(30)],
                   "gray": [T.Resize((20, 25))]})
    worst = 0
    exact = 0
    for batch in loader:
        for k, sample_id in enumerate(batch["__ids__"].tolist()):
            sample = raw[sample_id]
            image = _pil(sample["image"])
            w, h = image.size
            size = (33, int(33 * h / w)) if w <= h else (int(33 * w / h), 33)
            want = _center_crop(image.resize(size, Image.BILINEAR), 30, 30)
            diff = np.abs(batch["image"][k].numpy().astype(int) - want.astype(int)).max()
            worst = max(worst, diff)
            exact += diff == 0
            gray = _pil(sample["gray"]).resize((25, 20), Image.BILINEAR)
            assert np.abs(batch["gray"][k].numpy().astype(int) -
                          np.asarray(gray).astype(int)).max() <= 1
    assert worst <= 1
    assert exact >= N // 2, "most images are bit-identical to Pillow's"


def test_float_output_is_totensor_then_normalize(images):
    ds = ferry.StreamingDataset(batch_size=1, local=str(images))
    raw = ferry.StreamingDataset(batch_size=1, local=str(images), image_format="bytes")
    mean, std = (0.4, 0.5, 0.6), (0.2, 0.25, 0.3)
    loader = ferry.DataLoader(ds, batch_size=4, num_threads=1, columns=["image"],
                              transform=[T.CenterCrop(16), T.ToTensor("NCHW", "float32"),
                                         T.Normalize(mean, std)])
    batch = next(iter(loader))
    assert batch["image"].shape == (4, 3, 16, 16) and batch["image"].dtype == torch.float32
    for k, sample_id in enumerate(batch["__ids__"].tolist()):
        pixels = _center_crop(_pil(raw[sample_id]["image"]), 16, 16).astype(np.float32) / 255
        want = ((pixels - np.array(mean, np.float32)) / np.array(std, np.float32)).transpose(2, 0, 1)
        np.testing.assert_allclose(batch["image"][k].numpy(), want, atol=1e-5)


def test_random_transforms_are_seeded_per_sample(images):
    def run(seed, epochs=1):
        ds = ferry.StreamingDataset(batch_size=1, local=str(images), shuffle=True)
        loader = ferry.DataLoader(ds, batch_size=8, num_threads=2, seed=seed,
                                  transform=[T.RandomResizedCrop(20), T.RandomHorizontalFlip()])
        out = []
        for _ in range(epochs):
            out.append({i: b["image"][k].clone() for b in loader
                        for k, i in enumerate(b["__ids__"].tolist())})
        return out

    a, b, c = run(1, 2), run(1), run(2)
    assert all(torch.equal(a[0][i], b[0][i]) for i in range(N)), "same seed, same crops"
    assert sum(not torch.equal(a[0][i], c[0][i]) for i in range(N)) > N // 2
    assert sum(not torch.equal(a[0][i], a[1][i]) for i in range(N)) > N // 2, "epochs differ"
    assert all(t.shape == (20, 20, 3) for t in a[0].values())


@pytest.mark.parametrize("threads", [1, 3])
def test_batches_come_in_torch_dataloader_order(images, threads):
    ds = ferry.StreamingDataset(local=str(images), shuffle=True, batch_size=4)
    torch_loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=threads,
                                               collate_fn=lambda b: [s["name"] for s in b])
    want = list(torch_loader)
    ours = ferry.DataLoader(ferry.StreamingDataset(batch_size=1, local=str(images), shuffle=True),
                            batch_size=4, num_threads=threads, columns=["label", "name"])
    got = [list(b["name"]) for b in ours]
    assert got == want
    assert sorted(n for b in got for n in b) == sorted(f"n{i}" for i in range(N))


def test_ranks_split_without_overlap(images, monkeypatch):
    seen = []
    for rank in range(2):
        monkeypatch.setenv("WORLD_SIZE", "2")
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
        monkeypatch.setenv("LOCAL_RANK", "0")
        ds = ferry.StreamingDataset(batch_size=1, local=str(images), shuffle=True)
        loader = ferry.DataLoader(ds, batch_size=4, num_threads=2, columns=["name"])
        seen.append([n for b in loader for n in b["name"]])
    assert len(seen[0]) == len(seen[1]) == N // 2
    assert sorted(seen[0] + seen[1]) == sorted(f"n{i}" for i in range(N))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_state_dict_resumes_exactly(images, threads):
    def loader():
        ds = ferry.StreamingDataset(batch_size=1, local=str(images), shuffle=True)
        return ferry.DataLoader(ds, batch_size=4, num_threads=threads, columns=["label", "name"])

    full = [list(b["name"]) for b in loader()]
    for stops in ([1], [4, 3], [len(full) - 1]):
        got, state = [], None
        for k in stops:
            dl = loader()
            if state is not None:
                dl.load_state_dict(state)
            for b in dl:
                got.append(list(b["name"]))
                if len(got) == sum(stops[: stops.index(k) + 1]):
                    break
            state = dl.state_dict()
            dl.close()
        dl = loader()
        dl.load_state_dict(state)
        got += [list(b["name"]) for b in dl]
        assert got == full, f"stopped after {stops}"


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _threads():
    return len(os.listdir("/proc/self/task"))


def test_memory_stays_flat_over_forty_epochs(images):
    ds = ferry.StreamingDataset(batch_size=1, local=str(images), shuffle=True)
    loader = ferry.DataLoader(ds, batch_size=8, num_threads=2,
                              transform=[T.RandomResizedCrop(48), T.ToTensor()])
    rss = []
    for _ in range(40):
        total = sum(float(b["image"].sum()) > -1 for b in loader)
        assert total == N // 8
        gc.collect()
        rss.append(_rss_mb())
    # Each epoch's threads may take a fresh malloc arena until glibc's limit: RSS settles over
    # the first epochs (+17 MB from the 3rd to the 20th once in a full suite; 200 epochs alone:
    # 237 MB after the first, 246 after the 20th, 248 after the 200th). A leak keeps growing in
    # the second half.
    assert rss[-1] - rss[19] < 8, f"RSS grew from {rss[19]:.0f} MB to {rss[-1]:.0f} MB"
    assert rss[-1] - rss[2] < 32, f"RSS grew from {rss[2]:.0f} MB to {rss[-1]:.0f} MB"


def test_deleting_a_loader_mid_epoch_stops_its_threads(images):
    before = _threads()
    ds = ferry.StreamingDataset(batch_size=1, local=str(images))
    loader = ferry.DataLoader(ds, batch_size=2, num_threads=3, prefetch_factor=1,
                              transform=[T.CenterCrop(8)])
    it = iter(loader)
    next(it)
    assert _threads() >= before + 3
    del it, loader
    gc.collect()
    assert _threads() <= before


@pytest.mark.parametrize("kwargs, match", [
    ({"transform": [T.Resize(20)]}, "fixed size"),
    ({"columns": ["nope"]}, "no column 'nope'"),
    ({"columns": ["label"], "transform": [T.CenterCrop(8)]}, "no jpeg/png column"),
    ({"transform": {"label": [T.CenterCrop(8)]}}, "not a loaded jpeg/png column"),
    ({"transform": [lambda x: x]}, "not a ferry.transforms"),
    ({"batch_size": 0}, "batch_size"),
    ({"num_threads": 0}, "num_threads"),
])
def test_bad_arguments_are_value_errors(images, kwargs, match):
    ds = ferry.StreamingDataset(batch_size=1, local=str(images))
    with pytest.raises(ValueError, match=match):
        loader = ferry.DataLoader(ds, **kwargs)
        next(iter(loader))


@pytest.mark.parametrize("make, match", [
    (lambda: T.CenterCrop(0), "positive"),
    (lambda: T.Resize((3, 4, 5)), "size"),
    (lambda: T.ToTensor(layout="CHW"), "layout"),
    (lambda: T.Normalize((1, 2), (1, 2, 3)), "channel"),
])
def test_bad_transforms_are_value_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_diagnose_reports_a_verdict(images):
    ds = ferry.StreamingDataset(batch_size=1, local=str(images))
    loader = ferry.DataLoader(ds, batch_size=8, num_threads=2, transform=[T.CenterCrop(16)])
    lines = []
    report = ferry.diagnose(loader, lambda batch: sum(range(20000)), steps=5, out=lines.append)
    assert report["steps"] == 5 and report["samples"] == 40
    assert 0 <= report["waiting_fraction"] <= 1
    assert "waiting on data" in lines[0] and report["verdict"] in lines[0]
    stats = loader.stats()
    assert stats.batches == 5 and stats.samples == 40 and stats.compute_s > 0


def test_a_forked_child_can_drop_what_it_inherited(images):
    """torch forks DataLoader workers while native threads run in the parent: the child must be
    able to let go of the loaders, iterators and datasets it inherited without hanging."""
    import time

    ds = ferry.StreamingDataset(batch_size=1, local=str(images), shuffle=True)
    loader = ferry.DataLoader(ds, batch_size=2, num_threads=2, transform=[T.CenterCrop(8)])
    epoch = iter(loader)
    next(epoch)
    samples = iter(ds)
    next(samples)
    pid = os.fork()
    if pid == 0:
        try:
            del epoch, loader, samples, ds
            gc.collect()
            os._exit(0)
        except BaseException:
            os._exit(1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the child hung destroying inherited native objects")
    assert next(epoch)["image"].shape == (2, 8, 8, 3)  # the parent's are untouched
