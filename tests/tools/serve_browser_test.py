#!/usr/bin/env python3
"""The chat page of `strata serve` in headless Chromium (selenium + chromedriver), on the
default model: the page loads and names the model, a message sent with Enter streams an
answer into the page (its text seen growing while the Stop button is enabled), Stop ends the
stream ([stopped] note, Send enabled again) and frees the slot on the server (/metrics), and
a second message then runs to its end.

usage: serve_browser_test.py --strata BUILD/bin/strata
Exit 77 (skipped) when $STRATA_DEFAULT_MODEL is unset or missing, or when Chromium cannot be
started (selenium, chromium or chromium-driver missing: scripts/setup.sh installs them); the
reason is printed."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from cli_util import FAILURES, expect


def start_browser():
    """A headless Chrome driver, or (None, reason) when Chromium cannot start here."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        return None, f"selenium is not installed ({e}); scripts/setup.sh installs it"
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not os.path.exists(driver_path) or browser_path is None:
        return None, "chromium or chromium-driver is not installed (Debian packages; scripts/setup.sh installs them)"
    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(arg)
    try:
        return webdriver.Chrome(service=Service(driver_path), options=options), None
    except Exception as e:  # noqa: BLE001 - any start failure means: no browser on this machine
        return None, f"Chromium did not start: {str(e).splitlines()[0] if str(e) else type(e).__name__}"


class Server:
    def __init__(self, strata, model):
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([strata, "serve", "-m", model, "-t", "2", "--port", "0", "--parallel", "2"],
                                     stdout=subprocess.PIPE, stderr=self.err)
        line = [None]
        reader = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(300)
        text = (line[0] or b"").decode()
        if "listening on http://" not in text:
            self.proc.kill()
            self.err.seek(0)
            raise RuntimeError(f"server did not start: {text!r} {self.err.read()[-2000:]!r}")
        self.url = text.split("listening on ")[1].strip().rstrip("/")

    def metric(self, name):
        with urllib.request.urlopen(self.url + "/metrics", timeout=30) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        return None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def wait_for(what, predicate, timeout=120, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    expect(False, f"timed out waiting for {what}")
    return None


def run(driver, srv):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    find = lambda css: driver.find_elements(By.CSS_SELECTOR, css)  # noqa: E731
    driver.get(srv.url + "/")
    expect("Strata" in driver.find_element(By.TAG_NAME, "h1").text, "the page has its heading")
    wait_for("the model name from /v1/models", lambda: driver.find_element(By.ID, "model").text.strip())
    max_box = driver.find_element(By.ID, "max")
    max_box.clear()
    max_box.send_keys("2000")
    box = driver.find_element(By.ID, "input")
    box.send_keys("Write a very long story about a dragon who learns to bake bread.", Keys.ENTER)
    wait_for("the user's message", lambda: find(".msg.user"))
    answer = lambda: (find(".msg.assistant span") or [None])[-1]  # noqa: E731
    first = wait_for("streamed text", lambda: answer() is not None and answer().text.strip() and answer().text)
    stop = driver.find_element(By.ID, "stop")
    expect(stop.is_enabled(), "Stop is enabled while the answer streams")
    grown = wait_for("the answer to grow", lambda: len(answer().text) > len(first or "") and answer().text)
    expect(grown is not None and grown.startswith((first or "").rstrip()[:10]), "the answer grows from its start")
    expect(srv.metric("strata_requests_processing") == 1, "the server generates while the page streams")
    stop.click()
    wait_for("the [stopped] note", lambda: any("[stopped]" in n.text for n in find(".msg.note")))
    expect(driver.find_element(By.ID, "send").is_enabled(), "Send is enabled after Stop")
    expect(not stop.is_enabled(), "Stop is disabled after Stop")
    expect(find(".msg.assistant")[-1].get_attribute("data-stopped") == "1", "the answer is marked stopped")
    wait_for("the slot freed on the server", lambda: srv.metric("strata_requests_processing") == 0, timeout=30)
    stopped_len = len(answer().text)
    time.sleep(0.5)
    expect(len(answer().text) == stopped_len, "no text arrives after Stop")

    max_box.clear()
    max_box.send_keys("8")
    box.send_keys("Say hello.", Keys.ENTER)
    wait_for("a second answer", lambda: len(find(".msg.assistant")) == 2 and
             driver.find_element(By.ID, "send").is_enabled() and answer().text.strip())
    expect(find(".msg.assistant")[-1].get_attribute("data-stopped") is None, "the second answer ran to its end")
    expect(not find(".msg.error"), "no error shown: " + " | ".join(e.text for e in find(".msg.error")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    args = ap.parse_args()
    model = os.environ.get("STRATA_DEFAULT_MODEL")
    if not model or not os.path.exists(model):
        print("STRATA_DEFAULT_MODEL not set or missing: skipped")
        return 77
    driver, why = start_browser()
    if driver is None:
        print(f"skipped: {why}")
        return 77
    srv = Server(args.strata, model)
    try:
        driver.set_page_load_timeout(60)
        run(driver, srv)
    finally:
        driver.quit()
        srv.stop()
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("chat page: load, send, stream, stop: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
