#!/usr/bin/env bash
# Decode speed with and without --sparsity on a synthetic model calibrated on itself (the
# numbers of docs/SPARSITY.md "Speed"). Prints, per setting, bench's tok/s and the CPU seconds
# per decoded token (user + sys of the process beyond a run that decodes nothing, over the
# tokens it decoded): on a busy machine the wall clock includes time the process waited for a
# core, its CPU time does not.
# usage: scripts/sparsity-speed.sh MODEL.gguf STATS S THREADS N_GEN REPS
set -euo pipefail
strata=${STRATA:-$(dirname "$0")/../build/bin/strata}
model=$1 stats=$2 s=$3 threads=$4 n=$5 reps=$6
cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}'; }
base_args=(bench -m "$model" --gpu none -t "$threads" -p 0 -r "$reps")
for setting in dense sparse; do
  extra=()
  [ "$setting" = sparse ] && extra=(--sparsity "$s" --stats "$stats")
  idle=$(cpu "$strata" "${base_args[@]}" -n 0 "${extra[@]}")
  out=$("$strata" "${base_args[@]}" -n "$n" "${extra[@]}" --json 2>/dev/null)
  busy=$(cpu "$strata" "${base_args[@]}" -n "$n" "${extra[@]}")
  tokens=$(( (n < 16 ? n : 16) + 1 + reps * (n + 1) ))
  tps=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1])["results"][0]; print("%.3f ± %.3f | achieved sparsity %s" % (r["tokens_per_second"], r["stdev"], r.get("sparsity", {}).get("achieved", "-")))' "$out")
  echo "$setting: tok/s $tps | cpu s/token $(python3 -c "print(f'{($busy - $idle) / $tokens:.4f}')")"
done
