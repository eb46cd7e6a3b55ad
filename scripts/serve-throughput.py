#!/usr/bin/env python3
"""Aggregate decode throughput of `strata serve` with 1, 4, 8... concurrent streams.

Starts `strata serve -m MODEL --parallel P --port 0 [SERVE ARGS]`, then for each stream count N
sends N streamed /v1/completions requests at once (different short prompts, greedy,
ignore_eos, --tokens each) and measures:
  aggregate tok/s = decoded tokens of all streams / (last token of any stream - first token of
                    any stream); each stream's first token (the prefill's) is not counted;
  per-stream tok/s (median) and the time to first token (max).
Greedy outputs are checked: the stream with prompt 0 must give the same text in every run as it
does alone (batched decoding must not change a request's answer). With --unbatched the same runs
follow on a server started with --no-batch-decode (one forward pass per stream) for comparison.
With --llama-server PATH the same runs go to llama.cpp's llama-server instead (started with
-m MODEL --port PORT --parallel P and the arguments after --, e.g. -ngl 99 -c 8192), for a side-by-side
figure on the same file.

Examples (GPU machine; arguments after -- go to strata serve):
  scripts/serve-throughput.py -m 7b-q4_k_m.gguf --streams 1,4,8 --tokens 128
  scripts/serve-throughput.py -m 70b-q4_k_m.gguf --streams 1,8 --unbatched -- --gpu-mem 6G
Prints one table row per run (markdown) and exits 1 when a greedy output differed."""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

NATIVE = False  # --llama-server: its own /completion endpoint (stream_native)
BANNED = []     # --ban-tokens: token ids neither server may sample

PROMPTS = [
    "The history of the printing press begins",
    "A recipe for bread: first,",
    "In the year 2150, the colony ships",
    "def quicksort(items):",
    "The three laws of thermodynamics state that",
    "Dear diary, today I finally",
    "Photosynthesis is the process by which",
    "The old lighthouse keeper looked at the sea and",
    "Rust and C++ differ in how they",
    "Once upon a time, in a kingdom by the mountains,",
    "The stock market closed higher on Tuesday as",
    "To configure a Linux firewall, you",
    "The main causes of the French Revolution were",
    "Jazz music originated in",
    "A good night's sleep helps the brain",
    "Quantum entanglement means that",
]


class Server:
    def __init__(self, strata, model, parallel, serve_args, unbatched):
        cmd = [strata, "serve", "-m", model, "--port", "0", "--parallel", str(parallel), *serve_args]
        if unbatched:
            cmd.append("--no-batch-decode")
        self.err = tempfile.TemporaryFile()
        print("$ " + " ".join(cmd), file=sys.stderr)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.err)
        line = [None]
        reader = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(1800)
        text = (line[0] or b"").decode()
        if "listening on http://" not in text:
            self.proc.kill()
            self.err.seek(0)
            sys.exit(f"strata serve did not start: {text!r}\n{self.err.read().decode(errors='replace')[-3000:]}")
        self.url = text.split("listening on ")[1].strip().rstrip("/")

    def stop(self, log_path=""):
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if log_path:  # --server-log: the server's stderr, appended
            self.err.seek(0)
            with open(log_path, "ab") as f:
                f.write(self.err.read())


class LlamaServer:
    """llama.cpp's llama-server on a fixed local port, ready once /health answers 200."""

    def __init__(self, binary, model, parallel, serve_args, port=18080):
        cmd = [binary, "-m", model, "--port", str(port), "--parallel", str(parallel), *serve_args]
        self.err = tempfile.TemporaryFile()
        print("$ " + " ".join(cmd), file=sys.stderr)
        self.proc = subprocess.Popen(cmd, stdout=self.err, stderr=self.err)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(1)
        self.proc.kill()
        self.err.seek(0)
        sys.exit(f"llama-server did not start\n{self.err.read().decode(errors='replace')[-3000:]}")

    stop = Server.stop


def events(url, path, body):
    """The JSON events of one streamed request (SSE `data:` lines); an error event raises."""
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if "error" in event:
                raise RuntimeError(event["error"])
            yield event


def stream_native(url, prompt, tokens):
    """As stream(), through llama-server's own /completion endpoint: its OpenAI endpoints run
    every answer through a chat-format parser, which refuses a synthetic model's random text."""
    body = {"prompt": prompt, "n_predict": tokens, "temperature": 0, "ignore_eos": True, "stream": True,
            "cache_prompt": False, "logit_bias": [[t, False] for t in BANNED]}
    text, times, n = "", [], 0
    for event in events(url, "/completion", body):
        if event.get("stop"):
            n = event.get("tokens_predicted", 0)
            continue
        text += event.get("content", "")
        times.append(time.monotonic())
    return text, times, n or len(times)


def stream(url, prompt, tokens):
    """(text, token arrival times, completion tokens) of one streamed greedy completion."""
    if NATIVE:
        return stream_native(url, prompt, tokens)
    # cache_prompt false: every run evaluates its prompts whole, so that prompt 0's text depends on
    # batching alone, not on the prefix a slot kept from an earlier run (its last token's 1-column
    # GEMV with 8-bit activations would differ from the prompt pass's GEMM).
    body = {"prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}, "cache_prompt": False}
    if BANNED:
        body["logit_bias"] = {str(t): -100 for t in BANNED}
    text, times, n = "", [], 0
    for event in events(url, "/v1/completions", body):
        if event.get("usage"):
            n = event["usage"]["completion_tokens"]
        for choice in event.get("choices", []):
            if choice.get("text"):
                text += choice["text"]
                times.append(time.monotonic())
    return text, times, n or len(times)  # a server without usage in streams: one token per event


def measure(url, n_streams, tokens):
    start = time.monotonic()
    with ThreadPoolExecutor(n_streams) as pool:
        results = list(pool.map(lambda i: stream(url, PROMPTS[i % len(PROMPTS)], tokens), range(n_streams)))
    firsts = [r[1][0] for r in results if r[1]]
    lasts = [r[1][-1] for r in results if r[1]]
    decoded = sum(max(0, r[2] - 1) for r in results)
    span = max(lasts) - min(firsts) if firsts else 0
    per_stream = [(r[2] - 1) / (r[1][-1] - r[1][0]) for r in results if len(r[1]) > 1 and r[1][-1] > r[1][0]]
    return {
        "streams": n_streams,
        "aggregate": decoded / span if span > 0 else 0.0,
        "per_stream": statistics.median(per_stream) if per_stream else 0.0,
        "ttft_max": max(firsts) - start if firsts else 0.0,
        "tokens": decoded,
        "text0": results[0][0],
        # Each stream's first and last token, ms after the requests went out (--timeline).
        "timeline": [(r[1][0] - start, r[1][-1] - start) for r in results if r[1]],
    }


ENGINE_COUNTERS = ("strata_engine_busy_seconds_total", "strata_batched_decode_passes_total",
                   "strata_batched_pass_seconds_total", "strata_batched_token_seconds_total")


def engine_counters(url):
    """Strata's engine-time counters from /metrics (empty for a server without them)."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            lines = r.read().decode().splitlines()
    except OSError:
        return {}
    values = {}
    for line in lines:
        name, _, value = line.partition(" ")
        if name in ENGINE_COUNTERS:
            values[name] = float(value)
    return values


def engine_split(before, after):
    """Where the engine thread's time went during a run: per batched pass, ms of the pass itself
    (model and logits), of its tokens (sampling, detokenizing, handing out), and the rest."""
    if len(before) != len(ENGINE_COUNTERS) or len(after) != len(ENGINE_COUNTERS):
        return ""
    d = {k: after[k] - before[k] for k in ENGINE_COUNTERS}
    passes = d["strata_batched_decode_passes_total"]
    if passes <= 0:
        return ""
    busy, run, tok = (1e3 * d[k] / passes for k in ("strata_engine_busy_seconds_total",
                                                    "strata_batched_pass_seconds_total",
                                                    "strata_batched_token_seconds_total"))
    return (f"{int(passes)} batched passes: {run:.2f} ms pass + {tok:.2f} ms tokens; engine busy "
            f"{busy:.2f} ms per pass (the rest: prompts, single-slot steps, admission)")


def run_all(args, unbatched):
    if args.llama_server:
        srv = LlamaServer(args.llama_server, args.model, args.parallel, args.serve_args)
    else:
        srv = Server(args.strata, args.model, args.parallel, args.serve_args, unbatched)
    rows = []
    try:
        stream(srv.url, "Warm up", 4)
        for n in args.streams:
            before = engine_counters(srv.url)
            rows.append(measure(srv.url, n, args.tokens))
            rows[-1]["engine"] = engine_split(before, engine_counters(srv.url))
    finally:
        srv.stop(args.server_log)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--strata", default="build/bin/strata")
    ap.add_argument("--streams", default="1,4,8", help="comma-separated stream counts")
    ap.add_argument("--tokens", type=int, default=128, help="tokens each stream generates")
    ap.add_argument("--parallel", type=int, default=0, help="server slots (default: the largest stream count)")
    ap.add_argument("--unbatched", action="store_true", help="also run with --no-batch-decode for comparison")
    ap.add_argument("--llama-server", default="", help="llama.cpp's llama-server binary: measure it instead")
    ap.add_argument("--ban-tokens", default="", metavar="FIRST-LAST",
                    help="token ids no request may sample, in both servers (llama-server's chat-format parser "
                         "refuses text that is not UTF-8: 131-258 are a synthetic Llama 2's bytes 0x80-0xFF)")
    ap.add_argument("--timeline", action="store_true",
                    help="print each stream's first and last token time (ms after the requests went out)")
    ap.add_argument("--server-log", default="", metavar="FILE",
                    help="append the server's stderr to FILE (with STRATA_SERVE_TRACE=1: one line per engine step)")
    ap.add_argument("serve_args", nargs="*", help="after --: arguments for the server (e.g. --gpu-mem 6G)")
    args = ap.parse_args()
    args.streams = [int(s) for s in args.streams.split(",")]
    global NATIVE, BANNED
    NATIVE = bool(args.llama_server)
    if args.ban_tokens:
        first, last = (int(v) for v in args.ban_tokens.split("-"))
        BANNED = list(range(first, last + 1))
    if args.parallel <= 0:
        args.parallel = max(args.streams)
    modes = [False, True] if args.unbatched and not args.llama_server else [False]
    print("| decode | streams | aggregate tok/s | per-stream tok/s (median) | x single | max TTFT s | tokens |")
    print("|---|---|---|---|---|---|---|")
    reference, same = None, True
    for unbatched in modes:
        rows = run_all(args, unbatched)
        single = next((r["aggregate"] for r in rows if r["streams"] == 1), None)
        for r in rows:
            if reference is None:
                reference = r["text0"]
            elif r["text0"] != reference:
                same = False
                print(f"greedy output of prompt 0 differs with {r['streams']} streams"
                      f"{' (unbatched)' if unbatched else ''}", file=sys.stderr)
            ratio = f"{r['aggregate'] / single:.2f}" if single else "-"
            name = "llama-server" if args.llama_server else "one pass per stream" if unbatched else "batched"
            print(f"| {name} | {r['streams']} | {r['aggregate']:.1f} | "
                  f"{r['per_stream']:.1f} | {ratio} | {r['ttft_max']:.2f} | {r['tokens']} |", flush=True)
            if r["engine"]:
                print(f"  ({r['streams']} streams) {r['engine']}", file=sys.stderr, flush=True)
            if args.timeline:
                spans = ", ".join(f"{1e3 * a:.0f}-{1e3 * b:.0f}" for a, b in sorted(r["timeline"]))
                print(f"  ({r['streams']} streams) first-last token, ms: {spans}", file=sys.stderr, flush=True)
    print(f"greedy output of prompt 0 identical in every run: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
