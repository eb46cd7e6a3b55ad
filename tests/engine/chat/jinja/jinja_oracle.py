#!/usr/bin/env python3
# Oracle for Strata's Jinja interpreter: Python jinja2, set up as Hugging Face transformers'
# apply_chat_template does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop
# controls, tojson with ensure_ascii=False, raise_exception, strftime_now), renders
#   - every chat template under tests/engine/chat/templates (index.json names the source model)
#     over several conversations (with and without system, multi-turn, add_generation_prompt
#     true and false, text with quotes, newlines, blanks and non-ASCII), and
#   - the feature snippets in snippets.json,
#   - the installed instruct model's own template as `strata chat` renders it (jinja_render
#     --model; the template and bos/eos tokens read from the GGUF by gguf-py), when installed,
# and jinja_render (Strata) must give byte-identical text, or fail where jinja2 fails.
#   jinja_oracle.py JINJA_RENDER        exit 0 pass, 1 fail, 77 skip (no jinja2)
import json
import os
import subprocess
import sys
import time
from datetime import datetime

SKIP = 77
NOW = 1767225600 + 13 * 3600 + 5 * 60  # 2026-01-01 13:05 UTC: a fixed clock for strftime_now

try:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("jinja_oracle: jinja2 is not installed (pip install jinja2==3.1.6); skipped")
    sys.exit(SKIP)

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "..", "templates")


def hf_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.fromtimestamp(NOW).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def conversations():
    sys_msg = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}
    u1 = {"role": "user", "content": "Hello! What's 2+2?"}
    a1 = {"role": "assistant", "content": "2 + 2 = 4."}
    u2 = {"role": "user", "content": "  And \"3 x 3\"?\nShow it in\ttwo lines.  "}
    a2 = {"role": "assistant", "content": "3 × 3 = 9 — ok\n\nThat's it."}
    u3 = {"role": "user", "content": "Danke schön, ünïcödé 🙂 and <b>tags</b> & 'quotes'"}
    return [
        ([u1], True),
        ([sys_msg, u1], True),
        ([sys_msg, u1, a1, u2], True),
        ([sys_msg, u1, a1, u2], False),
        ([u1, a1], False),
        ([u1, a1, u2, a2, u3], True),
        ([sys_msg, u1, a1, u2, a2], False),
    ]


# A tool list as OpenAI-style clients send it, for the templates that render tools.
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city, in °C.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "description": "Forecast days", "default": 1},
        "units": {"type": "string", "enum": ["metric", "imperial"]}},
        "required": ["city"]}}}]


def cases():
    out = []
    with open(os.path.join(TEMPLATES, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    for entry in index:
        with open(os.path.join(TEMPLATES, entry["file"]), encoding="utf-8") as f:
            text = f.read()
        for i, (messages, gen) in enumerate(conversations()):
            tools = [{"tools": TOOLS}] if i in (1, 2) else []
            for extra in [{}] + entry.get("variants", []) + tools:
                ctx = {"messages": messages, "add_generation_prompt": gen,
                       "bos_token": entry["bos_token"], "eos_token": entry["eos_token"], **extra}
                out.append((f"{entry['file']} conversation {i} {extra or ''}", text, ctx))
    with open(os.path.join(HERE, "snippets.json"), encoding="utf-8") as f:
        for i, s in enumerate(json.load(f)):
            out.append((f"snippet {i}: {s['template'][:60]!r}", s["template"], s.get("context", {})))
    return out


def gguf_chat_template(path):
    import gguf  # noqa: PLC0415 - only this check needs it
    r = gguf.GGUFReader(path)
    def string(key):
        f = r.fields[key]
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    toks = r.fields["tokenizer.ggml.tokens"]
    def token(key):
        if key not in r.fields:
            return ""
        i = int(r.fields[key].parts[r.fields[key].data[0]][0])
        return bytes(toks.parts[toks.data[i]]).decode("utf-8")
    return string("tokenizer.chat_template"), token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")


def check_installed_model(render, env):
    script = os.path.join(HERE, "..", "..", "..", "..", "scripts", "second-model.py")
    try:
        path = subprocess.run([sys.executable, script], capture_output=True, text=True, check=True).stdout.strip()
    except subprocess.CalledProcessError:
        path = ""
    if not path or not os.path.exists(path):
        print("jinja_oracle: the instruct model is not installed; its template check skipped")
        return 0
    text, bos, eos = gguf_chat_template(path)
    convs = conversations()
    proc = subprocess.run([render, "--model", path], capture_output=True, check=False,
                          input=json.dumps([{"messages": m, "add_generation_prompt": g} for m, g in convs]).encode())
    if proc.returncode != 0:
        print(f"jinja_render --model failed: {proc.stderr.decode(errors='replace')}")
        return 1
    failures = 0
    for (messages, gen), have in zip(convs, json.loads(proc.stdout)):
        want = env.from_string(text).render(messages=messages, add_generation_prompt=gen,
                                            bos_token=bos, eos_token=eos)
        if have.get("ok") != want:
            failures += 1
            print(f"MISMATCH {os.path.basename(path)} chat prompt\n  jinja2: {want!r}\n  strata: {have!r}")
    print(f"jinja_oracle: {os.path.basename(path)}: {len(convs) - failures}/{len(convs)} chat prompts "
          f"identical ({json.loads(proc.stdout)[0]['template']})")
    return failures


def main():
    render = sys.argv[1]
    os.environ["TZ"] = "UTC"
    time.tzset()
    env = hf_environment()
    all_cases = cases()
    expected = []
    for _, text, ctx in all_cases:
        try:
            expected.append(("ok", env.from_string(text).render(**ctx)))
        except Exception as e:  # noqa: BLE001 - any jinja2 failure must be a failure for us too
            expected.append(("error", f"{type(e).__name__}: {e}"))
    payload = json.dumps([{"template": t, "context": c} for _, t, c in all_cases], ensure_ascii=False)
    proc = subprocess.run([render], input=payload.encode(), capture_output=True,
                          env={**os.environ, "JINJA_NOW": str(NOW)}, check=False)
    if proc.returncode != 0:
        print(f"jinja_render failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
        return 1
    got = json.loads(proc.stdout)
    failures = 0
    n_templates = len({name.split(' ')[0] for name, _, _ in all_cases if not name.startswith('snippet')})
    for (name, _, _), (kind, want), have in zip(all_cases, expected, got):
        if kind == "ok" and have.get("ok") == want:
            continue
        if kind == "error" and "error" in have:
            continue
        failures += 1
        print(f"MISMATCH {name}\n  jinja2: {kind}: {want!r}\n  strata: {have!r}")
    failures += check_installed_model(render, env)
    print(f"jinja_oracle: {len(all_cases) - failures}/{len(all_cases)} renderings identical "
          f"({n_templates} model templates, {sum(1 for k, _ in expected if k == 'error')} where both fail)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
