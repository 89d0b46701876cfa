#!/usr/bin/env bash
# Fill .whl/ (git-ignored) with the wheels the device scripts install (gpu_common.sh) and the H200 lacks: the
# cudnn-frontend Python module (bench attention's cuDNN FP8 peer), pytest-xdist + execnet (parallel GPU tests).
# Run here (it needs the network), then pass carry=[".whl"] to the device call. Python 3.12 on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
python3 -m pip download -q --no-deps -d .whl --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 nvidia-cudnn-frontend==1.32.0
python3 -m pip download -q --no-deps -d .whl --only-binary=:all: pytest-xdist==3.8.0 execnet==2.1.2
ls -la .whl
