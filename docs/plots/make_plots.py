#!/usr/bin/env python3
"""Draws the plots of docs/BENCHMARKS.md from the figures recorded there (tables in this file
mirror the document; each number was measured with the command the document gives).
usage: python3 docs/plots/make_plots.py  (needs matplotlib)"""
import os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = os.path.dirname(os.path.abspath(__file__))


def bars(path, title, ylabel, groups, series, colors, top=None):
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        b = ax.bar(xs, [v if v is not None else 0 for v in values], width, label=name, color=colors[i])
        for x, v in zip(xs, values):
            if v is not None:
                ax.text(x, v, f"{v:g}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel(ylabel)
    if top is not None:
        ax.set_ylim(0, top)  # room for the legend above the bars
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, path), dpi=110)
    plt.close(fig)


# Llama-2-70B synth (Q4_K_M, 38.6 GiB), H200 machine, 16 threads: decode tok/s.
bars("offload_70b_decode.png", "Llama-2-70B synth decode, H200 + 16-core Xeon (tok/s)", "tokens/s",
     ["CPU only", "6 GiB VRAM\n(rest RAM)", "6 GiB VRAM,\n24 GiB RAM, disk"],
     {"llama.cpp (peer, measuring.md)": [2.39, 2.71, 0.04], "Strata": [3.68, 3.86, 0.30]},
     ["#999999", "#2a7ab9"])

# Llama-2-7B synth, 2-core AMD EPYC dev box, 2 threads (side by side, alternating).
bars("cpu_7b_2threads.png", "Llama-2-7B synth on 2 CPU threads, quiet box (tok/s, mean of 2 alternating runs)",
     "tokens/s", ["prefill pp512", "decode tg32"],
     {"llama.cpp c392e50 (Feb 2025)": [13.9, 9.09], "Strata": [33.94, 10.17]}, ["#999999", "#2a7ab9"])

# Predicted vs measured decode, H200 machine, 20 configurations of one call (2026-11-21, call 21,
# commit 74db972: split-FFN RAM columns packed): the profile alone, and fitted to the 19 other
# runs (leave-one-out) by the eight-coefficient fit, from `strata calibration` on the call's file.
configs = ["7B GPU", "7B CPU", "7B 2G", "7B 3G", "7B 4G", "270M GPU", "270M CPU", "270M 900M", "13B GPU",
           "13B CPU", "13B 4G", "13B 8G", "70B 6G\nbuilt-in", "70B 6G", "70B 12G", "70B 24G", "70B 40G",
           "70B CPU", "70B 6G\n24G+disk", "70B 6G\n16G+disk"]
profile_only = [0.92, 1.13, 1.13, 1.05, 1.02, 1.00, 0.68, 0.71, 1.00, 1.12, 1.09, 1.04, 1.15, 1.17, 1.22, 1.20, 0.99,
                1.12, 0.85, 0.82]
leave_one_out = [0.92, 1.03, 1.05, 1.02, 1.05, 1.11, 0.97, 0.91, 1.03, 0.98, 0.97, 1.09, 0.96, 0.99, 1.04, 1.03, 1.02,
                 0.94, 1.03, 0.97]
fig, ax = plt.subplots(figsize=(10, 4))
x = range(len(configs))
ax.bar([i - 0.2 for i in x], profile_only, width=0.4, color="#bbbbbb", label="profile only")
ax.bar([i + 0.2 for i in x], leave_one_out, width=0.4,
       color=["#2a7ab9" if abs(r - 1) <= 0.15 else "#d9822b" for r in leave_one_out],
       label="fitted to the 19 other runs")
ax.axhspan(0.85, 1.15, color="#cccccc", alpha=0.4, label="target ±15%", zorder=0)
ax.set_xticks(list(x))
ax.set_xticklabels([c.replace("\n", " ") for c in configs], fontsize=7, rotation=40, ha="right")
ax.set_ylabel("predicted / measured decode tok/s")
ax.set_title("Cost model: 20 configurations, synth models, H200 machine (20 of 20 within ±15% leave-one-out)", fontsize=10)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(HERE, "plan_predicted_vs_measured.png"), dpi=110)
plt.close(fig)

# A split FFN's RAM columns of ffn_down as a strided view of the mapping (before) and packed
# into a copy (after), same plan files, one call (2026-11-21, call 20, H200 machine, 16 threads,
# `strata bench -t 16 -c 1024 -p 0 -n 16 -r 2 --plan P`, 70B -n 8).
bars("split_ffn_packed.png", "Split FFNs: RAM columns of ffn_down packed (same plan files)",
     "decode tokens/s",
     ["7B 3G", "13B 4G", "13B 8G", "70B 12G", "70B 24G"],
     {"strided view (9d215fc)": [62.42, 25.79, 64.50, 4.74, 7.37], "packed copy": [65.32, 28.77, 80.45, 4.93, 8.02]},
     ["#999999", "#2a7ab9"])

# Llama-2-70B synth, --gpu-mem 6G, planner placement, H100 machine (2026-11-25, issue 17):
# prefill tok/s as each change landed (one build per call; the peer's figure is from the issue).
bars("prefill_70b_6g.png", "Llama-2-70B synth prefill at --gpu-mem 6G, H100 + 16 threads (tok/s)", "tokens/s",
     ["pp512", "pp2048 -b 2048"],
     {"before (CPU fallback)": [7.51, 7.45], "ship what fits": [14.73, 341.3],
      "+ 8-thread pinned copies": [372.9, 432.2], "llama.cpp -ngl 10 (H200, issue 17)": [95.4, None]},
     ["#bbbbbb", "#88aacc", "#2a7ab9", "#999999"])

# Llama-2-7B synth all on the GPU, H200, `strata bench -m 7b.gguf -p 0 -n 128 -r 3 [-c N]` and
# `-p 512 -n 128` (2026-11-28, sixth session, issue 20): decode before and after the attention's
# key splits followed the token's span (05d717e). llama.cpp: `llama-bench -ngl 99 -fa 1 -p 512
# -n 128 -r 3` on the same machine kind (call g7, before the fix, where Strata had 288.78).
bars("decode_7b_context.png", "7B decode on an H200 vs the context's capacity (tg128, tok/s)", "tokens/s",
     ["default -c", "-c 640", "-c 4096", "after pp512 (-c 640)"],
     {"splits for the capacity": [307.49, 286.67, 284.33, 288.88],
      "splits for the span (05d717e)": [307.49, 306.32, 305.10, 306.78],
      "llama.cpp -fa 1": [None, None, None, 288.01]},
     ["#bbbbbb", "#2a7ab9", "#999999"])

# qwen3-30b-a3b synth (Q4_K_M, 17.28 GiB), H200 + 16 threads, `strata bench -m moe.gguf -p 512
# -n 0 -r 3 [--gpu-mem 6G | -ot exps=CPU]` and `llama-bench ... -ngl 99 -fa 1 [-ncmoe 36 | -ot
# exps=CPU]` in the same call (2026-11-28, ninth session, call g21, issue 24).
bars("moe_prefill.png", "MoE (qwen3-30b-a3b shape) prefill pp512, H200 + 16 threads (tok/s)", "tokens/s",
     ["6 GiB VRAM\n(llama.cpp -ncmoe 36)", "experts in RAM\n(-ot exps=CPU)"],
     {"before: a wait per expert (a1ccd7e, eighth session)": [225.29, 212.57], "queued, ships every expert": [908.96, 803.20],
      "llama.cpp same call": [806.76, 622.48]},
     ["#bbbbbb", "#2a7ab9", "#999999"])

# MoE decode tg32, H200 + 16 threads, 2026-11-29 (tenth session, issue 24): `strata bench -m
# moe.gguf -p 0 -n 32 -r 3 [--gpu-mem 6G | -ot exps=CPU]` against `llama-bench ... -ngl 99 -fa 1
# [-ncmoe 36 | -ot exps=CPU]` in call g28 (6 GiB: the mean of two runs each); mixtral-8x7b at
# 6 GiB against `-ncmoe 26` in call g30 (Strata: the mean of 16.67 and 19.22).
bars("moe_decode.png", "MoE decode tg32 with GPU segments, H200 + 16 threads (tok/s)", "tokens/s",
     ["qwen3-30b-a3b\n6 GiB (-ncmoe 36)", "qwen3-30b-a3b\nexperts in RAM", "qwen3-30b-a3b\nall on the GPU",
      "mixtral-8x7b\n6 GiB (-ncmoe 26)"],
     {"Strata": [52.82, 46.87, 129.80, 17.95], "llama.cpp same call": [54.22, 39.03, 281.62, 13.05]},
     ["#2a7ab9", "#999999"])

# Eleventh session, qwen3-30b-a3b synth, H200 + 16 threads, tg32 tok/s. All on the GPU: call g33,
# HEAD (routed experts, one graph per step) against the tenth session's 70f1b14, alternated (two
# runs each, mean), llama-bench -ngl 99 -fa 1 in the same call. 6 GiB: call g36, the model with
# --routing-skew 0.5; the built-in placement (second, warm run) and the planner with the stats
# (mean of two runs) against -ncmoe 36 in the same call.
bars("moe_routed.png", "MoE decode tg32, routing on the GPU, H200 + 16 threads (tok/s)", "tokens/s",
     ["qwen3-30b-a3b\nall on the GPU", "skewed routing, 6 GiB\nbuilt-in placement", "skewed routing, 6 GiB\nplanned with the stats"],
     {"Strata before (70f1b14)": [130.94, None, None], "Strata now": [196.83, 57.99, 43.26],
      "llama.cpp same call": [281.50, 49.47, 49.47]},
     ["#9ecae1", "#2a7ab9", "#999999"])

# Twelfth session (H200, calls g42 and g45): decode against llama.cpp (-fa 1) in the same call,
# means of two alternating runs; before = a061af1, now = the fused GPU ops.
bars("fused_ops_decode.png", "Decode vs llama.cpp in the same call, H200 (ratio; 1 = llama.cpp)", "Strata / llama.cpp",
     ["7B tg128\nall GPU", "Gemma-3 270M tg128\nall GPU", "Qwen3-30B-A3B tg32\nall GPU", "70B tg32\nall GPU",
      "Qwen3-30B-A3B tg32\n6 GiB"],
     {"before (a061af1)": [1.08, 0.80, 0.73, None, 1.16], "now (fused ops)": [1.15, 1.01, 0.82, 1.15, 1.23],
      "llama.cpp": [1.0, 1.0, 1.0, 1.0, 1.0]},
     ["#bbbbbb", "#2a7ab9", "#999999"])

# Thirteenth session (H200, calls g47-g49): 7B all on the GPU against llama.cpp (-fa 1) in the
# same call, means of two alternating runs; pp512 "earlier" = main 4e56b29, d8192 "earlier" =
# the first vectorized q8_0 kernel (bench could not run past the training context before).
bars("attention_long_context.png", "7B vs llama.cpp in the same call, H200 (ratio; 1 = llama.cpp)", "Strata / llama.cpp",
     ["pp512", "tg128 @ d8192\nq8_0 KV", "tg128 @ d8192\nf16 KV"],
     {"earlier (pp512 g47, d8192 g48)": [0.88, 0.59, 0.66], "now (pp512 g48, d8192 g49)": [1.45, 0.82, 0.94],
      "llama.cpp": [1.0, 1.0, 1.0]},
     ["#bbbbbb", "#2a7ab9", "#999999"])

# Fourteenth session (H200): decode attention microbenchmarks, 8,192 cells, head dim 128;
# before = call g53's run of the old kernel, now = call g54 (committed code).
bars("decode_attention_registers.png", "Decode attention at 8,192 cells, H200 (us per attention; lower is better)",
     "us", ["q8_0\n32/32 heads", "f16\n32/32", "q8_0\n32/8", "f16\n32/8", "q8_0\n64/8", "f16\n64/8"],
     {"before (107-113 registers)": [109.1, 71.7, 67.8, 70.9, 111.7, 119.9],
      "now (<= 4 loads in flight)": [68.0, 51.5, 69.4, 65.6, 88.6, 85.0]},
     ["#bbbbbb", "#2a7ab9"])

# Fourteenth session (H200, calls g52 and g54): 7B tg128 at 8,192 cells against llama.cpp
# (-fa 1) in the same call; before = g52 (mean of two runs for q8_0), now = g54.
bars("decode_long_context.png", "7B tg128 @ d8192 vs llama.cpp in the same call, H200 (ratio; 1 = llama.cpp)",
     "Strata / llama.cpp", ["q8_0 KV", "f16 KV"],
     {"before (g52)": [0.82, 0.95], "now (g54)": [1.03, 1.07], "llama.cpp": [1.0, 1.0]},
     ["#bbbbbb", "#2a7ab9", "#999999"])

# Fifteenth session (H200, call g57): host time inside the CUDA runtime per 70B decode token
# (scripts/gpu-share.sh, 8 and 40 tokens after a discarded run), main at issue 20's filing
# (429c477) against this tree in the same call.
bars("gpu_share_70b.png", "70B decode: ms per token in the CUDA runtime, H200 host (lower is better)",
     "ms per token", ["6 GiB (token 418 / 382 ms)", "24 GiB (token 196 / 204 ms)"],
     {"then (429c477)": [13.28, 22.01], "now": [14.95, 15.12]},
     ["#bbbbbb", "#2a7ab9"])

# Sixteenth session (H200 host, 16 threads): --sparsity 0.5 (CATS, q8_0 neuron-major down)
# against dense in the same call: main at 13384ec (g60), row-group accumulate (g61), and the
# tiled copy + branch-free mask (g62; its 70B sparse run stopped at the split-FFN placement).
bars("sparse_16_threads.png", "--sparsity 0.5 / dense decode, H200 host, 16 threads (ratio; 1 = dense)",
     "sparse / dense", ["7B, CPU only", "70B, --gpu-mem 6G"],
     {"13384ec (g60)": [0.67, 0.65], "row groups (g61)": [0.85, 0.99], "+ mask (g62)": [0.92, None],
      "dense": [1.0, 1.0]},
     ["#bbbbbb", "#2a7ab9", "#1b4f7a", "#999999"])

# Eighteenth session (H200 host, 16 threads, g67): --sparsity 0.5 with the q8_0 copy in every
# layer against --sparse-down auto (ffn_down read whole where the copy does not pay), over dense
# in the same call (7B CPU: the mean of two rounds' ratios).
bars("sparse_down_auto.png", "--sparsity 0.5 / dense decode, H200 + 16 threads (ratio; 1 = dense)",
     "sparse / dense", ["7B, CPU only", "70B, --gpu-mem 6G", "7B, all on the GPU"],
     {"q8_0 copy everywhere": [1.01, 1.20, 0.84], "auto": [1.03, 1.13, 0.91], "dense": [1.0, 1.0, 1.0]},
     ["#2a7ab9", "#1b4f7a", "#999999"])

# Nineteenth session (H200 host, 16 threads): exact input-major Q4_K copies (--input-major).
# Microbenchmark (g68, kernels_cpu_bench, matrices from DRAM, wall time, prefetch 256 B ahead)
# against the dense Q4_K GEMV of the same matrix (bm_gather_matvec at 100%; not run at the down
# shapes), and in whole decode (op times: g68 for 7B, g70 for 70B; "dense" there is ffn_down read
# whole in the same call).
bars("input_major.png", "µs per product, half the inputs nonzero, H200 host, 16 threads (lower is better)",
     "µs", ["bench:\n7B gate", "bench:\n7B down", "bench:\n70B gate", "bench:\n70B down",
            "in decode:\n7B down", "in decode:\n70B down"],
     {"GGUF Q4_K read whole": [404, None, 1942, None, 351, 1537],
      "input-major, active columns": [321, 405, 1283, 1463, 706, 1869]},
     ["#999999", "#2a7ab9"])

# Batched decode of 8 sequences, Llama-2-7B synth all on an H200 (issue 21), aggregate tok/s:
# bench -np 1,8 and scripts/serve-throughput.py; g71/g75 before, g76 after (one call each);
# g83 the twenty-first session's final default (2 rows per warp at 8 columns, per-token
# attention splits with only the active ones launched eagerly, the o-proj quantization fused
# into the attention, programmatic dependent launch).
bars("batched_decode.png", "7B all on H200: aggregate decode tok/s, 8 sequences (1 sequence: ~335-361)",
     "tokens/s",
     ["bench -np 8", "serve, 8 streams"],
     {"before (per-sequence attention, dp4a)": [569, 446],
      "one launch per layer for KV and attention": [694, 557],
      "+ tensor-core GEMV (--no-batch-invariant)": [883, 669],
      "default after the 21st session (batch-invariant)": [941, 727]},
     ["#999999", "#7fb3d5", "#2a7ab9", "#1b4f72"], top=1200)

# Strata / llama.cpp, same call, H200 (twenty-second session, BENCHMARKS.md): llama.cpp built in
# the call from an August 2026 source (ggml 0.18.1). Ratios of the figures in the tables there:
# g85 and g89 (bench against llama-bench), g86 (serve-throughput.py against llama-server).
bars("peer_ratio_22.png", "Strata / llama.cpp in the same call, H200 (1.0 = parity)",
     "ratio", ["7B tg128", "7B pp512", "70B tg32\n(all GPU)", "7B tg128\n@ 8k, q8_0 KV", "270M tg128",
               "serve 7B\n8 streams", "serve 70B 6 GiB\n8 streams"],
     {"g85 / g86": [1.22, 1.50, 1.33, 1.10, 0.98, 1.08, 1.42],
      "g89": [1.26, 1.48, None, None, 0.95, None, None]},
     ["#7fb3d5", "#1b4f72"], top=1.8)

# Gemma 3 270M decode on an H200, kernel time per token by role (twenty-third session, g90):
# ncu's gpu__time_duration of 2,000 consecutive kernels of each engine's tg64 (serialized, cold
# caches: every kernel pays ~1-2 us more than inside the engine's graph). Strata ran 214
# kernels a token, llama.cpp 439.
bars("kernels_270m_23.png", "Gemma 3 270M decode, H200: kernel time per token by role (ncu, us)",
     "us per token", ["GEMV\n(all products)", "attention\n(decode + combine)", "RMSNorm", "RoPE, norms,\nKV store",
                      "activation,\nq8, scale"],
     {"Strata (214 kernels)": [423.2, 379.4, 206.9, 100.1, 75.9],
      "llama.cpp (439 kernels)": [496.3, 161.1, 428.4, 178.2, 308.2]},
     ["#2a7ab9", "#999999"], top=560)

# Decode attention of Gemma 3 270M's shape (4 query heads over 1 kv head of dim 256, f16 cache),
# microseconds per attention replayed in a step graph (twenty-fourth session): the split size in
# one call (g98), the in-kernel merge against the combine launch in another (g97).
bars("attention_270m_24.png", "Decode attention, Gemma 3 270M shape, H200 (us per attention; lower is better)",
     "us per attention", ["64 cells", "128 cells", "256 cells"],
     {"splits >= 32 keys (g98)": [17.39, 17.24, 17.56],
      "splits >= 16 keys (g98, kept)": [13.26, 13.60, 14.72],
      "16, merged in the kernel (g97)": [18.90, 20.41, 24.38],
      "16, combine launch (g97)": [14.41, 14.68, 15.47]},
     ["#999999", "#1b4f72", "#d98880", "#7fb3d5"], top=30)

# 70B synth (Q4_K_M) at --gpu-mem 6G, H200 host 16 threads: seconds per k-token pass (g105,
# median of three alternating rounds, -r 3 each).
bars("pass_cost_70b_25.png", "70B shape, 6 GiB GPU: one pass over k tokens, H200 host (s; lower is better)",
     "seconds per pass", ["k = 1", "2", "4", "8", "16"],
     {"84ab4fb": [0.321, 0.327, 0.608, 0.849, 1.379], "lane-order K-quant kernels": [0.339, 0.330, 0.536, 0.744, 1.070],
      "target at k = 8 (1.5 x k = 1)": [None, None, None, 0.51, None]},
     ["#999999", "#2a7ab9", "#d62728"], top=1.6)

# 16-thread small-batch GEMM, W [4096 -> 14336] (one 33 MB matrix: it stays in that host's 300 MB
# L3, as the twenty-sixth session found), H200 host: ms per call
# (medians; q4_K g102, q8_0 g107, base 84ab4fb in the same call).
bars("cpu_small_batch_25.png", "CPU products of m rows, 16 threads, H200 host (ms per call; lower is better)",
     "ms", ["q4_K m=1", "2", "4", "8", "q8_0 m=1", "2", "4", "8"],
     {"84ab4fb": [0.190, 0.238, 0.335, 0.578, 0.294, 0.410, 0.683, 1.41],
      "lane order / pairs": [0.189, 0.225, 0.289, 0.433, 0.306, 0.397, 0.585, 0.947]},
     ["#999999", "#2a7ab9"], top=1.6)

# The same 16-thread products with one W (cached in the 300 MB L3) and with W the next of a 1 GiB
# pool of copies (streamed from RAM), H200 host, g109 (twenty-sixth session): ms per call.
bars("cpu_l3_vs_ram_26.png", "CPU products of m rows, 16 threads, H200 host: W in L3 vs from RAM (ms)",
     "ms", ["q4_K m=1", "2", "4", "8", "q6_K m=1", "2", "4", "8"],
     {"one W (in L3)": [0.200, 0.231, 0.322, 0.557, 0.284, 0.314, 0.440, 0.733],
      "W from RAM": [0.292, 0.321, 0.372, 0.598, 0.502, 0.533, 0.597, 0.942]},
     ["#7fb3d5", "#1b4f72"], top=1.1)

# The dropped AMX experiment (twenty-sixth session): q4_K [4096 -> 14336], 2 threads of the dev
# box (a Xeon with AMX-INT8), W cached, ms per call: the AVX-512 lane kernels against the tile
# matmul (16 weight rows x up to 16 activation rows, one tdpbusd per 32-element sub-block).
bars("amx_q4k_26.png", "q4_K products of m rows, 2 Xeon threads: AVX-512 VNNI vs AMX tiles (ms; lower is better)",
     "ms", ["m = 1", "2", "4", "8", "16"],
     {"AVX-512 VNNI (kept)": [1.10, 1.21, 1.81, 2.68, 6.14],
      "AMX tiles (dropped)": [1.75, 1.88, 2.21, 2.45, 2.97]},
     ["#2a7ab9", "#d98880"], top=7)

# Two staging slots (twenty-seventh session, g114/g115, one machine): 70B at --gpu-mem 6G, prompt
# tok/s with one slot (STRATA_SHIP_OVERLAP=0) and with two, registered and staged RAM weights.
bars("ship_slots_27.png", "70B at 6 GiB on the H200: prompt tok/s, one staging slot vs two (higher is better)",
     "tok/s", ["pp64 registered", "pp512 registered", "pp512 staged", "pp2048 -b 2048"],
     {"one slot": [76.36, 549.70, 439.14, 1361.60],
      "two slots": [90.45, 647.38, 501.85, 1768.51],
      "llama.cpp -ngl 10": [None, 107.75, None, 97.34]},
     ["#999999", "#2a7ab9", "#d98880"], top=2100)

# The cost model's prefill against the measurement, g117 (one call; bench predicts each test at
# its own batch): tok/s.
bars("prefill_predicted_27.png", "70B prefill on the H200: measured vs predicted tok/s (g117, one call)",
     "tok/s", ["pp64", "pp128", "pp256", "pp512", "pp1024", "pp2048\n-b 2048", "staged\npp512", "2G pp512",
               "12G pp512", "disk\npp512"],
     {"measured": [93.67, 187.93, 375.46, 671.35, 1194.44, 1850.02, 488.22, 507.29, 764.81, 50.99],
      "predicted": [92.92, 182.16, 350.39, 650.84, 1138.26, 1640.21, 489.47, 532.72, 768.48, 45.19]},
     ["#1b4f72", "#7fb3d5"], top=2100)

# Twenty-eighth session, H200 machine (calls g121 / g122): 70B at 6 GiB, prompt tok/s of small
# batches on the CPU (--ship-min-batch 0), shipped (--ship-min-batch 2), the default before the
# staging room was kept below 64 tokens and after it (fresh machine), llama.cpp -ngl 10.
bars("ship_break_even_28.png", "70B at 6 GiB on the H200: small prompt batches, tok/s (higher is better)",
     "tokens/s", ["pp8", "pp16", "pp32", "pp48"],
     {"CPU (--ship-min-batch 0)": [10.57, 12.47, 12.94, 12.94],
      "shipped (--ship-min-batch 2)": [10.89, 22.12, 40.20, 63.06],
      "default before (no room)": [10.76, 11.87, 12.45, 12.82],
      "default now (break-even 12)": [9.89, 21.83, 40.58, 60.30],
      "llama.cpp -ngl 10": [4.13, None, 7.36, None]},
     ["#bbbbbb", "#2a7ab9", "#d9822b", "#1b9e77", "#999999"], top=75)

# qwen3-30b-a3b synth at 6 GiB, H200 (g121, one machine): Strata vs llama.cpp -ncmoe 36.
bars("moe_6g_28.png", "qwen3-30b-a3b synth at 6 GiB on the H200, tok/s (higher is better)", "tokens/s",
     ["pp512", "tg32 (x10)"],
     {"llama.cpp -ngl 99 -fa 1 -ncmoe 36": [676.14, 520.8], "Strata --gpu-mem 6G": [2167.28, 769.1]},
     ["#999999", "#2a7ab9"])

# Twenty-ninth session, H200 machine: the 70B at 6 GiB, CPU prompt passes (--ship-min-batch 0),
# measured tok/s over predicted: one 4096-wide rate (g121), the CPU prefill grid with the best
# single product (g127; g132 on one machine beside the next), and with 20 ms samples (g131, g132).
bars("prefill_grid_29.png", "70B at 6 GiB, CPU prompt passes: measured / predicted (1 = exact)",
     "measured / predicted", ["pp8", "pp16", "pp32", "pp48"],
     {"one 4096-wide rate (g121)": [0.66, 0.77, 0.80, 0.80],
      "grid, best product (g127)": [0.79, 0.97, 1.04, 1.04],
      "grid, best product (g132)": [0.92, 1.09, 1.16, 1.07],
      "grid, 20 ms samples (g131)": [0.99, 1.14, 1.14, 1.20],
      "grid, 20 ms samples (g132)": [0.86, 1.05, 1.08, 1.11]},
     ["#bbbbbb", "#7fb3d5", "#2a7ab9", "#f0b27a", "#d9822b"], top=1.6)

# mixtral-8x7b synth at 6 GiB, H200 (g126, one call): decode beside llama.cpp's best -ncmoe; and
# qwen3-30b-a3b with a routing skew of 0.5: the built-in placement against the plan made from
# routing statistics (two rounds each, measured and predicted).
bars("moe_29.png", "MoE at 6 GiB on the H200, decode tok/s (higher is better)", "tokens/s",
     ["mixtral-8x7b tg32", "qwen3-30b-a3b skew 0.5:\nbuilt-in placement", "qwen3-30b-a3b skew 0.5:\nplan from --stats"],
     {"llama.cpp -ncmoe 26": [12.35, None, None],
      "Strata, measured (round 1)": [16.68, 74.89, 86.44],
      "Strata, measured (round 2)": [None, 73.30, 91.96],
      "Strata, predicted": [None, 71.76, 97.02]},
     ["#999999", "#2a7ab9", "#1b4f72", "#d9822b"], top=115)

# Thirtieth session: IQ2_XS decode, tok/s. Dev box (2 EPYC cores, 7B IQ2_XS synth, CPU only,
# three alternating rounds, mean) beside llama.cpp; the H200 host's 70B IQ2_XS at 6 GiB (decode
# runs on the host's 16 cores) before and after the fused AVX2 kernel, with the predictions.
bars("iq2_xs_30.png", "IQ2_XS decode, tok/s (higher is better)", "tokens/s",
     ["7B, dev box CPU, 2 threads", "70B at 6 GiB, H200 host"],
     {"Strata before (generic i-quant path)": [0.86, 0.78],
      "Strata after (fused IQ2_XS AVX2)": [1.80, 1.67],
      "Strata predicted (after)": [None, 1.65],
      "llama.cpp (same file, same threads)": [2.29, None]},
     ["#bbbbbb", "#2a7ab9", "#d9822b", "#999999"], top=2.8)

# Thirty-first session: 7B i-quant synth decode on the H200 host's 16 cores, CPU only, two rounds
# in one call (mean), Strata beside llama.cpp on the same files, with Strata's prediction.
bars("iq_31.png", "7B i-quant decode on 16 Xeon cores, tok/s (higher is better)", "tokens/s",
     ["iq3_s", "iq2_s", "iq2_xs", "iq1_s", "iq1_m"],
     {"Strata (fused AVX2 kernels)": [14.10, 9.44, 12.49, 11.59, 8.71],
      "Strata predicted": [12.09, 9.84, 13.35, 13.99, 7.60],
      "llama.cpp (same file, same threads)": [9.92, 12.54, 14.72, 15.37, 14.81]},
     ["#2a7ab9", "#d9822b", "#999999"], top=19)

# Thirty-first session: 7B i-quant synth prompt passes (64 tokens) on the H200 host's 16 cores,
# CPU only, two rounds in one call (mean): before and after the decoded rows, beside llama.cpp.
bars("iq_prefill_31.png", "7B i-quant pp64 on 16 Xeon cores, tok/s (higher is better)", "tokens/s",
     ["iq3_s", "iq2_s", "iq2_xs", "iq1_m"],
     {"Strata before (8 rows per decode)": [33.0, 33.2, 34.3, 29.9],
      "Strata after (rows decoded once)": [61.5, 63.1, 60.8, 59.6],
      "llama.cpp (same file, same threads)": [125.5, 102.4, 126.4, 97.3]},
     ["#bbbbbb", "#2a7ab9", "#999999"], top=150)

# Thirty-second session: hot neurons on the Qwen2.5-0.5B shape at --gpu-mem 1000M (S = 0.25,
# Qwen's real skew), H200 machine, tok/s: CATS beside hot/cold before (every FFN kept off the GPU,
# g1) and after (whole FFNs placed first, g3; g4's two rounds), with the cost model's predictions.
bars("hot_neurons_32.png", "Qwen2.5-0.5B shape at 1000M, S = 0.25, decode tok/s (higher is better)", "tokens/s",
     ["before (g1)", "after (g3)", "after + device counts (g4, mean of 2)"],
     {"CATS, no hot neurons": [295.6, 277.4, 225.5],
      "hot/cold, cost model's counts": [153.9, 250.1, 196.0],
      "hot/cold predicted": [170.7, 212.7, 204.0]},
     ["#999999", "#2a7ab9", "#d9822b"], top=340)

# Thirty-third session (issue 20): the real Gemma 3 270M Q4_K_M file (the default model) beside
# llama.cpp, all on the H200, one call; means of three rounds (d1024: one round).
bars("gemma270m_real_33.png", "Gemma 3 270M Q4_K_M, all on the H200: decode tok/s (higher is better)", "tokens/s",
     ["tg128, real file", "tg128, synth of its shape", "tg128 after 1024 tokens, real file"],
     {"llama.cpp (CUDA, -fa 1)": [1007.7, 1007.4, 960.0], "Strata": [1162.5, 1157.9, 1076.6]},
     ["#999999", "#2a7ab9"], top=1400)

# Thirty-fourth session (issue 25): Qwen2.5-Coder 0.5B with 72.6 MiB of its 463 MiB on the H200
# (--gpu-mem 950M), code-edit prompt, 128 greedy tokens, two rounds each (same call).
bars("spec_qwen_gpu_34.png", "Qwen2.5-Coder 0.5B, most weights in RAM (H200 host): decode tok/s, code edit",
     "tokens/s", ["round 1", "round 2"],
     {"no speculation": [172.3, 161.8], "lookup, draft-max 4": [369.0, 342.6],
      "lookup, draft-max 8": [481.5, 416.9], "lookup, auto": [430.6, 469.4]},
     ["#999999", "#7fb3d5", "#2a7ab9", "#d9822b"], top=600)

# Thirty-sixth session (issue 21): the sampler's vectorized passes, old (A) and new (B) binaries
# alternating in one call (g6 rerun), mean of the two rounds; Gemma 3 270M shape (262,144 logits).
bars("sampler_36.png", "Gemma 3 270M shape on the H200: tok/s, old sampler vs vectorized (mean of 2 rounds)",
     "tokens/s", ["run, greedy", "run, default sampler", "serve, 1 stream", "serve, 8 streams"],
     {"before": [667.2, 533.6, 669.8, 959.6], "after": [941.0, 700.4, 830.8, 1413.3]},
     ["#999999", "#2a7ab9"], top=1700)

# Thirty-seventh session (issue 21): the dp4a GEMV at 8 tokens before (679d18b, call 2) and after
# (call 4), H200, same harness; one token for scale.
bars("gemv_8tok_37.png", "dp4a GEMV on the H200, 8 tokens: before vs after (us, lower is better)",
     "microseconds", ["q4_K 4096x11008", "q4_K 11008x4096", "q4_K 4096x4096", "q6_K 11008x4096", "q6_K 4096x32000"],
     {"1 token": [10.6, 10.8, 5.3, 17.0, 41.0], "8 tokens, before": [41.1, 34.2, 16.3, 51.4, 127.9],
      "8 tokens, after": [23.5, 23.0, 10.0, 31.0, 78.0]},
     ["#cccccc", "#999999", "#2a7ab9"], top=150)

# Thirty-eighth session (issue 21): the 7B on the H200, Strata before / after the batched logits
# on the device, beside llama.cpp in the same call (call 5; bench: the higher of two rounds).
bars("serve_38.png", "7B on the H200, 8 sequences (tok/s, same call)", "tokens/s",
     ["pure decode, 8 sequences", "server, 8 streams", "server, 1 stream"],
     {"llama.cpp": [1039.1, 868.6, 267.5], "Strata before": [1316.1, 900.7, 352.9],
      "Strata after": [1567.9, 1222.2, 353.5]},
     ["#999999", "#cccccc", "#2a7ab9"], top=1900)
