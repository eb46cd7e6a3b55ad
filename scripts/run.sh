#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then generate text with
# the default model. Usage: scripts/run.sh ["prompt"] [more strata run flags]
# (until `strata chat` lands, this is one-shot generation).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
model=$(scripts/default-model.sh)
prompt=${1:-"The three most useful things to pack for a week of hiking are"}
shift || true
exec build/bin/strata run -m "$model" -p "$prompt" -n 64 "$@"
