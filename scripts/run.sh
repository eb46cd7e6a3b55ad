#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build the strata CLI (progress
# shown), then chat with the installed instruct model (Qwen2.5-Coder 0.5B Instruct). Extra
# arguments go to `strata chat` (e.g. --temp 0.7 -n 256 -sys "Be brief."); `-m FILE` picks
# another model, e.g. the base Gemma 3 270M: scripts/run.sh -m "$(scripts/default-model.sh)".
# Piped input works too: one user turn per line.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "run.sh: building the strata CLI (build/bin/strata; the first build takes several minutes)" >&2
STRATA_BUILD_TARGET=strata scripts/build.sh >&2
model=()
case " $* " in
  *" -m "*|*" --model "*|*" --model="*|*" -hf "*) ;;
  *) model=(-m "$(python3 scripts/second-model.py)") ;;
esac
exec build/bin/strata chat "${model[@]}" "$@"
