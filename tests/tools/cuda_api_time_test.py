#!/usr/bin/env python3
"""scripts/cuda-api-time.c and scripts/gpu-share.sh without a GPU.

The CUDA runtime answers every call on a machine without a GPU (with an error code), so the
interposer can be checked there: a child process loads libcudart globally and calls
cudaStreamSynchronize and cudaMemcpyAsync through the global namespace, where the preloaded
library comes first. Checked: each call is counted once and reaches the real function (its
return code is the runtime's own), the long-call limit moves calls to the long columns, and
gpu-share.sh turns two runs of a stand-in bench (one that makes 7 calls a token) into exactly 7
calls per token, their time per token and its share of the token.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent("""
    import ctypes, sys
    ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
    g = ctypes.CDLL(None)
    codes = [g.cudaStreamSynchronize(None) for _ in range(int(sys.argv[2]))]
    buf = ctypes.create_string_buffer(64)
    codes.append(g.cudaMemcpyAsync(buf, buf, ctypes.c_size_t(64), ctypes.c_int(4), None))
    print(",".join(str(c) for c in codes))
""")

# A stand-in for `strata bench -p 0 -n N ...`: 7 synchronizations a token, 3 more for loading,
# and a bench row in Strata's table shape (t/s second to last).
FAKE_BENCH = textwrap.dedent("""
    import ctypes, sys
    ctypes.CDLL(LIBCUDART, mode=ctypes.RTLD_GLOBAL)
    g = ctypes.CDLL(None)
    n = int(sys.argv[sys.argv.index("-n") + 1])
    for _ in range(3 + 7 * n):
        g.cudaStreamSynchronize(None)
    print(f"| model | fake | tg{n} | 50.00 ± 0.00 | 50.0 |")
""")


def report(path):
    rows = {}
    with open(path) as f:
        for line in f:
            name, calls, seconds, long_calls, long_seconds = line.split()
            rows[name] = (int(calls), float(seconds), int(long_calls), float(long_seconds))
    return rows


def run_child(so, libcudart, calls, out, extra_env=None):
    env = dict(os.environ, LD_PRELOAD=so, CUDA_API_TIME_OUT=out)
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, "-c", CHILD, libcudart, str(calls)], env=env, capture_output=True,
                       text=True, check=True)
    return [int(c) for c in r.stdout.strip().split(",")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="the repository root")
    ap.add_argument("--libcudart", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, "cuda-api-time.so")
        subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-shared", "-fPIC",
                        os.path.join(args.source, "scripts", "cuda-api-time.c"), "-o", so, "-ldl"], check=True)
        # Without the interposer: the runtime's own return codes.
        plain = subprocess.run([sys.executable, "-c", CHILD, args.libcudart, "5"], capture_output=True, text=True,
                               check=True).stdout.strip()
        out = os.path.join(tmp, "api.txt")
        # A limit of a minute: the first call, which starts the runtime, may take over 10 ms.
        codes = run_child(so, args.libcudart, 5, out, {"CUDA_API_TIME_LONG_MS": "60000"})
        assert ",".join(str(c) for c in codes) == plain, (codes, plain)
        rows = report(out)
        assert rows["cudaStreamSynchronize"][0] == 5, rows
        assert rows["cudaMemcpyAsync"][0] == 1, rows
        assert rows["total"][0] == 6 and rows["total"][2] == 0, rows
        # Every call over a limit of 1 ns: all in the long columns.
        run_child(so, args.libcudart, 4, out, {"CUDA_API_TIME_LONG_MS": "0.000001"})
        rows = report(out)
        assert rows["cudaStreamSynchronize"][:1] == (0,) and rows["cudaStreamSynchronize"][2] == 4, rows
        assert rows["total"][2] == 5, rows

        fake = os.path.join(tmp, "fake-strata")
        with open(fake, "w") as f:
            f.write(f"#!{sys.executable}\nLIBCUDART = {args.libcudart!r}\n" + FAKE_BENCH)
        os.chmod(fake, 0o755)
        share = subprocess.run([os.path.join(args.source, "scripts", "gpu-share.sh"), fake, "model.gguf", "2", "10"],
                               capture_output=True, text=True)
        assert share.returncode == 0, share.stdout + share.stderr
        lines = share.stdout.strip().splitlines()
        # The stand-in's 7 calls a token, exactly (the difference of the two runs' counts).
        assert lines[-2] == "per token, calls into the CUDA runtime: 7.00", lines[-2]
        last = lines[-1]
        # "per token in the CUDA runtime X ms of 20.00 ms (50.00 tok/s): GPU share Y%". Without a
        # GPU each call returns in about a microsecond, so X is a difference of two runs' totals
        # that the runtime's start-up noise dominates (CI once saw -0.02 ms, -0.1%): it must be
        # tiny, either side of zero, not within [0, 100%].
        assert last.startswith("per token in the CUDA runtime") and "of 20.00 ms (50.00 tok/s)" in last, last
        per_token_ms = float(last.split("runtime", 1)[1].split("ms", 1)[0])
        pct = float(last.rsplit("GPU share", 1)[1].strip().rstrip("%"))
        assert abs(per_token_ms) < 1.0 and abs(pct - 100 * per_token_ms / 20.0) < 0.1, last
        assert "tg10 " in share.stdout and "tg2 " in share.stdout, share.stdout
    print("cuda-api-time: counts, return codes, long calls and the per-token share checked")


if __name__ == "__main__":
    main()
