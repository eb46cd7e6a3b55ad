#!/usr/bin/env python3
"""`strata plan` and the placement flags of `strata run` end to end on a synthetic model:
greedy output is the same whatever the placement (GPU = the fake device here), DISK weights are
streamed (both I/O modes), --verbose accounts for every tier, and bad budgets or plans give one
clear error line. The hardware profile the planner uses is measured quickly
(STRATA_QUICK_PROFILE=1) into a temporary cache (XDG_CACHE_HOME), re-measured when corrupt or on
--reprofile, and measured again at another thread count (-t) once; the planner and the
built-in placement give the same text; strata plan predicts speeds and explains them, strata
bench --fit prints the cost model's terms.

usage: offload_cli_test.py --strata BUILD/bin/strata"""
import json
import os
import re
import subprocess
import sys
import tempfile

from cli_util import FAILURES, expect, gpu_mem, strata_arg


ENV = dict(os.environ)


def run(strata, *args):
    p = subprocess.run([strata, *args], capture_output=True, timeout=300, env=ENV)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def expect_error(strata, args, fragment):
    rc, _, err = run(strata, *args)
    lines = err.strip().splitlines()
    expect(rc != 0 and rc < 128, f"{args}: exit {rc}, stderr {err!r}")
    expect(len(lines) == 1 and lines[0].startswith("strata: error: "), f"{args}: not one error line: {err!r}")
    expect(fragment.lower() in err.lower(), f"{args}: {fragment!r} not in {err!r}")


def accounting(err):
    """The --verbose lines as {first word: line}."""
    return {line.split(":")[0]: line for line in err.splitlines() if ":" in line}


def main():
    strata = strata_arg()
    # On a real disk (not tmpfs), so O_DIRECT streaming is exercised where the filesystem allows.
    with tempfile.TemporaryDirectory(dir=os.environ.get("STRATA_TEST_DISK_DIR", "/var/tmp")) as tmp:
        # The hardware profile: measured briefly, cached here rather than in the user's ~/.cache.
        ENV["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        ENV["STRATA_QUICK_PROFILE"] = "1"
        profile = os.path.join(tmp, "cache", "strata", "hardware.json")
        model = os.path.join(tmp, "tiny.gguf")
        other = os.path.join(tmp, "other.gguf")
        for path, seed in ((model, "42"), (other, "7")):
            rc, _, err = run(strata, "synth", "--preset", "tiny", "--seed", seed, "-o", path)
            expect(rc == 0, f"synth: {err}")
        gen = ["run", "-m", model, "-p", "the quick brown fox", "-n", "16", "--temp", "0", "-c", "128", "-t", "2"]

        rc, reference, err = run(strata, *gen, "--gpu", "none")
        expect(rc == 0 and reference.strip(), f"cpu run failed: {err}")
        expect("measuring this machine" in err and os.path.exists(profile), f"no profile measured: {err!r}")
        expect(json.load(open(profile))["host_read_gbs"] > 0, "profile without host_read_gbs")
        rc, _, err = run(strata, *gen, "--gpu", "none")
        expect(rc == 0 and "profil" not in err and "measuring" not in err, f"the cached profile is measured again: {err!r}")
        # Another thread count: the CPU rates at that count are measured once and kept beside
        # the profile's own.
        saved = json.load(open(profile))
        counted = {saved["cpu_threads"], *map(int, saved["cpu_at_threads"])}
        t = next(n for n in range(1, 9) if n not in counted)
        gen_t = [*gen[:gen.index("-t")], "-t", str(t)]
        rc, _, err = run(strata, *gen_t, "--gpu", "none")
        expect(rc == 0 and f"cpu at {t} threads" in err, f"-t {t}: rates not measured: {err!r}")
        rates = json.load(open(profile))["cpu_at_threads"].get(str(t), {})
        expect(rates.get("host_read_gbs", 0) > 0 and rates.get("cpu_gemv_gbs"), f"-t {t}: rates not saved: {rates}")
        rc, _, err = run(strata, *gen_t, "--gpu", "none")
        expect(rc == 0 and "profil" not in err, f"-t {t}: measured again: {err!r}")

        # All on the (fake) GPU: the same tokens.
        rc, out, err = run(strata, *gen, "--gpu", "fake", "--gpu-mem", "512M", "-v")
        expect(rc == 0 and out == reference, f"fake GPU output differs: {out!r} vs {reference!r} ({err})")
        acc = accounting(err)
        expect("vram (fake" in acc, f"no fake-device accounting: {err}")
        expect("weights" in acc and "gpu 0 B" not in acc.get("weights", ""), f"nothing on the GPU: {err}")

        # A model of a type the profile has no rate for (an i-quant): its GEMV is measured on the
        # CPU (with its prefill rate) and on the GPU once, kept in the profile, and not again.
        iq = os.path.join(tmp, "tiny-iq2.gguf")
        rc, _, err = run(strata, "synth", "--preset", "tiny", "--type", "iq2_xs", "-o", iq)
        expect(rc == 0, f"synth iq2_xs: {err}")
        def at_two_threads(p):  # the CPU rates a -t 2 run uses
            return p if p["cpu_threads"] == 2 else p["cpu_at_threads"].get("2", {})

        before = json.load(open(profile))
        expect("iq2_xs" not in at_two_threads(before).get("cpu_gemv_gbs", {}) and "iq2_xs" not in before["gpu_gemv_gbs"],
               f"the profile rates iq2_xs before any model of it: {before}")
        iq_plan = ["plan", "-m", iq, "--gpu", "fake", "--gpu-mem", "512M", "-c", "128", "-t", "2",
                   "-o", os.path.join(tmp, "iq.plan.json")]
        rc, _, err = run(strata, *iq_plan)
        expect(rc == 0 and "cpu gemv iq2_xs" in err and "gpu gemv iq2_xs" in err, f"iq2_xs not measured: {err!r}")
        after = json.load(open(profile))
        cpu_after = at_two_threads(after)
        for rates, key in ((cpu_after, "cpu_gemv_gbs"), (cpu_after, "cpu_prefill_type_gflops"), (after, "gpu_gemv_gbs")):
            expect(rates.get(key, {}).get("iq2_xs", 0) > 0, f"{key} has no iq2_xs rate: {rates.get(key)}")
        expect(cpu_after["cpu_gemv_gbs"]["q4_K"] == at_two_threads(before)["cpu_gemv_gbs"]["q4_K"],
               "the other rates were measured again")
        rc, _, err = run(strata, *iq_plan)
        expect(rc == 0 and "profil" not in err, f"iq2_xs measured again: {err!r}")
        # Each CPU rate keeps the revision of the kernel that measured it: a rate from an older
        # kernel (as an upgrade leaves behind) is measured again, alone; one whose revision is
        # absent (a profile written before revisions) counts as revision 1.
        revs = cpu_after.get("cpu_gemv_revisions", {})
        expect(revs.get("iq2_xs", 0) >= 2 and revs.get("q4_K") == 1, f"revisions not recorded: {revs}")
        stale = json.load(open(profile))
        stale_cpu = at_two_threads(stale)
        del stale_cpu["cpu_gemv_revisions"]["iq2_xs"]
        stale_cpu["cpu_gemv_gbs"]["iq2_xs"] = 0.001  # the old kernel's rate, whatever it was
        with open(profile, "w") as f:
            json.dump(stale, f)
        rc, _, err = run(strata, *iq_plan)
        expect(rc == 0 and f"cpu gemv iq2_xs (kernel revision {revs['iq2_xs']}, the profile's 1)" in err
               and "cpu gemv q4_K" not in err and "gpu gemv" not in err, f"the stale iq2_xs rate: {err!r}")
        fresh = at_two_threads(json.load(open(profile)))
        expect(fresh["cpu_gemv_gbs"]["iq2_xs"] > 0.001 and fresh["cpu_gemv_revisions"].get("iq2_xs") == revs["iq2_xs"]
               and fresh["cpu_gemv_gbs"]["q4_K"] == cpu_after["cpu_gemv_gbs"]["q4_K"], f"not re-measured alone: {fresh}")
        rc, _, err = run(strata, *iq_plan)
        expect(rc == 0 and "profil" not in err, f"iq2_xs measured again after its revision was kept: {err!r}")

        # A plan that streams FFNs from disk, read back by run, in both I/O modes.
        plan = os.path.join(tmp, "tiny.plan.json")
        rc, out, err = run(strata, "plan", "-m", model, "--gpu", "none", "--ram-mem", "1600K", "-c", "128", "-o", plan)
        expect(rc == 0, f"plan failed: {err}")
        expect("layers" in out and "DISK" in out, f"plan table: {out!r}")
        placement = json.load(open(plan))
        expect(placement["bytes"]["disk"] > 0, f"plan has nothing on disk: {placement['bytes']}")
        expect(all(t["tier"] != "disk" for t in placement["tensors"]
                   if t["name"] in ("token_embd.weight", "output.weight")), "a matrix the executor needs is on disk")
        for mode in ("direct", "mmap"):
            rc, out, err = run(strata, *gen, "--gpu", "none", "--ram-mem", "1600K", "--plan", plan, "--disk-io", mode, "-v")
            expect(rc == 0 and out == reference, f"disk ({mode}) output differs: {out!r} ({err})")
            weights = accounting(err).get("weights", "")
            expect(f"streamed {mode}" in weights, f"disk mode {mode} not used: {weights!r}")
            if mode == "direct":
                # The profile's queue, narrowed to this tiny model's staging ring.
                queue = re.search(r"streamed direct (\d+) x ", weights)
                expect(queue is not None and 1 <= int(queue.group(1)) <= max(1, json.load(open(profile))["disk_queue_depth"]),
                       f"no queue depth in {weights!r}")
        # The built-in placement with a small GPU and a small RAM budget: GPU, RAM and DISK at once.
        rc, out, err = run(strata, *gen, "--gpu", "fake", "--gpu-mem", gpu_mem(2), "--ram-mem", "1600K", "-v")
        expect(rc == 0 and out.strip(), f"three tiers failed: {err}")
        # RAM weights with a GPU: pinned by default where the backend can (the fake one cannot:
        # silent), and --pin-weights says so when nothing was registered; not both flags.
        expect("--pin-weights" not in err, f"default pinning spoke: {err!r}")
        rc, pinned, err = run(strata, *gen, "--gpu", "fake", "--gpu-mem", gpu_mem(2), "--ram-mem", "1600K",
                              "--pin-weights")
        expect(rc == 0 and pinned == out and "no RAM weights registered" in err, f"--pin-weights: {err!r}")
        rc, unpinned, err = run(strata, *gen, "--gpu", "fake", "--gpu-mem", gpu_mem(2), "--ram-mem", "1600K",
                                "--no-pin-weights")
        expect(rc == 0 and unpinned == out and "pin" not in err, f"--no-pin-weights: {err!r}")
        expect_error(strata, gen + ["--pin-weights", "--no-pin-weights"], "excludes")
        for bad in ("--pin-weights=0", "--no-pin-weights=1"):  # a value would be ignored: refused
            expect_error(strata, gen + [bad], "disallowed flag override")
        rc, _, err = run(strata, *gen, "--gpu", "none", "--pin-weights")
        expect(rc == 0 and "--pin-weights: no GPU" in err, f"--pin-weights without a GPU: {err!r}")

        # The planner (default) and the built-in placement: the same text, all on the fake GPU and
        # on three tiers (a split FFN sums its parts in another order: only that both run there).
        for budgets, same in ((["--gpu-mem", "512M"], True), (["--gpu-mem", gpu_mem(2), "--ram-mem", "1600K"], False)):
            texts = {}
            for placer in ("plan", "builtin"):
                rc, out, err = run(strata, *gen, "--gpu", "fake", *budgets, "--placement", placer, "-v")
                expect(rc == 0 and out.strip(), f"--placement {placer} {budgets} failed: {err}")
                source = accounting(err).get("placement", "")
                # Everything fits the 512M GPU: the planner's answer is "all on the GPU".
                wanted = ("all on the GPU" if same else "planner") if placer == "plan" else "built-in"
                expect(wanted in source, f"{placer}: {source!r}")
                texts[placer] = out
            if same:
                expect(texts["plan"] == texts["builtin"] == reference, f"placers differ {budgets}: {texts}")

        # A stats file that is not one: refused, naming the file (plan --stats reads it now).
        stats = os.path.join(tmp, "stats.bin")
        open(stats, "wb").write(b"\0")
        rc, out, err = run(strata, "plan", "-m", model, "--gpu", "fake", "--gpu-mem", gpu_mem(3), "-c", "128",
                           "-o", os.path.join(tmp, "refused.plan.json"), "--stats", stats)
        expect(rc != 0 and stats in err and "not valid JSON" in err, f"plan --stats garbage: rc {rc} {err!r}")
        # strata plan predicts speeds from the profile and explains its choices.
        explained = os.path.join(tmp, "explained.plan.json")
        rc, out, err = run(strata, "plan", "-m", model, "--gpu", "fake", "--gpu-mem", gpu_mem(3), "--ram-mem", "1600K",
                           "-c", "128", "-o", explained, "--explain")
        expect(rc == 0, f"plan --explain failed: {err}")
        predicted = json.load(open(explained))["predicted"]
        expect(predicted["decode_tok_s"] > 0 and predicted["prefill_tok_s"] > 0, f"no prediction: {predicted}")
        expect("predicted: prompt" in out and "attention+KV" in out and "FFN" in out and "decode per token" in out,
               f"plan --explain: {out!r}")
        # The disk's chosen configuration, in one line.
        hw = json.load(open(profile))
        disk_line = "O_DIRECT, %d x " % hw["disk_queue_depth"] if hw["disk_sweep"] else "disk: "
        expect(hw["disk_read_gbs"] > 0 and disk_line in out, f"plan --explain disk line ({hw['disk_sweep']}): {out!r}")
        rc, out, err = run(strata, "bench", "-m", model, "--gpu", "none", "-c", "128", "-t", "2",
                           "-p", "8", "-n", "4", "-r", "1", "--fit")
        expect(rc == 0 and "predicted" in out and "measured tg4" in out, f"bench --fit: {out!r} {err!r}")
        # -np: rows of several sequences decoded in one pass per step (on the fake device's budget).
        rc, out, err = run(strata, "bench", "-m", model, "--gpu", "fake", "-t", "2", "-p", "0", "-n", "4",
                           "-np", "1,3", "-r", "2", "-o", "jsonl", "--no-batch-invariant")
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        expect(rc == 0 and [(r["test"], r["n_parallel"]) for r in rows] == [("tg4", 1), ("tg4 x3", 3)]
               and all(r["avg_ts"] > 0 and len(r["samples_ts"]) == 2 for r in rows), f"bench -np: {out!r} {err!r}")
        expect_error(strata, ["bench", "-m", model, "--gpu", "none", "-p", "0", "-n", "4", "-np", "0"], "--parallel")
        expect_error(strata, ["bench", "-m", model, "--gpu", "none", "-p", "0", "-n", "4", "--no-batch-invariant=maybe"],
                     "--no-batch-invariant = maybe")
        # Each --fit run is recorded; later runs fit the cost model to them.
        rc, out, err = run(strata, "bench", "-m", model, "--gpu", "none", "-c", "128", "-t", "2",
                           "-p", "0", "-n", "4", "-r", "1", "--fit", "--ram-mem", "1600K")
        expect(rc == 0 and "recorded 1 run" in out and "fitted to 1 earlier" in out, f"calibration: {out!r} {err!r}")
        rc, out, err = run(strata, "plan", "-m", model, "--gpu", "none", "-c", "128", "-o", plan)
        expect(rc == 0 and "fitted to 2 measured run" in out, f"plan after calibration: {out!r} {err!r}")
        calibration = os.path.join(os.path.dirname(profile), "calibration.json")
        expect(len(json.load(open(calibration))["runs"]) == 2, "calibration file should hold 2 runs")
        # The report: both runs, each beside its leave-one-out prediction.
        rc, out, err = run(strata, "calibration", "--file", calibration)
        expect(rc == 0 and out.count("tg4") == 2 and "fitted to the others: " in out and "of 2 within" in out,
               f"calibration report: {out!r} {err!r}")
        expect_error(strata, ["calibration", "--file", os.path.join(tmp, "none.json")], "strata bench --fit")

        # The prompt batch from which RAM weights ship to the GPU is the cost model's break-even
        # on this profile: with the CPU's rates a thousandth of the measured ones, 8 tokens ship;
        # with them a thousand times higher, only 64+ do (the default, never raised).
        measured = open(profile).read()
        for cpu_scale, ships in ((1e-3, True), (1e3, False)):
            p = json.loads(measured)
            for key in ("cpu_prefill_gflops", "cpu_prefill_wide_gflops", "cpu_prefill_small_gflops",
                        "cpu_prefill_small_wide_gflops"):
                p[key] *= cpu_scale
            p["cpu_prefill_type_gflops"] = {k: v * cpu_scale for k, v in p["cpu_prefill_type_gflops"].items()}
            p["cpu_gemv_gbs"] = {k: v * cpu_scale for k, v in p["cpu_gemv_gbs"].items()}
            p["cpu_at_threads"] = {}
            with open(profile, "w") as f:
                json.dump(p, f)
            rc, out, err = run(strata, "bench", "-m", model, "--gpu", "fake", "--gpu-mem", "512M", "-ngl", "0",
                               "-c", "128", "-t", str(p["cpu_threads"]), "-p", "8", "-n", "0", "-r", "1", "-v")
            batch = re.search(r"prompt batches of (\d+)\+ tokens ship", err)
            expect(rc == 0 and batch is not None, f"break-even (cpu x {cpu_scale}): {err!r}")
            if batch is not None:
                expect((int(batch.group(1)) <= 8) == ships and (int(batch.group(1)) == 64) != ships,
                       f"cpu x {cpu_scale}: ships from {batch.group(1)} tokens")
            expect(("prefill shipped" in err) == ships, f"cpu x {cpu_scale}: pp8 shipped? {err!r}")
        # --ship-min-batch overrides the break-even either way (the profile above keeps 64):
        # 4 ships a pp8, 0 ships nothing.
        for flag, ships in (("4", True), ("0", False)):
            rc, out, err = run(strata, "bench", "-m", model, "--gpu", "fake", "--gpu-mem", "512M", "-ngl", "0",
                               "-c", "128", "-t", str(p["cpu_threads"]), "-p", "8", "-n", "0", "-r", "1", "-v",
                               "--ship-min-batch", flag)
            said = "prompt batches of 4+ tokens ship" if ships else "prompt batches never ship"
            expect(rc == 0 and said in err and ("prefill shipped" in err) == ships,
                   f"--ship-min-batch {flag}: {err!r}")
        expect_error(strata, [*gen, "--ship-min-batch", "-1"], "--ship-min-batch")
        with open(profile, "w") as f:
            f.write(measured)

        # A corrupt profile is measured again, with the reason; so is one on --reprofile.
        with open(profile, "w") as f:
            f.write('{"schema_version": 2, "cpu_name": ')
        rc, out, err = run(strata, "plan", "-m", model, "--gpu", "none", "-c", "128", "-o", plan)
        expect(rc == 0 and "re-profiling" in err and profile in err, f"corrupt profile: {err!r}")
        expect(json.load(open(profile))["host_read_gbs"] > 0, "corrupt profile not replaced")
        rc, out, err = run(strata, *gen, "--gpu", "none", "--reprofile")
        expect(rc == 0 and out == reference and "re-profiling: --reprofile" in err, f"--reprofile: {err!r}")
        rc, out, err = run(strata, *gen, "--gpu", "none")
        expect(rc == 0 and "profil" not in err and "measuring" not in err, f"the new profile is not used: {err!r}")

        # Bad input: one clear line each.
        expect_error(strata, [*gen, "--placement", "random"], "random")
        expect_error(strata, [*gen, "--gpu", "none", "--gpu-mem", "1G"], "--gpu none")
        expect_error(strata, [*gen, "--gpu", "none", "--ram-mem", "1K"], "needs at least")
        expect_error(strata, [*gen, "--gpu-mem", "lots"], "lots")
        expect_error(strata, [*gen, "--disk-io", "tape"], "tape")
        expect_error(strata, [*gen, "--gpu", "quantum"], "quantum")
        expect_error(strata, [*gen, "--plan", os.path.join(tmp, "missing.json")], "missing.json")
        other_gen = [g if g != model else other for g in gen]
        expect_error(strata, [*other_gen, "--gpu", "none", "--plan", plan], "another model")
        broken = os.path.join(tmp, "broken.json")
        with open(broken, "w") as f:
            f.write(open(plan).read()[:200])
        expect_error(strata, [*gen, "--gpu", "none", "--plan", broken], "broken.json")
        gpu_plan = os.path.join(tmp, "gpu.plan.json")
        rc, _, err = run(strata, "plan", "-m", model, "--gpu", "fake", "--gpu-mem", "512M", "-c", "128",
                           "--placement", "builtin", "-o", gpu_plan)
        expect(rc == 0, f"gpu plan failed: {err}")
        expect_error(strata, [*gen, "--gpu", "none", "--plan", gpu_plan], "no gpu")
        expect_error(strata, [*gen, "--gpu", "fake", "--gpu-mem", "1M", "--plan", gpu_plan], "--gpu-mem")
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
