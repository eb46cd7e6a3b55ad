#!/usr/bin/env python3
"""`strata run --spec lookup|draft|self` end to end on the default model: on a code-edit prompt that
repeats its input, greedy text with prompt-lookup speculation (with the model itself as its
draft, -md, and with its self-draft: only the FFNs on the fake GPU) equals the text without it,
and -v reports accepted draft tokens; --spec self where nothing or everything is on the GPU, and
in serve, is refused with the reason; --draft-max auto
runs; sampling runs speculation (rejection sampling), a grammar with sampling turns it off, said
on stderr; bad --spec / --draft-max / --draft-min / -md values give one clear error line (a
draft of another vocabulary names both files); chat and bench take the same flags.

usage: speculate_cli_test.py --strata BUILD/bin/strata
Needs $STRATA_DEFAULT_MODEL (exit 77 = skipped when unset)."""
import os
import re
import subprocess
import sys

from cli_util import SKIP, default_model, expect, finish, strata_arg


PROMPT = """Rename the variable `x` to `count` in this function.

def total(x):
    s = 0
    for i in range(x):
        if i % 2 == 0:
            s += i * x
    return s

Here is the function with `x` renamed to `count`:

def total("""


def run(strata, *args):
    p = subprocess.run([strata, *args], capture_output=True, timeout=600)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def expect_error(strata, args, fragment):
    rc, _, err = run(strata, *args)
    lines = err.strip().splitlines()
    expect(rc != 0 and rc < 128, f"{args}: exit {rc} (crash or success), stderr {err!r}")
    expect(len(lines) == 1 and lines[0].startswith("strata: error: "), f"{args}: not one error line: {err!r}")
    expect(fragment in err, f"{args}: {fragment!r} not in {err!r}")


def main():
    strata = strata_arg()
    model = default_model()
    if not model:
        return SKIP
    m = ["-m", model, "-t", "2", "--no-escape"]
    run(strata, "run", *m, "-n", "0", "-p", "Hello")  # a first run may measure the hardware

    gen = ["run", *m, "-p", PROMPT, "-n", "48", "--temp", "0", "--ignore-eos"]
    rc, plain, err = run(strata, *gen)
    expect(rc == 0, f"plain run failed: {err}")
    for draft_max in ["8", "3"]:
        rc, spec, err = run(strata, *gen, "--spec", "lookup", "--draft-max", draft_max, "-v")
        expect(rc == 0, f"--spec lookup run failed: {err}")
        expect(spec == plain, f"--draft-max {draft_max}: text differs:\n{plain!r}\nvs\n{spec!r}")
        stats = re.search(r"speculation \(lookup\): (\d+) passes, (\d+) proposed, (\d+) accepted \| ([\d.]+) accepted",
                          err)
        expect(stats is not None, f"-v printed no speculation line: {err!r}")
        if stats:
            passes, proposed, accepted = (int(stats.group(i)) for i in (1, 2, 3))
            expect(passes > 0 and 0 < accepted <= proposed,
                   f"--draft-max {draft_max}: {passes} passes, {proposed} proposed, {accepted} accepted")
            print(f"draft-max {draft_max}: {passes} passes, {proposed} proposed, {accepted} accepted")

    # The model as its own draft: the same greedy text, every draft kept (same logits on the CPU).
    rc, spec, err = run(strata, *gen, "-md", model, "--draft-max", "4", "-v")
    expect(rc == 0 and spec == plain, f"-md itself: rc {rc}, text differs:\n{plain!r}\nvs\n{spec!r}\n{err}")
    stats = re.search(r"speculation \(draft\): (\d+) passes, (\d+) proposed, (\d+) accepted", err)
    expect(stats is not None and int(stats.group(3)) > 0, f"-md: no accepted drafts: {err!r}")
    rc, spec, err = run(strata, *gen, "--spec", "lookup", "--draft-max", "auto", "-v")
    expect(rc == 0 and spec == plain, f"--draft-max auto: rc {rc}, text differs: {spec!r} {err}")

    # Sampling: rejection sampling keeps the target's distribution, so speculation runs.
    rc, _, err = run(strata, "run", *m, "-p", PROMPT, "-n", "8", "--temp", "0.8", "--spec", "lookup", "-v")
    expect(rc == 0 and "speculation (lookup)" in err, f"--temp 0.8 --spec lookup: rc {rc}: {err!r}")
    # A grammar cannot follow rejected drafts when sampling: said on stderr, then plain decoding.
    rc, _, err = run(strata, "run", *m, "-p", PROMPT, "-n", "4", "--temp", "0.8", "--spec", "lookup",
                     "--grammar", "root ::= [a-z ]+", "-v")
    expect(rc == 0, f"--grammar --spec lookup failed: {err}")
    expect("needs greedy sampling" in err and "without speculation" in err, f"no fallback note: {err!r}")
    expect("speculation (lookup)" not in err, f"speculation ran with a sampled grammar: {err!r}")

    rc, out, err = run(strata, "chat", *m[:-1], "-st", "-p", "Say hi", "-n", "8", "--temp", "0", "--spec", "lookup")
    expect(rc == 0, f"chat --spec lookup: rc {rc}: {err!r}")
    rc, out, err = run(strata, "bench", "-m", model, "-t", "2", "-p", "0", "-n", "8", "-r", "1", "--spec", "lookup")
    expect(rc == 0 and "gen8 spec lookup" in out and "| gen8 |" in out, f"bench --spec: rc {rc}: {out!r} {err!r}")

    # The self-draft: the target with only its FFN work on the (fake) GPU drafts for itself; the
    # greedy text is the same run's without speculation, and -v counts its passes.
    fake = [*gen, "--gpu", "fake", "-ngl", "12"]
    rc, plain_fake, err = run(strata, *fake)
    expect(rc == 0, f"--gpu fake -ngl 12 failed: {err}")
    rc, spec, err = run(strata, *fake, "--spec", "self", "--draft-max", "4", "-v")
    expect(rc == 0 and spec == plain_fake, f"--spec self: rc {rc}, text differs:\n{plain_fake!r}\nvs\n{spec!r}\n{err}")
    stats = re.search(r"speculation \(self\): (\d+) passes, (\d+) proposed, (\d+) accepted", err)
    expect(stats is not None and int(stats.group(1)) > 0, f"--spec self: no speculation line: {err!r}")
    if stats:
        print(f"self-draft -ngl 12: {stats.group(1)} passes, {stats.group(2)} proposed, {stats.group(3)} accepted")
    rc, out, err = run(strata, "bench", "-m", model, "-t", "2", "-p", "0", "-n", "8", "-r", "1", "--gpu", "fake",
                       "-ngl", "12", "--spec", "self")
    expect(rc == 0 and "gen8 spec self" in out, f"bench --spec self: rc {rc}: {out!r} {err!r}")
    expect_error(strata, ["run", *m, "-p", "hi", "-n", "2", "--gpu", "none", "--spec", "self"], "keeps none there")
    expect_error(strata, ["run", *m, "-p", "hi", "-n", "2", "--gpu", "fake", "--spec", "self"], "the target itself")
    expect_error(strata, ["serve", "-m", model, "--spec", "self"], "lookup only")

    second = os.environ.get("STRATA_SECOND_MODEL")
    if second and os.path.exists(second):
        rc, _, err = run(strata, *gen, "-md", second)
        vocab = "cannot draft for" in err and second in err and model in err
        expect(rc != 0 and vocab, f"-md of another vocabulary: rc {rc}: {err!r}")

    base = ["run", *m, "-p", "hi", "-n", "2"]
    expect_error(strata, [*base, "--spec", "draft"], "--spec draft needs a draft model")
    expect_error(strata, [*base, "--spec", "lookup", "-md", model], "drafts for --spec draft")
    expect_error(strata, [*base, "--spec", "lookup", "--draft-max", "many"], "--draft-max")
    expect_error(strata, [*base, "--spec", "lookup", "--draft-max", "0"], "--draft-max")
    expect_error(strata, [*base, "--spec", "lookup", "--draft-max", "65"], "--draft-max")
    expect_error(strata, [*base, "--spec", "lookup", "--draft-max", "40", "-b", "32"], "--draft-max must be in 1..31")
    expect_error(strata, [*base, "--spec", "lookup", "--draft-max", "4", "--draft-min", "5"],
                 "--draft-min must be in 0..4")

    return finish()


if __name__ == "__main__":
    sys.exit(main())
