#!/usr/bin/env python3
"""`strata serve` end to end on the default model, on a free loopback port.

--suite api: /health, /v1/models, the chat page, chat and text completions (whole and
streamed) through the `openai` Python package and plain HTTP, stop strings, usage counts,
logprobs in the chat and completion shapes, n > 1 choices, --spec lookup (same greedy text),
the same greedy text as `strata run` (an independent path), greedy output identical alone and
among concurrent requests, OpenAI-shaped 4xx errors naming the field (bad JSON, wrong types,
huge numbers, invalid UTF-8, oversized bodies, prompts beyond the context, a missing or wrong
API key), a client that disconnects freeing its slot, and SIGINT ending an in-flight stream
with an error event and the process with exit 0.
--suite abuse: 200 requests from 8 concurrent clients, 10% malformed and 10% disconnecting
mid-stream: no crash, every valid request answered with its expected greedy text, every
malformed one a 4xx with an error body, all slots idle again and memory near its idle level.

usage: serve_cli_test.py --strata BUILD/bin/strata --suite api|abuse
Needs $STRATA_DEFAULT_MODEL (exit 77 = skipped when unset or missing)."""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from cli_util import FAILURES, expect

KEY = "test-key-123"


class Server:
    """A `strata serve` process on port 0; the URL is read from its first stdout line."""

    def __init__(self, strata, model, *extra):
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [strata, "serve", "-m", model, "-t", "2", "--port", "0", "--api-key", KEY, *extra],
            stdout=subprocess.PIPE, stderr=self.err)
        line = [None]
        reader = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(300)
        text = (line[0] or b"").decode()
        if "listening on http://" not in text:
            self.proc.kill()
            raise RuntimeError(f"server did not start: stdout {text!r}, stderr {self.stderr()!r}")
        self.url = text.split("listening on ")[1].strip().rstrip("/")
        self.port = int(self.url.rsplit(":", 1)[1])

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self, sig=signal.SIGINT, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def http(url, method="GET", body=None, key=KEY, timeout=300, headers=None):
    """(status, body bytes) of one request; HTTP errors are answers too."""
    h = dict(headers or {})
    if key:
        h["Authorization"] = f"Bearer {key}"
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=body, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def error_of(status, body, want_status, param=None, fragment=None, what=""):
    """Checks an OpenAI-shaped error body; returns its error object."""
    try:
        err = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        expect(False, f"{what}: status {status}, body is not an OpenAI error: {body[:200]!r}")
        return {}
    expect(status == want_status, f"{what}: status {status}, expected {want_status} ({err})")
    expect(isinstance(err.get("message"), str) and isinstance(err.get("type"), str), f"{what}: error fields {err}")
    if param is not None:
        expect(err.get("param") == param, f"{what}: param {err.get('param')!r}, expected {param!r} ({err['message']})")
    if fragment is not None:
        expect(fragment in err.get("message", ""), f"{what}: {fragment!r} not in {err.get('message')!r}")
    return err


def sse_events(url, body, key=KEY):
    """The data payloads of a streamed response, [DONE] included, via plain HTTP."""
    h = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=h)
    events = []
    with urllib.request.urlopen(req, timeout=300) as r:
        expect(r.headers.get("Content-Type", "").startswith("text/event-stream"), "stream content type")
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                events.append(line[6:])
    return events


def complete(srv, prompt, max_tokens, **extra):
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **extra}
    status, data = http(srv.url + "/v1/completions", "POST", body)
    expect(status == 200, f"completion {prompt!r}: status {status} {data[:300]!r}")
    return json.loads(data) if status == 200 else None


def strata_run(strata, model, prompt, n):
    p = subprocess.run([strata, "run", "-m", model, "-t", "2", "-p", prompt, "-n", str(n), "--temp", "0"],
                       capture_output=True, timeout=600)
    err = p.stderr.decode()
    n_prompt = int(err.split("prompt: ")[1].split(" tokens")[0]) if "prompt: " in err else -1
    return p.stdout.decode()[:-1], n_prompt  # run ends the text with a newline


def disconnect_mid_stream(srv, prompt="Tell me a very long story", n_events=2):
    """Starts a long stream, reads a few events, and closes the socket."""
    body = json.dumps({"prompt": prompt, "max_tokens": 400, "stream": True}).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    seen = b""
    while seen.count(b"data: ") < n_events:
        chunk = s.recv(4096)
        if not chunk:
            break
        seen += chunk
    s.close()
    return seen.count(b"data: ") >= n_events


def oversized(srv, n_bytes):
    """(status, body) for a request that announces n_bytes of body and sends none: the server
    must refuse it from the headers alone (sending the body could race its early close)."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Authorization: Bearer {KEY}\r\nContent-Length: {n_bytes}\r\n\r\n".encode())
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head.startswith(b"HTTP/") else 0
    return status, body


def wait_idle(srv, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        status, data = http(srv.url + "/health", key=None)
        if status == 200 and json.loads(data)["slots_processing"] == 0 and json.loads(data)["requests_queued"] == 0:
            return True
        time.sleep(0.2)
    return False


def metric(srv, name):
    _, data = http(srv.url + "/metrics")
    for line in data.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def check_basics(srv, model):
    status, data = http(srv.url + "/health", key=None)
    expect(status == 200 and json.loads(data)["status"] == "ok", f"/health: {status} {data!r}")
    status, data = http(srv.url + "/v1/models")
    models = json.loads(data) if status == 200 else {}
    stem = os.path.splitext(os.path.basename(model))[0]
    expect(status == 200 and models.get("object") == "list" and models["data"][0]["id"] == stem,
           f"/v1/models: {status} {data!r}")
    status, data = http(srv.url + "/", key=None)
    page = data.decode("utf-8", "replace")
    expect(status == 200 and "/v1/chat/completions" in page and "<script>" in page and "Stop" in page,
           f"chat page: {status}, {len(page)} bytes")
    expect("http://" not in page and "https://" not in page, "chat page has external assets")
    # API key: missing, wrong, and the health check that needs none.
    error_of(*http(srv.url + "/v1/models", key=None), 401, what="no key")
    error_of(*http(srv.url + "/v1/completions", "POST", {"prompt": "x"}, key="wrong"), 401, what="wrong key")
    error_of(*http(srv.url + "/metrics", key=None), 401, what="metrics without key")
    status, data = http(srv.url + "/metrics")
    expect(status == 200 and b"strata_kv_cells_total" in data, f"/metrics: {status}")


def check_against_run(srv, strata, model):
    """Greedy completions equal `strata run`, whole and streamed, with the same usage counts."""
    prompt = "The capital of France is"
    want, n_prompt = strata_run(strata, model, prompt, 12)
    got = complete(srv, prompt, 12)
    if not got:
        return
    text = got["choices"][0]["text"]
    expect(text == want, f"completion {text!r} != strata run {want!r}")
    u = got["usage"]
    expect(u["prompt_tokens"] == n_prompt, f"usage prompt_tokens {u['prompt_tokens']}, strata run says {n_prompt}")
    expect(u["completion_tokens"] <= 12 and u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"],
           f"usage {u}")
    if got["choices"][0]["finish_reason"] == "length":
        expect(u["completion_tokens"] == 12, f"finish length with {u}")
    events = sse_events(srv.url + "/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0,
                                                      "stream": True, "stream_options": {"include_usage": True}})
    expect(events and events[-1] == "[DONE]", f"stream does not end with [DONE]: {events[-2:]}")
    chunks = [json.loads(e) for e in events if e != "[DONE]"]
    streamed = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
    expect(streamed == want, f"streamed {streamed!r} != {want!r}")
    counts = ("prompt_tokens", "completion_tokens", "total_tokens")
    su = chunks[-1].get("usage") or {}
    expect(all(su.get(k) == u[k] for k in counts), f"stream usage {su} != {u}")

    # Stop strings: the same text cut before the first occurrence.
    full = complete(srv, "Once upon a time", 24)
    long_want = full["choices"][0]["text"] if full else ""
    if expect(len(long_want) > 8, f"answer too short to cut: {long_want!r}"):
        stop = long_want[len(long_want) // 2:len(long_want) // 2 + 3]
        got = complete(srv, "Once upon a time", 24, stop=[stop, "\u2603never"])
        if got:
            expect(got["choices"][0]["text"] == long_want[:long_want.find(stop)],
                   f"stop {stop!r}: {got['choices'][0]['text']!r} from {long_want!r}")
            expect(got["choices"][0]["finish_reason"] == "stop", f"stop: finish {got['choices'][0]['finish_reason']}")
            expect(got["usage"]["completion_tokens"] < 24, f"stop: usage {got['usage']}")


def check_openai_client(srv):
    try:
        import openai
    except ImportError:
        expect(False, "the openai package is not installed (scripts/setup.sh installs it)")
        return
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key=KEY, max_retries=0, timeout=300)
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."}]
    r = client.chat.completions.create(model="any", messages=msgs, max_tokens=8, temperature=0)
    c = r.choices[0]
    expect(c.message.role == "assistant" and isinstance(c.message.content, str), f"chat message {c.message}")
    expect(c.finish_reason in ("stop", "length"), f"finish_reason {c.finish_reason}")
    expect(r.usage.completion_tokens <= 8 and r.usage.prompt_tokens > 5 and
           r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, f"usage {r.usage}")
    stream = client.chat.completions.create(model="any", messages=msgs, max_tokens=8, temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    parts, usage, finish = [], None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            parts.append(ch.delta.content or "")
            finish = ch.finish_reason or finish
    expect("".join(parts) == c.message.content, f"streamed chat {''.join(parts)!r} != {c.message.content!r}")
    expect(finish == c.finish_reason and usage is not None and usage.completion_tokens == r.usage.completion_tokens,
           f"stream finish {finish} usage {usage}")
    t = client.completions.create(model="any", prompt="One, two, three,", max_tokens=6, temperature=0)
    expect(t.choices[0].text and t.usage.completion_tokens <= 6, f"text completion {t}")
    ids = client.models.list()
    expect(len(ids.data) == 1, f"models {ids}")
    # Log-probabilities in both shapes: one entry per generated token; greedy picks the likeliest.
    lp = client.chat.completions.create(model="any", messages=msgs, max_tokens=5, temperature=0, logprobs=True,
                                        top_logprobs=3)
    content = lp.choices[0].logprobs.content if lp.choices[0].logprobs else []
    expect(len(content) == lp.usage.completion_tokens and content and
           all(len(t.top_logprobs) == 3 and t.logprob <= 0 and t.logprob == t.top_logprobs[0].logprob and
               (bytes(t.bytes) == t.token.encode() or "\ufffd" in t.token) for t in content), f"chat logprobs {lp.choices[0].logprobs}")
    tl = client.completions.create(model="any", prompt="One, two, three,", max_tokens=4, temperature=0, logprobs=2)
    l = tl.choices[0].logprobs
    expect(l is not None and len(l.tokens) == tl.usage.completion_tokens == len(l.token_logprobs) and
           all(len(top) <= 2 for top in l.top_logprobs) and l.text_offset[0] == 0, f"completion logprobs {l}")
    for bad, param in [({"max_tokens": -3}, "max_tokens"), ({"temperature": 9}, "temperature"), ({"n": 9}, "n")]:
        try:
            client.chat.completions.create(model="any", messages=msgs, **bad)
            expect(False, f"openai: {bad} was accepted")
        except openai.BadRequestError as e:
            expect(e.status_code == 400 and e.body and e.body.get("param") == param, f"openai {bad}: {e.body}")
    try:
        openai.OpenAI(base_url=srv.url + "/v1", api_key="nope", max_retries=0).models.list()
        expect(False, "openai: a wrong key was accepted")
    except openai.AuthenticationError as e:
        expect(e.status_code == 401, f"openai wrong key: {e}")


def check_errors(srv):
    u = srv.url + "/v1/completions"
    c = srv.url + "/v1/chat/completions"
    error_of(*http(u, "POST", b"{\"prompt\": "), 400, what="truncated JSON")
    error_of(*http(u, "POST", b"[1, 2]"), 400, what="array body")
    error_of(*http(u, "POST", b""), 400, what="empty body")
    error_of(*http(u, "POST", b"{\"prompt\": \"a\xff\xfeb\"}"), 400, fragment="UTF-8", what="invalid UTF-8")
    error_of(*http(u, "POST", b"[" * 5000 + b"]" * 5000), 400, what="deep nesting")
    error_of(*http(u, "POST", {"prompt": "x", "max_tokens": 1e30}), 400, "max_tokens", what="huge max_tokens")
    error_of(*http(u, "POST", b'{"prompt": "x", "max_tokens": 1e400}'), 400, what="max_tokens beyond a double")
    error_of(*http(u, "POST", {"prompt": "x", "max_tokens": "5"}), 400, "max_tokens", what="string max_tokens")
    error_of(*http(u, "POST", {"prompt": "x", "temperature": 1e300}), 400, "temperature", what="huge temperature")
    error_of(*http(u, "POST", {"prompt": "x", "seed": 2 ** 70}), 400, "seed", what="huge seed")
    error_of(*http(u, "POST", {"prompt": "x", "stop": 7}), 400, "stop", what="stop type")
    error_of(*http(u, "POST", {"prompt": [1, 10 ** 9]}), 400, "prompt[1]", what="token id outside the vocabulary")
    error_of(*http(c, "POST", {"messages": [{"role": "user"}]}), 400, "messages[0].content", what="no content")
    error_of(*http(c, "POST", {"messages": "hi"}), 400, "messages", what="messages type")
    error_of(*oversized(srv, 5 << 20), 413, what="5 MiB body")
    words = "word " * 700
    err = error_of(*http(u, "POST", {"prompt": words}), 400, "prompt", what="prompt beyond the context")
    expect("512" in err.get("message", ""), f"context error names the context: {err}")
    err = error_of(*http(u, "POST", {"prompt": "hi", "max_tokens": 600}), 400, "max_tokens", what="max_tokens > ctx")
    expect("600" in err.get("message", "") and "512" in err.get("message", ""), f"max_tokens error numbers: {err}")
    error_of(*http(srv.url + "/v2/nothing"), 404, what="unknown route")
    status, _ = http(srv.url + "/health", key=None)
    expect(status == 200, "server alive after the errors")


def check_concurrency(srv):
    """Greedy output is the same alone and among concurrent requests (streamed and not)."""
    prompts = ["The best way to learn a language is", "Water boils at", "My favourite food is", "In the year 2000,"]
    alone = {p: complete(srv, p, 10) for p in prompts}

    def streamed(p):
        events = sse_events(srv.url + "/v1/completions",
                            {"prompt": p, "max_tokens": 10, "temperature": 0, "stream": True})
        return "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1] if json.loads(e)["choices"])

    with ThreadPoolExecutor(6) as pool:
        whole = {p: pool.submit(complete, srv, p, 10) for p in prompts}
        stream = {p: pool.submit(streamed, p) for p in prompts[:2]}
        for p in prompts:
            got, want = whole[p].result(), alone[p]
            if got and want:
                expect(got["choices"][0]["text"] == want["choices"][0]["text"],
                       f"concurrent {p!r}: {got['choices'][0]['text']!r} != alone {want['choices'][0]['text']!r}")
        for p, f in stream.items():
            expect(alone[p] and f.result() == alone[p]["choices"][0]["text"], f"concurrent stream {p!r}: {f.result()!r}")


def check_choices(srv):
    """n > 1: n choices with their indexes (whole and streamed), each greedy one the text of an
    n = 1 request, completion tokens summed over the choices; n beyond --parallel is a 400."""
    alone = complete(srv, "Water boils at", 8)
    many = complete(srv, "Water boils at", 8, **{"n": 3})
    if alone and many:
        texts = [c["text"] for c in sorted(many["choices"], key=lambda c: c["index"])]
        expect([c["index"] for c in many["choices"]] == [0, 1, 2], f"n=3 indexes {many['choices']}")
        expect(texts == [alone["choices"][0]["text"]] * 3, f"n=3 greedy texts {texts} vs {alone['choices'][0]['text']!r}")
        expect(many["usage"]["completion_tokens"] == 3 * alone["usage"]["completion_tokens"] and
               many["usage"]["prompt_tokens"] == alone["usage"]["prompt_tokens"], f"n=3 usage {many['usage']}")
    msgs = [{"role": "user", "content": "Say hi."}]
    events = sse_events(srv.url + "/v1/chat/completions", {"messages": msgs, "max_tokens": 6, "temperature": 0,
                                                           "n": 2, "stream": True,
                                                           "stream_options": {"include_usage": True}})
    parts, finish, usage = {0: "", 1: ""}, {}, None
    for e in events[:-1]:
        j = json.loads(e)
        usage = j.get("usage") or usage
        for ch in j["choices"]:
            parts[ch["index"]] += ch["delta"].get("content") or ""
            finish[ch["index"]] = ch["finish_reason"] or finish.get(ch["index"])
    status, data = http(srv.url + "/v1/chat/completions", "POST", {"messages": msgs, "max_tokens": 6, "temperature": 0})
    one = json.loads(data)["choices"][0] if status == 200 else {}
    expect(parts == {0: one.get("message", {}).get("content"), 1: one.get("message", {}).get("content")} and
           set(finish) == {0, 1} and all(finish.values()), f"n=2 stream {parts} {finish} vs {one}")
    expect(usage is not None and usage["completion_tokens"] == 2 * json.loads(data)["usage"]["completion_tokens"],
           f"n=2 stream usage {usage}")
    status, data = http(srv.url + "/v1/completions", "POST", {"prompt": "x", "n": 5})
    error_of(status, data, 400, "n", "--parallel", "n beyond --parallel")


def check_spec(strata, model, srv):
    """--spec lookup: greedy answers of requests served alone equal the plain server's (whole,
    streamed, chat), drafts were checked and some kept (/metrics); a sampled request still runs."""
    spec = Server(strata, model, "--parallel", "2", "-c", "512", "--spec", "lookup", "--draft-max", "6")
    try:
        code = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n"
        for prompt in [code, "One, two, three, one, two, three, one, two,"]:
            want, got = complete(srv, prompt, 24), complete(spec, prompt, 24)
            if want and got:
                expect(got["choices"][0]["text"] == want["choices"][0]["text"] and got["usage"]["completion_tokens"] == want["usage"]["completion_tokens"],
                       f"spec {prompt!r}: {got['choices'][0]['text']!r} != {want['choices'][0]['text']!r}")
                events = sse_events(spec.url + "/v1/completions",
                                    {"prompt": prompt, "max_tokens": 24, "temperature": 0, "stream": True})
                text = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1] if json.loads(e)["choices"])
                expect(text == want["choices"][0]["text"], f"spec stream {prompt!r}: {text!r}")
        msgs = {"messages": [{"role": "user", "content": "Repeat: red green blue red green blue"}], "max_tokens": 20,
                "temperature": 0}
        a = http(srv.url + "/v1/chat/completions", "POST", msgs)
        b = http(spec.url + "/v1/chat/completions", "POST", msgs)
        expect(a[0] == b[0] == 200 and json.loads(a[1])["choices"] == json.loads(b[1])["choices"], f"spec chat {a} {b}")
        passes, accepted = metric(spec, "strata_spec_passes_total"), metric(spec, "strata_spec_accepted_tokens_total")
        print(f"spec lookup: {passes} passes, {accepted} draft tokens accepted")
        expect(passes and passes > 0 and accepted and accepted > 0, f"spec metrics: {passes} passes, {accepted} accepted")
        sampled = complete(spec, "The sky is", 8, temperature=0.9, seed=3)
        expect(sampled and sampled["usage"]["completion_tokens"] >= 1, f"spec sampled {sampled}")
    finally:
        spec.stop()


def check_disconnect(srv):
    before = metric(srv, "strata_requests_cancelled_total") or 0
    expect(disconnect_mid_stream(srv), "disconnect: no events before closing")
    expect(wait_idle(srv, 20), "the slot of a client that left is not free after 20 s")
    expect((metric(srv, "strata_requests_cancelled_total") or 0) > before, "cancelled request not counted")
    # A non-streamed request whose client leaves frees its slot as well.
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    body = json.dumps({"prompt": "Write a long essay", "max_tokens": 400}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    time.sleep(1.0)
    s.close()
    expect(wait_idle(srv, 20), "the slot of a non-streamed client that left is not free after 20 s")


def check_sigint(srv):
    """SIGINT during a stream: the stream ends with an error event, the process exits 0."""
    events = []

    def reader():
        try:
            events.extend(sse_events(srv.url + "/v1/completions",
                                     {"prompt": "A long story:", "max_tokens": 400, "stream": True,
                                      "ignore_eos": True}))  # in flight at SIGINT, not ended by an early EOS
        except Exception as e:  # noqa: BLE001 - any transport error is a failure below
            events.append(f"exception {e}")

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(1.5)
    start = time.time()
    rc = srv.stop(signal.SIGINT)
    t.join(30)
    expect(rc == 0, f"SIGINT: exit {rc}, stderr {srv.stderr()[-500:]!r}")
    expect(time.time() - start < 15, f"SIGINT: shutdown took {time.time() - start:.1f} s")
    last = json.loads(events[-1]) if events and events[-1].startswith("{") else {}
    expect("error" in last, f"SIGINT: the stream's last event is not an error: {events[-2:]}")


def check_flags(strata, model, srv):
    """Bad flags and a port in use: one error line, a non-zero exit, no crash."""
    for args, fragment in [(["--parallel", "0"], "--parallel"), (["--port", "70000"], "--port"),
                           (["-n", "0"], "-n 0"), (["--max-body", "lots"], "lots"),
                           (["--request-timeout", "-1"], "--request-timeout"),
                           (["--spec", "draft"], "--spec lookup only"), (["--spec", "often"], "often"),
                           (["--spec", "lookup", "--draft-max", "0"], "--draft-max"),
                           # The budgets hold --parallel KV caches: 64 x 32768 cells do not fit 1 GiB.
                           (["--parallel", "64", "-c", "32768", "--ram-mem", "1G", "--gpu", "none"],
                            "KV cache of 2097152 cells"),
                           (["--port", str(srv.port)], "cannot listen")]:
        p = subprocess.run([strata, "serve", "-m", model, "-t", "2", *args], capture_output=True, timeout=300)
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        expect(0 < p.returncode < 128 and err and err[-1].startswith("strata: error:") and fragment in err[-1],
               f"serve {args}: exit {p.returncode}, stderr {err[-2:]}")


def api_suite(strata, model):
    srv = Server(strata, model, "--parallel", "4", "-c", "512")
    try:
        check_flags(strata, model, srv)
        check_basics(srv, model)
        check_against_run(srv, strata, model)
        check_openai_client(srv)
        check_errors(srv)
        check_concurrency(srv)
        check_choices(srv)
        check_spec(strata, model, srv)
        check_disconnect(srv)
        check_sigint(srv)
    finally:
        srv.stop(signal.SIGKILL)


ABUSE_PROMPTS = ["Hello world, this is", "The sky is", "Three things I like:", "def add(a, b):",
                 "Paris is a city in", "Once upon a time"]
MALFORMED = [
    (b"{\"prompt\": ", "bad JSON"),
    (b"{\"prompt\": \"x\", \"max_tokens\": \"many\"}", "wrong type"),
    (b"{\"prompt\": \"x\", \"max_tokens\": 1e400}", "huge number"),
    (b"{\"prompt\": \"x\", \"temperature\": -1e308}", "huge negative number"),
    (b"{\"prompt\": \"\xc3\x28 bad\"}", "invalid UTF-8"),
    (b"{\"prompt\": {\"a\": 1}}", "prompt type"),
    (None, "10 MB body"),
]


def abuse_one(srv, i, rng, expected):
    """One abuse request; returns a failure text or None."""
    kind = rng.random()
    if kind < 0.1:
        body, what = MALFORMED[i % len(MALFORMED)]
        status, data = oversized(srv, 10 << 20) if body is None else http(srv.url + "/v1/completions", "POST", body)
        try:
            err = json.loads(data)["error"]
        except (ValueError, KeyError, TypeError):
            return f"{what}: status {status}, not an error body: {data[:100]!r}"
        return None if 400 <= status < 500 and err.get("message") else f"{what}: status {status} {err}"
    if kind < 0.2:
        return None if disconnect_mid_stream(srv, rng.choice(ABUSE_PROMPTS), 1 + i % 3) else "disconnect: no events"
    prompt = rng.choice(ABUSE_PROMPTS)
    body = {"prompt": prompt, "max_tokens": 4, "temperature": 0}
    if rng.random() < 0.5:
        events = sse_events(srv.url + "/v1/completions", {**body, "stream": True})
        if not events or events[-1] != "[DONE]":
            return f"stream of {prompt!r} did not end with [DONE]: {events[-2:]}"
        text = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1] if json.loads(e)["choices"])
    else:
        status, data = http(srv.url + "/v1/completions", "POST", body)
        if status != 200:
            return f"{prompt!r}: status {status} {data[:200]!r}"
        text = json.loads(data)["choices"][0]["text"]
    return None if text == expected[prompt] else f"{prompt!r}: {text!r} != alone {expected[prompt]!r}"


def abuse_round(srv, n, seed, expected):
    def task(i):
        try:
            return abuse_one(srv, i, random.Random(seed * 100003 + i), expected)
        except Exception as e:  # noqa: BLE001 - a transport error is a failure to report
            return f"request {i}: {type(e).__name__}: {e}"

    with ThreadPoolExecutor(8) as pool:
        return [f for f in pool.map(task, range(n)) if f]


def abuse_suite(strata, model):
    srv = Server(strata, model, "--parallel", "4", "-c", "512")
    try:
        expected = {}
        for p in ABUSE_PROMPTS:
            r = complete(srv, p, 4)
            expected[p] = r["choices"][0]["text"] if r else None
        start = time.time()
        failures = abuse_round(srv, 100, 1, expected)
        rss_first = srv.rss_kib()
        failures += abuse_round(srv, 100, 2, expected)
        elapsed = time.time() - start
        for f in failures[:10]:
            expect(False, f"abuse: {f}")
        expect(not failures, f"abuse: {len(failures)} of 200 requests went wrong")
        expect(srv.proc.poll() is None, f"abuse: the server died: {srv.stderr()[-800:]!r}")
        expect(wait_idle(srv, 30), "abuse: slots still busy 30 s after the last request")
        rss_second = srv.rss_kib()
        # The second round must not hold more than the first left behind (no leak per request).
        expect(rss_second - rss_first < 32 * 1024, f"abuse: RSS grew {rss_first} -> {rss_second} KiB in round two")
        print(f"abuse: 200 requests in {elapsed:.1f} s, RSS {rss_first} -> {rss_second} KiB, "
              f"generated {metric(srv, 'strata_generated_tokens_total')} tokens")
        expect(srv.stop(signal.SIGTERM) == 0, "abuse: SIGTERM exit code")
    finally:
        srv.stop(signal.SIGKILL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--suite", choices=["api", "abuse"], required=True)
    args = ap.parse_args()
    model = os.environ.get("STRATA_DEFAULT_MODEL")
    if not model or not os.path.exists(model):
        print("STRATA_DEFAULT_MODEL not set or missing: skipped")
        return 77
    (api_suite if args.suite == "api" else abuse_suite)(args.strata, model)
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
