#!/bin/sh
# Loads a profile (folded stacks or speedscope JSON) into speedscope 1.25.0
# (npm package `speedscope`, pinned in package-lock.json) in Debian's
# headless Chromium, waits until the title ends in " - speedscope", opens
# its Sandwich view and prints the table speedscope computed: Total, Self
# and Symbol Name per function, tab-separated, as speedscope shows them
# (HTML entities as in the DOM). A profile speedscope cannot read prints
# nothing (speedscope raises an alert instead of drawing).
#   sh spec/consumers/speedscope_sandwich.sh PROFILE [node_modules dir]
# (spec/reader/speedscope_spec.lua; after ../shared/reference/consumers/.)
set -eu
prof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
nm=${2:-$PWD/node_modules}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node -e '
const fs = require("fs");
const [prof, out] = process.argv.slice(1);
const b64 = fs.readFileSync(prof).toString("base64");
const name = require("path").basename(prof);
fs.writeFileSync(out, `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ${JSON.stringify(b64)});
(function poll(n) {  // wait until the profile is drawn, then open the Sandwich view
  const tab = [...document.querySelectorAll("div")].find(d => d.textContent.endsWith("Sandwich") && d.children.length === 1);
  if (tab && document.title.endsWith(" - speedscope")) { tab.click(); return; }
  if (n > 0) setTimeout(() => poll(n - 1), 200);
})(100);`);
' "$prof" "$tmp/load.js"
chromium --headless --no-sandbox --disable-gpu --disable-background-networking --allow-file-access-from-files \
  --user-data-dir="$tmp/profile" --virtual-time-budget=30000 \
  --dump-dom "file://$nm/speedscope/dist/release/index.html#localProfilePath=$tmp/load.js" 2>/dev/null |
  sed 's/<[^>]*>/\n/g' | sed '/^[[:space:]]*$/d' | sed -n '/^Symbol Name$/,$p' | sed 1d | paste - - -
