#!/usr/bin/env bash
# Installs every Debian package ferry needs to build, test, benchmark and run its demo.
# Idempotent: when everything is already installed it changes nothing and touches no network;
# `apt-get update` runs only when at least one package is missing.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev clang-format
  # libraries linked by libferry
  libssl-dev libcurl4-openssl-dev libzstd-dev liblz4-dev libbrotli-dev libsnappy-dev zlib1g-dev
  libbz2-dev libxxhash-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libexpat1-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # `ferry top`'s live view is tested in a terminal; the HTML report of ferry.diagnose is
  # looked at in a browser
  tmux chromium
  # Python package (Debian's interpreter; there is no PyPI here)
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-pil
  python3-torch python3-boto3 python3-azure
  # pip install . / pip wheel . offline (Debian's backend), and the venv make test installs into
  python3-pip python3-setuptools python3-wheel python3-venv
  # benchmarks: the torchvision pipeline ferry.DataLoader is compared with; what Mosaic
  # Streaming (run from a checkout of its source, bench/dropin_vs_mosaic.sh) imports
  python3-torchvision python3-matplotlib python3-zstd python3-xxhash python3-snappy
  python3-catalogue python3-filelock
  # ferry.convert on data frames, and on a Dask cluster (tests start a LocalCluster)
  python3-pandas python3-dask python3-distributed
)

missing=()
# Node.js runs the s3rver and Azurite test servers. This kind of machine ships it (with npm);
# Debian's own nodejs + npm are only installed where there is none.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${#missing[@]} missing packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
