// The chat page (chat_page.h). Text is put on the page with textContent only, never parsed as
// HTML, so an answer cannot inject markup.
#include "engine/server/chat_page.h"

namespace strata::server {
namespace {

constexpr std::string_view kPage = R"strata_page(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Strata chat</title>
<style>
  :root { color-scheme: light dark; --line: #8884; }
  body { margin: 0; font: 15px/1.45 system-ui, sans-serif; display: flex; flex-direction: column; height: 100vh; }
  header { padding: .5em 1em; border-bottom: 1px solid var(--line); display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
  header h1 { font-size: 1.05em; margin: 0; }
  header label { font-size: .85em; opacity: .85; }
  header input { width: 6em; }
  #log { flex: 1; overflow-y: auto; padding: 1em; }
  .msg { max-width: 52em; margin: 0 auto .8em; white-space: pre-wrap; word-wrap: break-word; }
  .msg b { display: block; font-size: .8em; opacity: .6; }
  .error { color: #c33; }
  form { display: flex; gap: .5em; padding: .6em 1em; border-top: 1px solid var(--line); }
  textarea { flex: 1; font: inherit; min-height: 2.6em; resize: vertical; }
  button { font: inherit; padding: 0 1.2em; }
</style>
</head>
<body>
<header>
  <h1>Strata <span id="model"></span></h1>
  <label>system <input id="system" style="width:14em" placeholder="(none)"></label>
  <label>temperature <input id="temp" type="number" min="0" max="2" step="0.1" value="0.7"></label>
  <label>max tokens <input id="max" type="number" min="1" step="1" value="512"></label>
  <label>API key <input id="key" type="password" style="width:9em"></label>
  <button id="clear" type="button">Clear</button>
</header>
<div id="log"></div>
<form id="form">
  <textarea id="input" placeholder="Message (Enter sends, Shift+Enter for a new line)" autofocus></textarea>
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" disabled>Stop</button>
</form>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const log = $("log");
let messages = [];
let controller = null;

$("key").value = localStorage.getItem("strata-api-key") || "";
$("key").addEventListener("change", () => localStorage.setItem("strata-api-key", $("key").value));

function headers() {
  const h = { "Content-Type": "application/json" };
  if ($("key").value) h["Authorization"] = "Bearer " + $("key").value;
  return h;
}

function addMessage(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  const who = document.createElement("b");
  who.textContent = role;
  const body = document.createElement("span");
  body.textContent = text;
  div.append(who, body);
  log.append(div);
  log.scrollTop = log.scrollHeight;
  return body;
}

function busy(on) {
  $("send").disabled = on;
  $("stop").disabled = !on;
}

async function loadModel() {
  try {
    const r = await fetch("/v1/models", { headers: headers() });
    const j = await r.json();
    if (j.data && j.data.length) $("model").textContent = "· " + j.data[0].id;
  } catch (e) { /* the name is decoration */ }
}

// Reads server-sent events from the response body; calls onData with each parsed event.
async function readEvents(response, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        onData(JSON.parse(data));
      }
    }
  }
}

async function send(text) {
  const conversation = messages;  // "Clear" during the answer starts a new one; this answer stays here
  conversation.push({ role: "user", content: text });
  addMessage("user", text);
  const out = addMessage("assistant", "");
  const request = {
    messages: ($("system").value ? [{ role: "system", content: $("system").value }] : []).concat(conversation),
    stream: true,
    temperature: Number($("temp").value),
    max_tokens: Number($("max").value),
  };
  controller = new AbortController();
  busy(true);
  let answer = "";
  try {
    const r = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(), body: JSON.stringify(request), signal: controller.signal,
    });
    if (!r.ok) {
      const j = await r.json().catch(() => ({}));
      throw new Error((j.error && j.error.message) || ("HTTP " + r.status));
    }
    await readEvents(r, (event) => {
      if (event.error) throw new Error(event.error.message);
      const delta = event.choices && event.choices[0] && event.choices[0].delta;
      if (delta && delta.content) {
        answer += delta.content;
        out.textContent = answer;
        log.scrollTop = log.scrollHeight;
      }
    });
  } catch (e) {
    if (e.name === "AbortError") {
      out.parentElement.dataset.stopped = "1";
      addMessage("note", "[stopped]");
    } else {
      out.parentElement.classList.add("error");
      out.textContent = answer + (answer ? "\n" : "") + "error: " + e.message;
    }
  } finally {
    controller = null;
    busy(false);
  }
  conversation.push({ role: "assistant", content: answer });
}

$("form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("input").value.trim();
  if (!text || controller) return;
  $("input").value = "";
  send(text);
});
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    $("form").requestSubmit();
  }
});
$("stop").addEventListener("click", () => { if (controller) controller.abort(); });
$("clear").addEventListener("click", () => {
  if (controller) controller.abort();
  messages = [];
  log.textContent = "";
});
loadModel();
</script>
</body>
</html>
)strata_page";

}  // namespace

std::string_view chat_page_html() { return kPage; }

}  // namespace strata::server
