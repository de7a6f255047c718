#!/usr/bin/env bash
# Installs everything torch_npu_sim needs on a fresh Debian machine and builds it into the current
# Python environment: apt build tools + GoogleTest, pinned pip packages, the extension (no build isolation).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(g++ make cmake ninja-build ccache libgtest-dev libopenblas-dev libopenblas0-pthread libxsmm-dev libboost-dev)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install.sh: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
# torch is pinned to the 2.13.0 CPU wheel; any other spec would pull a multi-GB CUDA build.
$PY -m pip install -q --disable-pip-version-check -r requirements.txt
# --no-build-isolation: build against the torch installed above, never an isolated copy.
$PY -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .
$PY -c "import torch, torch_npu_sim; print('torch_npu_sim ready:', torch.__version__, torch.npu.device_count(), 'npu devices')"
