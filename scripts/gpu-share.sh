#!/usr/bin/env bash
# The GPU share of a decode token: how much of a token's wall time the host spends inside the
# CUDA runtime (launching, copying, waiting for the GPU), measured from outside the binary with
# scripts/cuda-api-time.c, so any two Strata builds (or any CUDA program with a bench) compare
# the same way. Two runs of the same decode bench, N1 and N2 tokens; the differences of their
# CUDA-runtime totals divided by N2 - N1 is the per-token figure, free of loading and warm-up.
# A one-token run goes first and is not counted (a model's first run measures its shapes for the
# hardware profile), and calls longer than CUDA_API_TIME_LONG_MS (10) are left out (load-time
# waits for weight uploads; cuda-api-time.c). All on the GPU a token's one wait can be longer:
# raise the limit there.
#
#   scripts/gpu-share.sh STRATA MODEL N1 N2 [bench flags...]
#   e.g. scripts/gpu-share.sh build/bin/strata 70b.gguf 4 20 --gpu-mem 6G -c 512 -t 16
#
# Prints each run's bench row and CUDA-runtime table, then: calls per token, ms per token in the
# CUDA runtime, the token time from the N2 run's t/s, and their ratio (the GPU share).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 STRATA MODEL N1 N2 [bench flags...]" >&2; exit 2; }
strata=$1 model=$2 n1=$3 n2=$4
shift 4
[ "$n2" -gt "$n1" ] || { echo "$0: N2 must be larger than N1" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC "$(dirname "$0")/cuda-api-time.c" -o "$work/cuda-api-time.so" -ldl

run() {  # $1 tokens, then the bench flags; writes $work/api.$1 and $work/bench.$1
    local n=$1
    shift
    CUDA_API_TIME_OUT="$work/api.$n" LD_PRELOAD="$work/cuda-api-time.so" \
        "$strata" bench -m "$model" -p 0 -n "$n" -r 1 "$@" > "$work/bench.$n" 2>&1 || {
        tail -20 "$work/bench.$n" >&2
        exit 1
    }
}
run 1 "$@"
run "$n1" "$@"
run "$n2" "$@"
for n in "$n1" "$n2"; do
    echo "== $n tokens"
    grep -E "^\| .*\| tg$n " "$work/bench.$n" || tail -3 "$work/bench.$n"
    cat "$work/api.$n"
done
# t/s is the bench row's second-to-last column in every version of `strata bench`.
tps=$(grep -E "^\| .*\| tg$n2 " "$work/bench.$n2" | awk -F'|' '{print $(NF-2)}' | awk '{print $1}')
# The calls per token are exact; the milliseconds are a difference of two runs, so noise of the
# order of the runtime's start-up (well under a millisecond) can make a tiny figure negative.
awk -v n1="$n1" -v n2="$n2" -v tps="$tps" '
    FNR == NR { if ($1 != "total") { a[$1] = $3; c[$1] = $2 }; next }
    $1 != "total" {
        d = ($3 - a[$1]) / (n2 - n1) * 1e3; sum += d; calls += ($2 - c[$1]) / (n2 - n1)
        if (d > 0.0005 || d < -0.0005) printf "per token %-28s %9.3f ms\n", $1, d
    }
    END {
        tok = 1e3 / tps
        printf "per token, calls into the CUDA runtime: %.2f\n", calls
        printf "per token in the CUDA runtime %.2f ms of %.2f ms (%.2f tok/s): GPU share %.1f%%\n", sum, tok, tps, 100 * sum / tok
    }' "$work/api.$n1" "$work/api.$n2"
