#!/usr/bin/env bash
# Installs ferry as a user would and uses it from outside the repository (docs/install.md):
#   1. `pip wheel .` (reusing the release build folder, so no second compile), the wheel checked:
#      only the package and its metadata, no build path in any file, and native code that needs
#      only the shared libraries listed in docs/install.md;
#   2. the wheel installed into a fresh virtual environment with Debian's site packages, then,
#      from an empty folder with no PYTHONPATH: `ferry --version`, `python -m ferry inspect` of a
#      fixture, and a Mosaic-style script (StreamingDataset, StreamingDataLoader) reading one;
#   3. the same wheel installed as into an image (into /usr/local, under a scratch --root) and run;
#   4. `cmake --install` of the C++ engine into a prefix, and examples/cpp-consumer configured
#      against it with find_package(ferry), built and run (and pkg-config asked the same).
# Usage: scripts/check-install.sh [--build-dir build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=build/release
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
fixtures=$root/$(head -n1 scripts/fixtures-dir.txt)
[ -f "$fixtures/all_scalars/index.json" ] || { echo "no fixtures at $fixtures" >&2; exit 1; }
split=$(dirname "$fixtures")/split
work=$(mktemp -d "${TMPDIR:-/tmp}/ferry-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
py=/usr/bin/python3
version=$(cmake -DSOURCE_DIR="$root" -DPRINT=ON -P cmake/FerryVersion.cmake)

# 1. The wheel.
FERRY_CMAKE_BUILD_DIR=$build $py -m pip wheel --quiet --no-build-isolation --no-deps \
  -w "$work/dist" . >"$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; exit 1; }
wheel=$(ls "$work"/dist/ferry-*.whl)
$py - "$wheel" "$root" "$version" <<'PY'
import re, subprocess, sys, tempfile, zipfile, pathlib
wheel, root, version = sys.argv[1:]
# The libraries docs/install.md lists (its table's first column), and nothing else.
doc = pathlib.Path(root, "docs", "install.md").read_text()
allowed = set(re.findall(r"^\| `((?:lib|ld-linux)[^`]*\.so[^`]*)` \|", doc, re.M))
assert len(allowed) > 10, "no library table in docs/install.md"
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    assert f"ferry-{version}.dist-info/METADATA" in names, (version, names[-5:])
    stray = [n for n in names if not (n.startswith("ferry/") or n.startswith(f"ferry-{version}.dist-info/"))]
    assert not stray, f"files outside the package: {stray}"
    for need in ("ferry/bin/ferry", "ferry/py.typed", "ferry/_ferry.pyi", "ferry/__main__.py"):
        assert need in names, f"{need} missing from the wheel"
    assert (z.getinfo("ferry/bin/ferry").external_attr >> 16) & 0o111, "ferry/bin/ferry not executable"
    natives = [n for n in names if n == "ferry/bin/ferry" or n.endswith(".so")]
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            data = z.read(name)
            for bad in (root.encode(), b"/build/release", b"/build/wheel"):
                assert bad not in data, f"{name} holds the build path {bad!r}"
        for name in natives:
            path = z.extract(name, tmp)
            out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True,
                                 text=True).stdout
            needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out))
            extra = needed - allowed
            assert not extra, f"{name} needs libraries docs/install.md does not list: {extra}"
            assert "RPATH" not in out and "RUNPATH" not in out, f"{name} has an rpath"
size = pathlib.Path(wheel).stat().st_size
print(f"check-install: wheel {pathlib.Path(wheel).name}: {len(names)} files, "
      f"{size / 1e6:.1f} MB, no build path, native code needs only listed libraries")
PY

# 2. A fresh virtual environment that sees Debian's numpy, pillow and torch.
$py -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index "$wheel"
mkdir "$work/run"
cat >"$work/run/train.py" <<'PY'
"""What a Mosaic Streaming user runs, with the import changed."""
import json, sys
from ferry import StreamingDataset, StreamingDataLoader
import ferry

remote, cache, expected, venv = sys.argv[1:]
assert ferry.__file__.startswith(venv), ferry.__file__
want = json.load(open(expected))["samples"]
dataset = StreamingDataset(remote=remote, local=cache, shuffle=False, batch_size=8)
assert len(dataset) == len(want)
assert [dataset[i] for i in range(len(dataset))] == want
loader = StreamingDataLoader(dataset, batch_size=8, num_workers=2)
ids = sorted(int(i) for batch in loader for i in batch["id"])
assert ids == sorted(s["id"] for s in want), "every sample once through 2 workers"
print(f"train.py: {len(dataset)} samples read as Mosaic reads them, ferry {ferry.__version__}")
PY
(
  cd "$work/run"
  unset PYTHONPATH
  export PATH="$work/venv/bin:$PATH"
  [ "$(ferry --version)" = "ferry $version" ] || { echo "ferry --version: $(ferry --version)"; exit 1; }
  [ "$(command -v ferry)" = "$work/venv/bin/ferry" ]
  python -m ferry inspect "$fixtures/all_scalars" | grep -q "^samples *50$"
  python train.py "$split/json_plain" "$work/run/cache" "$split/json_plain/expected.json" "$work/venv"
  python -c "import ferry, sys; assert ferry.__version__ == '$version', ferry.__version__"
)
echo "check-install: venv: ferry --version, python -m ferry inspect and a Mosaic-style script ok"

# 3. As into an image: Debian's pip outside a venv installs into /usr/local (here under a scratch
# --root), given --break-system-packages.
$py -m pip install --quiet --no-index --no-deps --break-system-packages --no-warn-script-location \
  --root "$work/image" "$wheel" 2>&1 | grep -v "Running pip as the 'root' user" || true
site=$(ls -d "$work"/image/usr/local/lib/python3*/dist-packages)
(
  cd "$work/run"
  out=$(PYTHONPATH="$site" "$work/image/usr/local/bin/ferry" --version)
  [ "$out" = "ferry $version" ] || { echo "image ferry --version: $out"; exit 1; }
  PYTHONPATH="$site" $py -m ferry inspect "$fixtures/all_scalars" | grep -q "^samples *50$"
)
echo "check-install: --break-system-packages into /usr/local (image): ferry and python -m ferry ok"

# 4. The C++ engine installed under a prefix, and a program built against it.
cmake --build "$build" --target ferry_library ferry >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
cmake --install "$build" --prefix "$work/prefix" >>"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
cmake -S examples/cpp-consumer -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >>"$work/install.log" 2>&1 &&
  cmake --build "$work/consumer" >>"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
(
  cd "$work/run"
  out=$("$work/consumer/ferry-consumer" "$fixtures/all_scalars")
  echo "$out" | grep -q "^ferry $version: .*: 9 shards, 50 samples$" || { echo "$out"; exit 1; }
  echo "$out" | grep -q "^  ID = 0$" || { echo "$out"; exit 1; }
  # pkg-config says the same to a build without CMake.
  flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs ferry)
  # shellcheck disable=SC2086  # the flags are words
  g++ "$root/examples/cpp-consumer/main.cc" -o "$work/consumer-pc" $flags \
    -Wl,-rpath,"$work/prefix/lib"
  [ "$("$work/consumer-pc" "$fixtures/all_scalars")" = "$out" ]
  [ "$("$work/prefix/bin/ferry" --version)" = "ferry $version" ]
)
echo "check-install: find_package(ferry) and pkg-config consumers built against $(
  du -sh "$work/prefix" | cut -f1) prefix and run"
