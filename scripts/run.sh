#!/usr/bin/env bash
# The main job on a fresh machine: install, build, then run Strata on the default model.
# Extra arguments go to the subcommand.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
model=$(scripts/default-model.sh)
exec build/bin/strata inspect -m "$model" "$@"
