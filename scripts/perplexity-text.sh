#!/usr/bin/env bash
# Prints the path of the English text used for perplexity: the Book of Genesis (King James
# Version, public domain) from Debian's bible-kjv package, as plain prose (chapter headings
# and verse numbers removed, one verse per line). Made once, then cached.
set -euo pipefail
out=${XDG_CACHE_HOME:-$HOME/.cache}/strata/text/genesis-kjv.txt
if [ ! -s "$out" ]; then
  command -v bible >/dev/null || { echo "perplexity-text: install bible-kjv (scripts/setup.sh)" >&2; exit 1; }
  mkdir -p "$(dirname "$out")"
  bible -l100000 "Gen1:1-Gen50:26" | sed -n -E 's/^ *[0-9]+ (.*)$/\1/p' > "$out.tmp"
  mv "$out.tmp" "$out"
fi
echo "$out"
