#!/usr/bin/env python3
"""Which chat template `strata chat` uses, end to end: the installed instruct model's own Jinja
template with no warning; the default (base) model, which has none, a built-in format named in
a warning; --chat-template-file with a broken template and an unknown --chat-template name are
errors (exit 2) naming the flag and the line. The prompt text itself is compared with Python
jinja2 by tests/engine/chat/jinja/jinja_oracle.py.

usage: chat_template_cli_test.py --strata BUILD/bin/strata
Needs $STRATA_DEFAULT_MODEL; the instruct model from scripts/second-model.py when installed
(exit 77 = skipped without the default model)."""
import os
import subprocess
import sys
import tempfile

from cli_util import SKIP, FAILURES, expect, strata_arg


def chat(strata, model, *flags, stdin=b"Hi\n"):
    p = subprocess.run([strata, "chat", "-m", model, "-t", "2", "-n", "4", "--temp", "0", *flags],
                       input=stdin, capture_output=True, timeout=300)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def main():
    strata = strata_arg()
    default = os.environ.get("STRATA_DEFAULT_MODEL", "")
    if not default or not os.path.exists(default):
        print("skipped: $STRATA_DEFAULT_MODEL is not set")
        return SKIP

    rc, err = chat(strata, default)
    expect(rc == 0 and "warning: the model file has no chat template" in err and "built-in gemma" in err,
           f"default model: exit {rc}, expected a warning naming the built-in gemma format: {err!r}")

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    second = subprocess.run([sys.executable, os.path.join(root, "scripts", "second-model.py")],
                            capture_output=True, text=True, check=False).stdout.strip()
    if second and os.path.exists(second):
        rc, err = chat(strata, second)
        expect(rc == 0 and "chat template the file's Jinja template" in err and "warning" not in err,
               f"instruct model: exit {rc}, expected its own Jinja template and no warning: {err!r}")
        rc, err = chat(strata, second, "--chat-template", "chatml")
        expect(rc == 0 and "built-in chatml, forced" in err, f"--chat-template chatml: {err!r}")
    else:
        print("note: the instruct model is not installed; its part skipped")

    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.jinja")
        with open(bad, "w", encoding="utf-8") as f:
            f.write("{% for m in messages %}\n{{ m.content }\n")
        rc, err = chat(strata, default, "--chat-template-file", bad)
        expect(rc == 2 and "--chat-template-file" in err and "line 2" in err,
               f"broken template file: exit {rc}, {err!r}")
        good = os.path.join(tmp, "good.jinja")
        with open(good, "w", encoding="utf-8") as f:
            f.write("{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n"
                    "{% endfor %}<start_of_turn>model\n")
        rc, err = chat(strata, default, "--chat-template-file", good)
        expect(rc == 0 and f"--chat-template-file {good}, forced" in err, f"template file: exit {rc}, {err!r}")
    rc, err = chat(strata, default, "--chat-template", "nonesuch")
    expect(rc == 2 and "nonesuch" in err and "chatml" in err, f"unknown template name: exit {rc}, {err!r}")

    print("chat_template_cli_test:", "FAILED" if FAILURES else "ok")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
