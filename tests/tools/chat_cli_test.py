#!/usr/bin/env python3
"""`strata chat` end to end on the default model: piped stdin (one turn per line, one answer
line each, exit 0 at EOF), bad flags as one error line, and an interactive session in a
detached tmux: an answer, /stats with tok/s, Ctrl-C during a long answer brings the prompt
back with the process alive, /clear, and Ctrl-D exits (also while an answer streams). Every wait
is bounded.

usage: chat_cli_test.py --strata BUILD/bin/strata
Needs $STRATA_DEFAULT_MODEL (exit 77 = skipped when unset or missing)."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from cli_util import FAILURES, expect


def piped(strata, model):
    turns = "Say hello.\nName a fruit.\n"
    p = subprocess.run([strata, "chat", "-m", model, "-t", "2", "-n", "8", "--temp", "0"],
                       input=turns.encode(), capture_output=True, timeout=600)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    expect(p.returncode == 0, f"piped chat: exit {p.returncode}, stderr {err!r}")
    lines = out.split("\n")
    # Two answers, each followed by a newline (an answer itself may hold newlines, so count
    # at least two non-empty lines and no prompt decorations).
    expect(out.endswith("\n") and len([l for l in lines if l.strip()]) >= 2,
           f"piped chat: expected two answers, stdout {out!r}")
    expect("> " not in out[:2], f"piped chat: prompt decoration on stdout {out!r}")
    expect("gemma" in err and "weights: gpu" in err and "| ram " in err, f"piped chat: no start-up line: {err!r}")

    p = subprocess.run([strata, "chat", "-m", model, "--chat-template", "vicuna"],
                       input=b"", capture_output=True, timeout=120)
    err = p.stderr.decode()
    expect(p.returncode == 2 and "vicuna" in err and "chatml" in err,
           f"unknown template: exit {p.returncode}, {err!r}")


class Tmux:
    def __init__(self, name, command, env):
        self.name = name
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "200", "-y", "50",
                        command], check=True, env=env)
        # A pane whose command ended stays readable (its last screen, STRATA_EXIT) until killed.
        subprocess.run(["tmux", "set-option", "-t", name, "remain-on-exit", "on"], capture_output=True)

    def send(self, *keys):
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def text(self):
        p = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name, "-S", "-2000"],
                           capture_output=True)
        return p.stdout.decode("utf-8", "replace") if p.returncode == 0 else None

    def alive(self):
        """The session is there and its pane's command has not ended."""
        p = subprocess.run(["tmux", "list-panes", "-t", self.name, "-F", "#{pane_dead}"], capture_output=True)
        return p.returncode == 0 and p.stdout.decode().strip() == "0"

    def wait(self, pred, timeout):
        end = time.time() + timeout
        while time.time() < end:
            t = self.text()
            if t is None or pred(t):
                return t
            time.sleep(0.5)
        return self.text()

    def kill(self):
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def prompts(text):
    """REPL prompts shown so far: lines starting with '> ' (answered) or just '>' (waiting)."""
    return sum(1 for line in text.splitlines() if line.startswith("> ") or line.rstrip() == ">")


def interactive(strata, model):
    if not shutil.which("tmux"):
        print("tmux not installed: interactive part skipped")
        return
    home = tempfile.mkdtemp(prefix="strata_chat_home_")
    env = dict(os.environ, HOME=home, TERM="xterm")
    name = f"strata_chat_test_{os.getpid()}"
    # The pane's shell traps SIGINT (Ctrl-C reaches the whole foreground group, the shell too): if
    # strata ever exits on it, the pane still shows STRATA_EXIT=<status> for the check below.
    cmd = (f"trap : INT; '{strata}' chat -m '{model}' -t 2 -n 12 --temp 0; "
           f"echo STRATA_EXIT=$?; sleep 30")
    tm = Tmux(name, cmd, env)
    try:
        t = tm.wait(lambda t: prompts(t) >= 1, 120)
        if not expect(t and prompts(t) >= 1, f"no REPL prompt: {t!r}"):
            return
        tm.send("-l", "Say hi.")
        tm.send("Enter")
        t = tm.wait(lambda t: prompts(t) >= 2, 240)
        expect(t and prompts(t) >= 2, f"no prompt after the first answer: {t!r}")

        tm.send("-l", "/stats")
        tm.send("Enter")
        t = tm.wait(lambda t: "tok/s" in t and prompts(t) >= 3, 30)
        expect(t and "tok/s" in t, f"/stats shows no tok/s: {t!r}")

        before = prompts(tm.text() or "")
        tm.send("-l", "/set temp 0.7")
        tm.send("Enter")
        tm.wait(lambda t: prompts(t) > before, 30)
        tm.send("-l", "/set n-predict 900")
        tm.send("Enter")  # unknown setting: an error line, the REPL goes on
        tm.wait(lambda t: "unknown setting" in t, 30)

        # A long answer (its -n is 12, so Ctrl-C must come quickly: as soon as text appears).
        before = prompts(tm.text() or "")
        marker = "Write a very long story about a dragon."
        tm.send("-l", marker)
        tm.send("Enter")
        tm.wait(lambda t: marker in t and not t.rstrip().endswith(marker), 120)
        tm.send("C-c")
        t = tm.wait(lambda t: prompts(t) > before, 120)
        expect(t and prompts(t) > before, f"no prompt after Ctrl-C: {t!r}")
        expect(tm.alive() and "STRATA_EXIT" not in (t or ""), f"strata exited on Ctrl-C: {t!r}")

        before = prompts(tm.text() or "")
        tm.send("-l", "/clear")
        tm.send("Enter")
        t = tm.wait(lambda t: "conversation cleared" in t and prompts(t) > before, 30)
        expect(t and "conversation cleared" in t, f"/clear gave no confirmation: {t!r}")

        tm.send("C-d")
        t = tm.wait(lambda t: "STRATA_EXIT=" in t, 30)
        expect(t and "STRATA_EXIT=0" in t, f"Ctrl-D did not exit cleanly: {t!r}")
        expect(os.path.exists(os.path.join(home, ".cache/strata/chat_history")),
               "no history file written")
    finally:
        tm.kill()
        shutil.rmtree(home, ignore_errors=True)


def ctrl_d_during_answer(strata, model):
    """Ctrl-D typed while an answer streams stops it and ends the chat (it used to be swallowed)."""
    if not shutil.which("tmux"):
        return
    home = tempfile.mkdtemp(prefix="strata_chat_home_")
    env = dict(os.environ, HOME=home, TERM="xterm")
    name = f"strata_chat_eof_{os.getpid()}"
    tm = Tmux(name, f"'{strata}' chat -m '{model}' -t 2 -n 2000 --temp 0; echo STRATA_EXIT=$?; sleep 30", env)
    try:
        t = tm.wait(lambda t: prompts(t) >= 1, 120)
        if not expect(t and prompts(t) >= 1, f"no REPL prompt: {t!r}"):
            return
        marker = "Write a very long story about a dragon."
        tm.send("-l", marker)
        tm.send("Enter")
        tm.wait(lambda t: marker in t and not t.rstrip().endswith(marker), 120)
        tm.send("C-d")
        t = tm.wait(lambda t: "STRATA_EXIT=" in t, 60)
        expect(t and "STRATA_EXIT=0" in t, f"Ctrl-D during an answer did not end the chat: {t!r}")
    finally:
        tm.kill()
        shutil.rmtree(home, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    args = ap.parse_args()
    model = os.environ.get("STRATA_DEFAULT_MODEL")
    if not model or not os.path.exists(model):
        print("STRATA_DEFAULT_MODEL not set or missing: skipped")
        return 77
    piped(args.strata, model)
    interactive(args.strata, model)
    ctrl_d_during_answer(args.strata, model)
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
