#!/usr/bin/env python3
"""Models by name end to end, with no network: a local HTTP server in the Hugging Face hub's URL
layout (GET /api/models/OWNER/REPO for the file list, /OWNER/REPO/resolve/main/FILE redirecting
to the bytes, HTTP Range served) and a mode that cuts the connection midway. Checks `strata pull`
(resume with Range, never a partial file under the final name, sizes, 404 and missing quant
errors listing the repository's GGUF files, HTTPS with certificate checks), `-hf`, `strata list` over fake Hugging Face cache,
Ollama (hostile manifests) and Strata folders, `-m NAME` on run and inspect, a name that matches
nothing (lists the models and the places looked), and progress: none when stderr is a pipe, a
bar when it is a terminal (a pty).

usage: pull_cli_test.py --strata BUILD/bin/strata"""
import fcntl
import hashlib
import http.server
import json
import os
import pty
import select
import ssl
import subprocess
import sys
import tempfile
import threading

from cli_util import FAILURES, expect, strata_arg

ENV = dict(os.environ)


def run(strata, *args, env=None):
    p = subprocess.run([strata, *args], capture_output=True, timeout=300, env=env or ENV)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Hub:
    """What the server serves: repositories of files (bytes), and how to misbehave."""
    def __init__(self):
        self.repos = {}        # "owner/repo" -> {file: bytes}
        self.cut_next = 0      # cut this many file transfers after half their bytes
        self.ranges = []       # Range headers of file requests, in order
        self.ignore_range = False  # answer a Range request with the whole file (200)
        self.lie_size = {}     # file -> size the file list claims


class Handler(http.server.BaseHTTPRequestHandler):
    hub = None

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.startswith("/api/models/"):
            repo = path[len("/api/models/"):]
            files = self.hub.repos.get(repo)
            if files is None:
                return self.send_json(404, {"error": "Repository not found"})
            return self.send_json(200, {"id": repo, "siblings": [
                {"rfilename": name, "size": self.hub.lie_size.get(name, len(data))} for name, data in files.items()]})
        parts = path.strip("/").split("/")
        if len(parts) >= 5 and parts[2:4] == ["resolve", "main"]:
            # The hub redirects a file to its storage; so does this one.
            self.send_response(302)
            self.send_header("Location", "/storage/" + "/".join(parts[:2] + parts[4:]))
            self.send_header("Content-Length", "0")
            return self.end_headers()
        if parts[0] == "storage":
            repo, name = "/".join(parts[1:3]), "/".join(parts[3:])
            data = self.hub.repos.get(repo, {}).get(name)
            if data is None:
                return self.send_json(404, {"error": "Entry not found"})
            return self.send_file(data)
        self.send_json(404, {"error": "no such route"})

    def send_file(self, data):
        rng = self.headers.get("Range")
        self.hub.ranges.append(rng)
        start = 0
        if rng and not self.hub.ignore_range:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                return self.end_headers()
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.hub.cut_next > 0:
            self.hub.cut_next -= 1
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


def start_server(hub):
    Handler.hub = hub
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_pull_and_resume(strata, hub, models):
    hub.cut_next = 1
    rc, out, err = run(strata, "pull", "test/Tiny-GGUF:Q8_0")
    final = os.path.join(models, "test", "Tiny-GGUF", "tiny-Q8_0.gguf")
    expect(rc != 0, f"a cut transfer fails: rc={rc} {err}")
    expect("run the same command again to resume" in err, f"the error says how to resume: {err}")
    expect(not os.path.exists(final), "no file under the final name after a cut")
    part = final + ".part"
    total = len(hub.repos["test/Tiny-GGUF"]["tiny-Q8_0.gguf"])
    kept = os.path.getsize(part) if os.path.exists(part) else 0
    expect(0 < kept < total, f"the part file keeps the bytes received: {kept} of {total}")

    rc, out, err = run(strata, "pull", "test/Tiny-GGUF:q8_0")
    expect(rc == 0, f"pull resumes: {err}")
    expect(hub.ranges[-1] == f"bytes={kept}-", f"the second request asks from byte {kept}: {hub.ranges[-1]}")
    expect("resumed at" in out and "test/Tiny-GGUF:Q8_0" in out, f"pull says the name and the resume: {out}")
    expect(os.path.exists(final) and not os.path.exists(part), "complete file renamed, part gone")
    expect(sha(final) == hashlib.sha256(hub.repos["test/Tiny-GGUF"]["tiny-Q8_0.gguf"]).hexdigest(),
           "the pulled file equals the served bytes")
    n = len(hub.ranges)
    rc, out, _ = run(strata, "pull", "test/Tiny-GGUF:Q8_0")
    expect(rc == 0 and "already here" in out and len(hub.ranges) == n, f"a second pull downloads nothing: {out}")

    rc, _, err = run(strata, "pull", "test/Tiny-GGUF:IQ2_XS")
    expect(rc != 0 and "no GGUF file of type IQ2_XS" in err and "tiny-Q8_0.gguf, tiny-F16.gguf" in err,
           f"a missing quant lists the GGUF files: {err}")
    rc, _, err = run(strata, "pull", "nobody/Nothing-GGUF")
    expect(rc != 0 and "no repository nobody/Nothing-GGUF" in err and "404" in err, f"404: {err}")
    rc, _, err = run(strata, "pull", "../../etc:Q4")
    expect(rc == 2 and "owner/repo:QUANT" in err, f"a bad reference is a usage error: rc={rc} {err}")
    return final


def check_hostile_server(strata, hub, models):
    """A server that ignores Range restarts the file from byte 0; a size unlike the file list's is
    refused and leaves no file; a part file locked by another process is left alone."""
    data = hub.repos["test/Tiny-GGUF"]["tiny-Q8_0.gguf"]
    hub.repos["test/Norange-GGUF"] = {"norange-Q8_0.gguf": data}
    hub.cut_next = 1
    rc, _, _ = run(strata, "pull", "test/Norange-GGUF:Q8_0")
    expect(rc != 0, "the cut transfer fails")
    hub.ignore_range = True
    rc, out, err = run(strata, "pull", "test/Norange-GGUF:Q8_0")
    hub.ignore_range = False
    final = os.path.join(models, "test", "Norange-GGUF", "norange-Q8_0.gguf")
    expect(rc == 0 and os.path.exists(final) and open(final, "rb").read() == data,
           f"a 200 answer to a Range request restarts the file: {err}")
    hub.repos["test/Liar-GGUF"] = {"liar-Q8_0.gguf": data}
    hub.lie_size["liar-Q8_0.gguf"] = len(data) + 100
    rc, _, err = run(strata, "pull", "test/Liar-GGUF:Q8_0")
    liar = os.path.join(models, "test", "Liar-GGUF", "liar-Q8_0.gguf")
    expect(rc != 0 and "file list says" in err and not os.path.exists(liar), f"a size unlike the list's: {err}")
    hub.repos["test/Locked-GGUF"] = {"locked-Q8_0.gguf": data}
    part = os.path.join(models, "test", "Locked-GGUF", "locked-Q8_0.gguf.part")
    os.makedirs(os.path.dirname(part))
    with open(part, "wb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        rc, _, err = run(strata, "pull", "test/Locked-GGUF:Q8_0")
    expect(rc != 0 and "another process is downloading" in err, f"a locked part file: {err}")
    rc, _, err = run(strata, "inspect", "-m", final, "-hf", "test/Tiny-GGUF:Q8_0")
    expect(rc == 2 and "not both" in err, f"-m and -hf together: rc={rc} {err}")


def check_names(strata, tmp, final):
    rc, out, err = run(strata, "inspect", "-m", "test/Tiny-GGUF:Q8_0", "--json")
    expect(rc == 0 and json.loads(out or "{}").get("general", {}).get("architecture") == "llama", f"inspect -m NAME: {err}")
    rc, out, err = run(strata, "run", "-m", "Tiny-GGUF:Q8_0", "-p", "hello", "-n", "2", "--temp", "0")
    expect(rc == 0, f"run -m NAME (owner left out): {err}")
    rc, out, err = run(strata, "inspect", "-hf", "test/Tiny-GGUF:F16")
    expect(rc == 0 and "pulled test/Tiny-GGUF:F16" in err and "llama" in out, f"-hf pulls then inspects: {err}")
    rc, out, err = run(strata, "run", "-m", "no-such-model", "-p", "x")
    expect(rc == 2 and "no model file or model named 'no-such-model'" in err, f"unknown name: rc={rc} {err}")
    expect("test/Tiny-GGUF:Q8_0" in err and "looked in:" in err and "ollama" in err,
           f"unknown name lists models and places: {err}")
    rc, out, err = run(strata, "inspect", "-m", "test/Tiny-GGUF")
    expect(rc == 2 and "matches 2 models" in err and "test/Tiny-GGUF:F16" in err, f"ambiguous name: {err}")

    # Other stores: an Ollama model, hostile manifests, a Hugging Face cache snapshot.
    ol = ENV["OLLAMA_MODELS"]
    digest = hashlib.sha256(open(final, "rb").read()).hexdigest()
    os.makedirs(os.path.join(ol, "blobs"), exist_ok=True)
    os.link(final, os.path.join(ol, "blobs", "sha256-" + digest))
    lib = os.path.join(ol, "manifests", "registry.ollama.ai", "library")
    manifests = {
        "tiny/q8": {"layers": [{"mediaType": "application/vnd.ollama.image.model",
                                "digest": "sha256:" + digest, "size": os.path.getsize(final)}]},
        "evil/latest": {"layers": [{"mediaType": "application/vnd.ollama.image.model",
                                    "digest": "sha256:../../../../../etc/passwd"}]},
        "gone/latest": {"layers": [{"mediaType": "application/vnd.ollama.image.model",
                                    "digest": "sha256:" + "b" * 64}]},
    }
    for name, m in manifests.items():
        os.makedirs(os.path.join(lib, os.path.dirname(name)), exist_ok=True)
        with open(os.path.join(lib, name), "w") as f:
            json.dump(m, f)
    with open(os.path.join(lib, "evil", "broken"), "w") as f:
        f.write("{not json")
    # The hub's cache layout: snapshots/<rev>/FILE -> ../../blobs/<hash>, refs/main = rev.
    repo = os.path.join(ENV["HF_HUB_CACHE"], "models--hf--Cached-GGUF")
    os.makedirs(os.path.join(repo, "snapshots", "rev1"))
    os.makedirs(os.path.join(repo, "blobs"))
    os.makedirs(os.path.join(repo, "refs"))
    os.link(final, os.path.join(repo, "blobs", digest))
    os.symlink(os.path.join("..", "..", "blobs", digest), os.path.join(repo, "snapshots", "rev1", "cached-Q8_0.gguf"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write("rev1")
    os.symlink(final, os.path.join(repo, "snapshots", "rev1", "escape-Q4_0.gguf"))
    rc, out, err = run(strata, "list")
    expect(rc == 0, f"list with hostile manifests exits 0: {err}")
    for name in ("tiny:q8", "hf/Cached-GGUF:Q8_0", "test/Tiny-GGUF:Q8_0", "test/Tiny-GGUF:F16"):
        expect(name in out, f"list shows {name}: {out}")
    expect("evil:latest" in err and "64 hex digits" in err and "evil:broken" in err and "gone:latest" in err,
           f"list warns per bad entry: {err}")
    expect("links outside its repository folder" in err and "hf/Cached-GGUF:Q4_0" not in out,
           f"a cache link out of its repository is refused: {err}")
    expect("NAME" in out and "ARCH" in out and "llama" in out and "Q8_0" in out, f"list columns: {out}")
    rc, out, err = run(strata, "list", "--json")
    listed = json.loads(out) if rc == 0 else {"models": []}
    names = {m["name"]: m for m in listed["models"]}
    expect(names.get("tiny:q8", {}).get("source") == "ollama", f"list --json: {out[:300]}")
    expect(names.get("tiny:q8", {}).get("bytes") == os.path.getsize(final), "list --json sizes")
    rc, out, err = run(strata, "inspect", "-m", "tiny:q8", "--json")
    expect(rc == 0, f"inspect -m OLLAMA_NAME: {err}")


def on_pty(strata, *args):
    """stderr of `strata args` run with stderr on a terminal."""
    master, slave = pty.openpty()
    p = subprocess.Popen([strata, *args], stdout=subprocess.DEVNULL, stderr=slave, env=ENV)
    os.close(slave)
    data = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, data.decode("utf-8", "replace")


def check_progress(strata, hub):
    hub.repos["test/Other-GGUF"] = {"other-Q8_0.gguf": hub.repos["test/Tiny-GGUF"]["tiny-Q8_0.gguf"]}
    rc, _, err = run(strata, "pull", "test/Other-GGUF:Q8_0")
    expect(rc == 0 and "\r" not in err and "\033[" not in err, f"no progress into a pipe: {err!r}")
    rc, _, err = run(strata, "run", "-m", "test/Other-GGUF:Q8_0", "-p", "hi", "-n", "2")
    expect(rc == 0 and "\r" not in err and "\033[" not in err, f"no load progress into a pipe: {err!r}")
    hub.repos["test/Pty-GGUF"] = {"pty-Q8_0.gguf": hub.repos["test/Tiny-GGUF"]["tiny-Q8_0.gguf"]}
    rc, err = on_pty(strata, "pull", "test/Pty-GGUF:Q8_0")
    expect(rc == 0 and "\r" in err and "pull [" in err and "100.0%" in err, f"a bar on a terminal: {err!r}")
    # perplexity's time estimate: on a terminal only.
    text = os.path.join(os.path.dirname(ENV["STRATA_MODELS"]), "text.txt")
    with open(text, "w") as f:
        f.write(" ".join(f"word{i % 97} and{i % 13}" for i in range(3000)))
    ppl = ["perplexity", "-m", "test/Tiny-GGUF:Q8_0", "-f", text, "-c", "64", "--chunks", "3"]
    rc, _, err = run(strata, *ppl)
    expect(rc == 0 and "ETA" not in err, f"no perplexity estimate into a pipe: rc={rc} {err!r}")
    rc, err = on_pty(strata, *ppl)
    expect(rc == 0 and "seconds per chunk - ETA" in err, f"perplexity estimate on a terminal: {err!r}")


def check_https(strata, hub, tmp):
    """HTTPS through the same client: a certificate the system does not trust is refused, one
    trusted through SSL_CERT_FILE works (OpenSSL's default verify paths)."""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                           "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
                          capture_output=True)
    if made.returncode != 0:
        print("skip HTTPS: openssl cannot make a certificate")
        return
    Handler.hub = hub
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(ENV, HF_ENDPOINT=f"https://127.0.0.1:{server.server_address[1]}")
    env.pop("SSL_CERT_FILE", None)
    rc, _, err = run(strata, "pull", "test/Tls-GGUF:Q8_0", env=env)
    expect(rc != 0 and "certificate is not trusted" in err, f"an untrusted certificate is refused: {err}")
    rc, out, err = run(strata, "pull", "test/Tls-GGUF:Q8_0", env=dict(env, SSL_CERT_FILE=cert))
    expect(rc == 0 and "pulled test/Tls-GGUF:Q8_0" in out, f"HTTPS pull with a trusted certificate: {err}")
    server.shutdown()


def main():
    strata = strata_arg()
    with tempfile.TemporaryDirectory() as tmp:
        for var, sub in (("HOME", "home"), ("XDG_CACHE_HOME", "cache"), ("HF_HUB_CACHE", "hf"),
                         ("OLLAMA_MODELS", "ollama"), ("STRATA_MODELS", "models")):
            ENV[var] = os.path.join(tmp, sub)
            os.makedirs(ENV[var])
        ENV.pop("HF_HOME", None)
        ENV.pop("HF_TOKEN", None)
        ENV["STRATA_QUICK_PROFILE"] = "1"
        hub = Hub()
        files = {}
        for t in ("q8_0", "f16"):
            path = os.path.join(tmp, f"tiny-{t}.gguf")
            rc, _, err = run(strata, "synth", "--preset", "tiny", "--type", t, "-o", path)
            expect(rc == 0, f"synth {t}: {err}")
            files[f"tiny-{t.upper()}.gguf"] = open(path, "rb").read()
        files["README.md"] = b"# tiny\n"
        hub.repos["test/Tiny-GGUF"] = files
        server = start_server(hub)
        ENV["HF_ENDPOINT"] = f"http://127.0.0.1:{server.server_address[1]}"
        final = check_pull_and_resume(strata, hub, ENV["STRATA_MODELS"])
        check_hostile_server(strata, hub, ENV["STRATA_MODELS"])
        check_names(strata, tmp, final)
        check_progress(strata, hub)
        hub.repos["test/Tls-GGUF"] = {"tls-Q8_0.gguf": files["tiny-Q8_0.gguf"]}
        check_https(strata, hub, tmp)
        server.shutdown()
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("pull_cli_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
