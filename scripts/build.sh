#!/usr/bin/env bash
# Configures and builds Strata into build/ (the CLI lands at build/bin/strata).
# Without a visible GPU the CUDA target is compiled for one architecture only (a build check);
# set STRATA_CUDA_ARCHS to override (e.g. "75;80;86;89;90" or "native"). Arguments go to cmake's
# configure step; STRATA_BUILD_DIR and STRATA_BUILD_TARGET pick the folder and one target.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${STRATA_BUILD_DIR:-build}
archs=${STRATA_CUDA_ARCHS:-}
if [ -z "$archs" ]; then
  if nvidia-smi -L >/dev/null 2>&1; then archs=native; else archs=75; fi
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" ${STRATA_BUILD_TARGET:+--target "$STRATA_BUILD_TARGET"}
