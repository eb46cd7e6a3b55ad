#!/usr/bin/env python3
"""Constrained output end to end on the default model: `strata run --json-schema` prints JSON
that Python's json parses and that matches the schema; `--grammar` output matches the same
language as a Python regular expression; `--grammar-file` reads a file; a broken grammar or
schema is one error line (exit 2) naming the flag and the position; `strata serve` answers
response_format json_schema / json_object with content that parses and matches.

usage: grammar_cli_test.py --strata BUILD/bin/strata
Needs $STRATA_DEFAULT_MODEL (exit 77 = skipped when unset or missing)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import urllib.request

from cli_util import SKIP, FAILURES, expect, strata_arg

SCHEMA = {"type": "object", "properties": {
    "color": {"enum": ["red", "green", "blue"]}, "count": {"type": "integer"},
    "ok": {"type": "boolean"}, "note": {"type": "null"}}, "required": ["color", "count", "ok"]}


def run(strata, model, prompt, *flags, seed="1"):
    p = subprocess.run([strata, "run", "-m", model, "-t", "2", "-n", "60", "--seed", seed, "-p", prompt, *flags],
                       capture_output=True, timeout=600)
    out = p.stdout.decode("utf-8", "replace")
    # run ends its output with one newline of its own.
    return p.returncode, out[:-1] if out.endswith("\n") else out, p.stderr.decode("utf-8", "replace")


def matches_schema(v):
    return (isinstance(v, dict) and set(SCHEMA["required"]) <= set(v) <= set(SCHEMA["properties"])
            and v["color"] in ("red", "green", "blue") and type(v["count"]) is int
            and type(v["ok"]) is bool and v.get("note", None) is None
            and list(v) == [k for k in SCHEMA["properties"] if k in v])


def serve_json_modes(strata, model):
    proc = subprocess.Popen([strata, "serve", "-m", model, "-t", "2", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline().decode()
        expect("listening on http://" in line, f"serve did not start: {line!r}")
        if "listening on http://" not in line:
            return
        url = line.split("listening on ")[1].strip().rstrip("/") + "/v1/chat/completions"
        formats = [{"type": "json_schema", "json_schema": {"name": "pet", "schema": SCHEMA}}, {"type": "json_object"}]
        for fmt in formats:
            body = {"messages": [{"role": "user", "content": "A pet, as JSON:"}], "max_tokens": 60,
                    "temperature": 0, "response_format": fmt}
            req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=600) as r:
                answer = json.loads(r.read())
            content = answer["choices"][0]["message"]["content"]
            finish = answer["choices"][0]["finish_reason"]
            try:
                value = json.loads(content)
            except ValueError:
                value = None
            ok = matches_schema(value) if fmt["type"] == "json_schema" else (isinstance(value, dict) or finish == "length")
            expect(ok, f"serve {fmt['type']}: {content!r} (finish {finish})")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)


def main():
    strata = strata_arg()
    model = os.environ.get("STRATA_DEFAULT_MODEL", "")
    if not model or not os.path.exists(model):
        print("skipped: $STRATA_DEFAULT_MODEL is not set")
        return SKIP

    for seed, temp in (("1", "0"), ("7", "0.9")):
        rc, out, err = run(strata, model, "A pet, as JSON:", "--json-schema", json.dumps(SCHEMA), "--temp", temp, seed=seed)
        try:
            value = json.loads(out)
        except ValueError:
            value = None
        expect(rc == 0 and "stop: end of generation" in err and matches_schema(value),
               f"--json-schema (temp {temp}): exit {rc}, output {out!r} must be JSON matching the schema; {err[-200:]!r}")

    gbnf = 'root ::= ("yes" | "no") ", " [a-z]{2,5} "."'
    rc, out, err = run(strata, model, "Is the sky blue? Answer:", "--grammar", gbnf, "--temp", "0.8")
    expect(rc == 0 and re.fullmatch(r"(yes|no), [a-z]{2,5}\.", out) is not None, f"--grammar: exit {rc}, {out!r}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "digits.gbnf")
        with open(path, "w", encoding="utf-8") as f:
            f.write("# three digits\nroot ::= d d d\nd ::= [0-9]\n")
        rc, out, err = run(strata, model, "Three digits:", "--grammar-file", path, "--temp", "0")
        expect(rc == 0 and re.fullmatch(r"[0-9]{3}", out) is not None, f"--grammar-file: exit {rc}, {out!r}")

    rc, out, err = run(strata, model, "x", "--grammar", 'root ::= "a" (b')
    expect(rc == 2 and "--grammar: line 1, column" in err and err.count("\n") == 1, f"bad grammar: exit {rc}, {err!r}")
    rc, out, err = run(strata, model, "x", "-j", '{"type": "object", "properties": {"a": {"type": "date"}}}')
    expect(rc == 2 and "--json-schema" in err and "/properties/a" in err, f"bad schema: exit {rc}, {err!r}")

    serve_json_modes(strata, model)
    print("grammar_cli_test:", "FAILED" if FAILURES else "ok")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
