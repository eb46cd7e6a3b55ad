#!/usr/bin/env python3
# Oracle for Strata's GBNF matcher (grammar_check): what it accepts must agree with Python.
#   - regular grammars: Python's re.fullmatch of an equivalent regular expression, on random
#     strings over each grammar's alphabet (every string is checked both ways);
#   - JSON mode (any object): json.dumps of random objects (compact, spaced, indented) must be
#     accepted; a mutated text that json.loads refuses, or that is not an object, must be refused;
#   - JSON schemas: random instances must be accepted; whatever is accepted must parse with
#     json.loads and satisfy the schema (a validator for the supported subset, written here).
#   grammar_oracle.py GRAMMAR_CHECK      exit 0 pass, 1 fail
import json
import random
import re
import subprocess
import sys

rng = random.Random(1234)

REGULAR = [
    ('root ::= "a"+ "b"?', r"a+b?", "ab"),
    ('root ::= [a-c]{2,4} ("x" | "yz")*', r"[a-c]{2,4}(x|yz)*", "abcxyz"),
    ('root ::= [^0-9] [0-9]{3}', r"[^0-9][0-9]{3}", "a0 9é"),
    ('root ::= word (" " word)*\nword ::= [a-zA-Z]+   # words\n', r"[a-zA-Z]+( [a-zA-Z]+)*", "aZ 1"),
    ('root ::= "\\x41" . "\\u00e9"', r"A.é", "Aé\n!"),
    ('root ::= ( "ab"\n  | "c" )? "d"{1,}', r"(ab|c)?d+", "abcd"),
    ('root ::= x{0,2} y\nx ::= "(" | ")"\ny ::= "-"?', r"[()]{0,2}-?", "()-"),
    ('root ::= [\\]\\[-] [a-]', r"[\]\[-][a-]", "[]-a"),
    ('root ::= num ("," num){2}\nnum ::= "0" | [1-9] [0-9]*', r"(0|[1-9][0-9]*)(,(0|[1-9][0-9]*)){2}", "0159,"),
]


def random_strings(alphabet, n, max_len=8):
    out = set()
    while len(out) < n:
        out.add("".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len))))
    return sorted(out)


def random_value(depth=0):
    kind = rng.choice(["str", "int", "float", "bool", "null", "list", "obj"] if depth < 3 else ["str", "int", "bool"])
    if kind == "str":
        return "".join(rng.choice('ab "\\/\n\té🙂\u0001') for _ in range(rng.randint(0, 6)))
    if kind == "int":
        return rng.randint(-10**6, 10**6)
    if kind == "float":
        return round(rng.uniform(-1e3, 1e3), rng.randint(0, 6))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [random_value(depth + 1) for _ in range(rng.randint(0, 3))]
    return random_object(depth + 1)


def random_object(depth=0):
    return {"k" + str(rng.randint(0, 99)) + rng.choice(["", "é", '"']): random_value(depth) for _ in range(rng.randint(0, 3))}


def dumps(v):
    style = rng.choice(["compact", "default", "indent"])
    if style == "compact":
        return json.dumps(v, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
    if style == "default":
        return json.dumps(v, ensure_ascii=False)
    return json.dumps(v, indent=rng.randint(1, 4), ensure_ascii=False)


def mutate(text):
    i = rng.randrange(len(text) + 1)
    op = rng.choice(["delete", "insert", "replace"])
    ch = rng.choice('{}[]",:0-eE. \ntrue\\')
    if op == "delete" and text:
        return text[:max(0, i - 1)] + text[i:]
    if op == "insert":
        return text[:i] + ch + text[i:]
    return text[:max(0, i - 1)] + ch + text[i:]


SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}, "score": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b c"]}},
    "kind": {"enum": ["cat", 3, None]}, "ok": {"type": "boolean"}, "v": {"const": {"x": [1]}},
    "opt": {"type": ["integer", "null"]}}, "required": ["name", "age", "kind"]}
SCHEMA_OPTIONAL = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}}


def validate(v, s):
    if "const" in s:
        return v == s["const"] and type(v) is type(s["const"])
    if "enum" in s:
        return any(v == e and type(v) is type(e) for e in s["enum"])
    t = s.get("type")
    if isinstance(t, list):
        return any(validate(v, {**s, "type": one}) for one in t)
    checks = {"string": lambda: isinstance(v, str), "integer": lambda: type(v) is int,
              "number": lambda: type(v) in (int, float), "boolean": lambda: type(v) is bool,
              "null": lambda: v is None,
              "array": lambda: isinstance(v, list) and all(validate(x, s.get("items", {})) for x in v),
              "object": lambda: isinstance(v, dict) and set(v) <= set(s.get("properties", {}))
              and set(s.get("required", [])) <= set(v)
              and all(validate(v[k], s["properties"][k]) for k in v)
              and list(v) == [k for k in s["properties"] if k in v]}
    return checks[t]() if t else True


def instance(s):
    if "const" in s:
        return s["const"]
    if "enum" in s:
        return rng.choice(s["enum"])
    t = s["type"]
    if isinstance(t, list):
        t = rng.choice(t)
    if t == "object":
        return {k: instance(sub) for k, sub in s["properties"].items() if k in s.get("required", []) or rng.random() < 0.5}
    if t == "array":
        return [instance(s["items"]) for _ in range(rng.randint(0, 3))]
    return {"string": lambda: random_value() if False else "".join(rng.choice('xy "\\é') for _ in range(rng.randint(0, 5))),
            "integer": lambda: rng.randint(-999, 999), "number": lambda: rng.choice([rng.randint(-9, 9), round(rng.uniform(-99, 99), 3)]),
            "boolean": lambda: rng.random() < 0.5, "null": lambda: None}[t]()


def main():
    check = sys.argv[1]
    cases, expect = [], []
    for gbnf, regex, alphabet in REGULAR:
        inputs = random_strings(alphabet, 300)
        cases.append({"grammar": gbnf, "inputs": inputs})
        expect.append(("regular", gbnf, [re.fullmatch(regex, s, re.S) is not None for s in inputs]))
    valid = [dumps(random_object()) for _ in range(150)]
    mutants = [mutate(rng.choice(valid)) for _ in range(600)]
    cases.append({"json_object": True, "inputs": valid + mutants})
    expect.append(("json", None, valid))
    for schema in (SCHEMA, SCHEMA_OPTIONAL):
        good = [dumps(instance(schema)) for _ in range(150)]
        bad = [mutate(rng.choice(good)) for _ in range(600)] + [dumps(random_object()) for _ in range(100)]
        cases.append({"schema": schema, "inputs": good + bad})
        expect.append(("schema", schema, good))
    proc = subprocess.run([check], input=json.dumps(cases).encode(), capture_output=True, check=True)
    results = json.loads(proc.stdout)
    failures = 0
    n_checked = 0
    for case, (kind, what, want), got in zip(cases, expect, results):
        if "error" in got:
            print(f"FAIL {kind} {what!r}: {got['error']}")
            failures += 1
            continue
        for i, (s, accepted) in enumerate(zip(case["inputs"], got["accepted"])):
            n_checked += 1
            if kind == "regular":
                ok = accepted == want[i]
            elif i < len(want):
                ok = accepted  # valid text must be accepted
            else:
                ok = True
                if accepted:  # accepted text must be valid
                    try:
                        v = json.loads(s)
                        ok = isinstance(v, dict) if kind == "json" else validate(v, what)
                    except ValueError:
                        ok = False
            if not ok:
                failures += 1
                print(f"FAIL {kind} {what if kind == 'regular' else ''!s}: {s!r} accepted={accepted}")
    n_rejected = sum(1 for g in results if "accepted" in g for a in g["accepted"] if not a)
    print(f"grammar_oracle: {n_checked - failures}/{n_checked} strings agree with Python ({n_rejected} rejected)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
