"""Image transforms that ``ferry.DataLoader`` runs in native threads.

They mirror torchvision's transforms on PIL images (sizes are ``(height, width)`` or an int):
``Resize`` and the resize in ``RandomResizedCrop`` use Pillow's BILINEAR resampling (the same
arithmetic, so results equal Pillow's or differ by one unit), ``CenterCrop`` pads a smaller image
with black as torchvision does. Random choices come from a generator seeded by the loader's seed,
the epoch and the sample, so a sample gets the same crop in every run.

A pipeline is a list (or ``Compose``) that ends in a fixed size, optionally followed by
``ToTensor`` (layout and dtype) and ``Normalize``::

    [Decode(), RandomResizedCrop(224), RandomHorizontalFlip(),
     ToTensor(layout="NCHW", dtype="float32"), Normalize(IMAGENET_MEAN, IMAGENET_STD)]
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .errors import InvalidArgumentError

Size = Union[int, Tuple[int, int], List[int]]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _hw(size: Size, name: str) -> Tuple[int, int]:
    if isinstance(size, bool):
        raise InvalidArgumentError(f"{name}: size must be an int or (height, width)")
    if isinstance(size, int):
        h = w = size
    elif isinstance(size, (tuple, list)) and len(size) == 2:
        h, w = size
    else:
        raise InvalidArgumentError(f"{name}: size must be an int or (height, width), not {size!r}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (h, w)):
        raise InvalidArgumentError(f"{name}: sizes must be positive ints, got {size!r}")
    return h, w


class Transform:
    """Base class; each transform contributes to the native pipeline description."""

    def _apply(self, spec: Dict[str, Any]) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Decode(Transform):
    """Decode JPEG/PNG to RGB (libjpeg-turbo, libpng). ``dct_scaling``: decode JPEGs at 1/2, 1/4
    or 1/8 size when the next step is a Resize that shrinks that much (faster; the pixels then
    differ slightly from a full decode + resize)."""

    def __init__(self, dct_scaling: bool = True) -> None:
        self.dct_scaling = bool(dct_scaling)

    def _apply(self, spec):
        spec["dct_scaling"] = self.dct_scaling


class Resize(Transform):
    """An int resizes the shorter side to it (keeping the aspect ratio); (h, w) resizes to that."""

    def __init__(self, size: Size) -> None:
        if isinstance(size, int) and not isinstance(size, bool):
            _hw(size, "Resize")
            self.size: Any = size
        else:
            self.size = _hw(size, "Resize")

    def _apply(self, spec):
        if isinstance(self.size, int):
            spec["transforms"].append({"kind": "resize", "width": self.size, "height": 0})
        else:
            h, w = self.size
            spec["transforms"].append({"kind": "resize", "width": w, "height": h})


class CenterCrop(Transform):
    def __init__(self, size: Size) -> None:
        self.size = _hw(size, "CenterCrop")

    def _apply(self, spec):
        h, w = self.size
        spec["transforms"].append({"kind": "center_crop", "width": w, "height": h})


class RandomResizedCrop(Transform):
    def __init__(self, size: Size, scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0)) -> None:
        self.size = _hw(size, "RandomResizedCrop")
        if len(scale) != 2 or len(ratio) != 2:
            raise InvalidArgumentError("RandomResizedCrop: scale and ratio are (low, high) pairs")
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))

    def _apply(self, spec):
        h, w = self.size
        spec["transforms"].append({"kind": "random_resized_crop", "width": w, "height": h,
                                   "scale": list(self.scale), "ratio": list(self.ratio)})


class RandomHorizontalFlip(Transform):
    def __init__(self, p: float = 0.5) -> None:
        self.p = float(p)

    def _apply(self, spec):
        spec["transforms"].append({"kind": "random_horizontal_flip", "p": self.p})


class ToTensor(Transform):
    """Output layout ``"NCHW"`` or ``"NHWC"``; dtype ``"float32"`` (scaled to [0, 1], as
    torchvision's ToTensor) or ``"uint8"`` (the pixels). Without it: uint8 NHWC."""

    def __init__(self, layout: str = "NCHW", dtype: str = "float32") -> None:
        if layout not in ("NCHW", "NHWC"):
            raise InvalidArgumentError(f"ToTensor: layout must be NCHW or NHWC, not {layout!r}")
        if dtype not in ("float32", "uint8"):
            raise InvalidArgumentError(f"ToTensor: dtype must be float32 or uint8, not {dtype!r}")
        self.layout = layout
        self.dtype = dtype

    def _apply(self, spec):
        spec["channels_first"] = self.layout == "NCHW"
        spec["to_float"] = self.dtype == "float32"


class Normalize(Transform):
    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        if len(mean) != 3 or len(std) != 3:
            raise InvalidArgumentError("Normalize: mean and std have one value per RGB channel")
        self.mean = [float(v) for v in mean]
        self.std = [float(v) for v in std]

    def _apply(self, spec):
        spec["mean"], spec["std"] = self.mean, self.std


class Compose(Transform):
    def __init__(self, transforms: Iterable[Transform]) -> None:
        self.transforms = list(transforms)

    def _apply(self, spec):
        for t in self.transforms:
            t._apply(spec)


def pipeline(transforms: Union[Transform, Iterable[Transform]]) -> Dict[str, Any]:
    """The native description of a pipeline."""
    spec: Dict[str, Any] = {"transforms": [], "to_float": False, "channels_first": False,
                            "mean": None, "std": None, "dct_scaling": True}
    items = [transforms] if isinstance(transforms, Transform) else list(transforms)
    for t in items:
        if not isinstance(t, Transform):
            raise InvalidArgumentError(
                f"{t!r} is not a ferry.transforms transform (the loader runs them natively)")
        t._apply(spec)
    return spec


__all__ = ["CenterCrop", "Compose", "Decode", "IMAGENET_MEAN", "IMAGENET_STD", "Normalize",
           "RandomHorizontalFlip", "RandomResizedCrop", "Resize", "ToTensor", "Transform",
           "pipeline"]
