#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then chat with the default
# model. Extra arguments go to `strata chat` (e.g. --temp 0.7 -n 256 --system "Be brief.").
# Piped input works too: one user turn per line.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
exec build/bin/strata chat -m "$(scripts/default-model.sh)" "$@"
