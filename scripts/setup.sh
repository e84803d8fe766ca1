#!/usr/bin/env bash
# Installs what segadvise needs on Debian 12 (as root or with sudo) and builds it into build/.
#   ./scripts/setup.sh            everything, the LibTorch profiler included
#   SEGADVISE_WITH_TORCH=OFF ./scripts/setup.sh   without LibTorch (advise/predict/check only)
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TORCH=${SEGADVISE_WITH_TORCH:-ON}
pkgs=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev doctest-dev libboost-graph-dev python3
  libyaml-cpp-dev libtoml11-dev  # ai-toolkit job YAML, musubi-tuner TOML (trainers/)
  libavformat-dev  # video datasets' container headers (trainers/common/video_probe.cpp; the tests write videos with it)
  librapidcheck-dev   # property tests (tests/test_properties.cpp)
  clang libclang-rt-14-dev)  # sanitizer build (build-asan) and libFuzzer targets (scripts/fuzz.sh)
if [[ $WITH_TORCH == ON ]]; then
  # libopenblas0-pthread: without it LibTorch uses the reference BLAS and runs ~9x slower
  # libgloo-dev: the headers of the Gloo library LibTorch's c10d links (validate --gpus N on the CPU)
  pkgs+=(libtorch-dev libopenblas0-pthread libgloo-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSEGADVISE_WITH_TORCH="$WITH_TORCH"
cmake --build build -j "$(nproc)"
