#!/usr/bin/env python3
"""`strata serve` tool calling through the `openai` package.

On the second model (Qwen2.5-Coder 0.5B, whose Jinja template renders tools itself) and the
default model (Gemma 3 270M, no template: the server's generic tool prompt):
- a forced tool_choice (one function, or "required") answers with tool_calls whose arguments
  validate against the function's JSON schema (checked with the jsonschema package), finish_reason
  "tool_calls", content null; streamed, the tool_calls deltas add up to the same call;
- tool_choice "auto": whatever the model does, no valid call is left in content, a call
  names a given tool with a JSON-object argument string, and stream and whole answers agree;
- a history with an assistant tool call and a `role: tool` result is answered; its prompt is
  the one Python's jinja2 renders from the GGUF's template (same prompt token count);
- malformed tools / tool_choice / tool messages: 400 naming the field.

usage: serve_tools_test.py --strata BUILD/bin/strata [--model default|second|both]
Exit 77 (skipped) when no model is found."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_cli_test as base  # noqa: E402  (Server, expect, FAILURES)

expect = base.expect
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather of a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The current time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
TOOLS = [WEATHER, TIME]
ASK = [{"role": "user", "content": "What is the weather like in Paris right now?"}]


def schema_of(name):
    return next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)


def valid_call(call, names, what):
    import jsonschema
    ok = expect(call.type == "function" and call.id.startswith("call_") and call.function.name in names,
                f"{what}: call {call}")
    try:
        args = json.loads(call.function.arguments)
    except ValueError:
        return expect(False, f"{what}: arguments are not JSON: {call.function.arguments!r}")
    try:
        jsonschema.validate(args, schema_of(call.function.name))
    except jsonschema.ValidationError as e:
        return expect(False, f"{what}: arguments {args} break the schema: {e.message}")
    return ok


def streamed(client, **kw):
    """(content, {index: [id, name, arguments]}, finish_reason) of a streamed chat."""
    content, calls, finish = "", {}, None
    for chunk in client.chat.completions.create(stream=True, **kw):
        for ch in chunk.choices:
            content += ch.delta.content or ""
            for tc in ch.delta.tool_calls or []:
                entry = calls.setdefault(tc.index, ["", "", ""])
                entry[0] += tc.id or ""
                entry[1] += (tc.function.name or "") if tc.function else ""
                entry[2] += (tc.function.arguments or "") if tc.function else ""
            finish = ch.finish_reason or finish
    return content, calls, finish


def check_forced(client, tag):
    for choice, names in [({"type": "function", "function": {"name": "get_weather"}}, ["get_weather"]),
                          ("required", ["get_weather", "get_time"])]:
        what = f"{tag} forced {choice}"
        kw = dict(model="any", messages=ASK, tools=TOOLS, tool_choice=choice, temperature=0, max_tokens=96)
        r = client.chat.completions.create(**kw)
        c = r.choices[0]
        expect(c.finish_reason == "tool_calls", f"{what}: finish_reason {c.finish_reason} ({c.message})")
        expect(c.message.content is None, f"{what}: content {c.message.content!r}")
        calls = c.message.tool_calls or []
        if expect(len(calls) == 1, f"{what}: {len(calls)} calls"):
            valid_call(calls[0], names, what)
        content, scalls, finish = streamed(client, **kw)
        expect(finish == "tool_calls" and content == "", f"{what} stream: finish {finish}, content {content!r}")
        if calls and expect(len(scalls) == 1, f"{what} stream: calls {scalls}"):
            sid, name, args = scalls[0]
            expect(sid.startswith("call_") and name == calls[0].function.name and
                   json.loads(args) == json.loads(calls[0].function.arguments),
                   f"{what} stream: {scalls[0]} vs {calls[0]}")


def tool_blocks(text):
    """The texts inside <tool_call> ... </tool_call> (or to the end) blocks."""
    return [part.split("</tool_call>")[0] for part in text.split("<tool_call>")[1:]]


def is_call(block):
    """Whether a block is a call of one of TOOLS with an object of arguments (the server's rule)."""
    try:
        j = json.loads(block)
    except ValueError:
        return False
    return (isinstance(j, dict) and j.get("name") in ("get_weather", "get_time") and
            isinstance(j.get("arguments", {}), (dict, str)))


def check_auto(client, tag):
    kw = dict(model="any", messages=ASK, tools=TOOLS, temperature=0, max_tokens=96)
    r = client.chat.completions.create(**kw)
    c = r.choices[0]
    calls = c.message.tool_calls or []
    print(f"{tag} auto: finish {c.finish_reason}, {len(calls)} calls, content {c.message.content!r}")
    expect(not any(is_call(block) for block in tool_blocks(c.message.content or "")),
           f"{tag} auto: a valid call left in content {c.message.content!r}")
    if calls:
        expect(c.finish_reason == "tool_calls", f"{tag} auto: finish {c.finish_reason}")
        for call in calls:
            expect(call.function.name in ("get_weather", "get_time"), f"{tag} auto: call {call}")
            expect(isinstance(json.loads(call.function.arguments), dict), f"{tag} auto: arguments {call}")
    else:
        expect(c.finish_reason in ("stop", "length"), f"{tag} auto: finish {c.finish_reason}")
    content, scalls, finish = streamed(client, **kw)
    expect(content == (c.message.content or "") and finish == c.finish_reason and len(scalls) == len(calls) and
           all(scalls[i][1] == calls[i].function.name and json.loads(scalls[i][2]) == json.loads(calls[i].function.arguments)
               for i in range(len(calls))),
           f"{tag} auto stream: {content!r} {scalls} {finish} vs {c.message.content!r} {calls} {c.finish_reason}")
    none = client.chat.completions.create(model="any", messages=ASK, tools=TOOLS, tool_choice="none", temperature=0,
                                          max_tokens=16)
    expect(not none.choices[0].message.tool_calls and none.choices[0].finish_reason in ("stop", "length"),
           f"{tag} tool_choice none: {none.choices[0]}")


HISTORY = ASK + [
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_7", "type": "function", "function": {
        "name": "get_weather", "arguments": json.dumps({"city": "Paris", "unit": "celsius"})}}]},
    {"role": "tool", "tool_call_id": "call_7", "content": json.dumps({"temperature": 21, "sky": "sunny"})}]


def reference_prompt(model, messages, tools):
    """The prompt text Hugging Face's apply_chat_template gives, with Python's jinja2."""
    import gguf
    import jinja2
    reader = gguf.GGUFReader(model)
    field = reader.fields.get("tokenizer.chat_template")
    if field is None:
        return None
    source = bytes(field.parts[field.data[0]]).decode()
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda v, indent=None: json.dumps(v, ensure_ascii=False, indent=indent)
    hist = []
    for m in messages:
        m = dict(m)
        if m.get("content") is None:
            m["content"] = ""
        if "tool_calls" in m:
            m["tool_calls"] = [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                               for c in m["tool_calls"]]
        hist.append(m)
    return env.from_string(source).render(messages=hist, tools=tools, add_generation_prompt=True)


def n_tokens(strata, model, text):
    """Tokens of a text with control tokens parsed (strata tokenize -f, not the server's path)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([strata, "tokenize", "-m", model, "-f", f.name, "--json"], capture_output=True, timeout=300)
    finally:
        os.unlink(f.name)
    return json.loads(p.stdout)["n_tokens"] if p.returncode == 0 else None


def check_history(client, strata, model, tag):
    r = client.chat.completions.create(model="any", messages=HISTORY, tools=TOOLS, temperature=0, max_tokens=24)
    c = r.choices[0]
    expect(isinstance(c.message.content, str) or c.message.tool_calls, f"{tag} history: {c}")
    text = reference_prompt(model, HISTORY, TOOLS)
    if text is not None:
        n = n_tokens(strata, model, text)
        expect(n is not None and r.usage.prompt_tokens == n,
               f"{tag} history: {r.usage.prompt_tokens} prompt tokens, jinja2's rendering has {n}")


def check_errors(client, openai):
    bad_cases = [
        ({"tools": [{"type": "function"}]}, "tools[0].function"),
        ({"tools": [{"type": "function", "function": {"name": "a b"}}]}, "tools[0].function.name"),
        ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "date"}}}]},
         "tools[0].function.parameters"),
        ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
        ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice.function.name"),
        ({"tool_choice": "required"}, "tool_choice"),
    ]
    for extra, param in bad_cases:
        try:
            client.chat.completions.create(model="any", messages=ASK, max_tokens=4, **extra)
            expect(False, f"tools error: {extra} was accepted")
        except openai.BadRequestError as e:
            expect(e.status_code == 400 and e.body and e.body.get("param") == param, f"tools error {extra}: {e.body}")
    bad_history = [{"role": "tool", "content": "21"}]
    try:
        client.chat.completions.create(model="any", messages=ASK + bad_history, max_tokens=4)
        expect(False, "a tool message without tool_call_id was accepted")
    except openai.BadRequestError as e:
        expect(e.body and e.body.get("param") == "messages[1].tool_call_id", f"tool message error: {e.body}")


def run_model(strata, model, tag, with_errors):
    import openai
    srv = base.Server(strata, model, "--parallel", "2", "-c", "1024")
    try:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key=base.KEY, max_retries=0, timeout=600)
        check_forced(client, tag)
        check_auto(client, tag)
        check_history(client, strata, model, tag)
        if with_errors:
            check_errors(client, openai)
    finally:
        srv.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--model", choices=["default", "second", "both"], default="both")
    args = ap.parse_args()
    try:
        import jsonschema  # noqa: F401
        import openai  # noqa: F401
    except ImportError as e:
        print(f"{e}: skipped")
        return 77
    models = []
    if args.model in ("second", "both"):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "second-model.py")], capture_output=True)
        path = p.stdout.decode().strip()
        if p.returncode == 0 and os.path.exists(path):
            models.append((path, "qwen"))
    if args.model in ("default", "both"):
        path = os.environ.get("STRATA_DEFAULT_MODEL", "")
        if os.path.exists(path):
            models.append((path, "gemma"))
    if not models:
        print("no model found: skipped")
        return 77
    for i, (path, tag) in enumerate(models):
        run_model(args.strata, path, tag, with_errors=i == 0)
    print(f"{len(base.FAILURES)} failures")
    return 1 if base.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
