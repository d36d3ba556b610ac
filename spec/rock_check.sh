#!/bin/sh
# `luarocks make` installs jobque.core and the Lua modules into a fresh tree
# with no rocks server (--deps-mode=none: argparse is Debian's); the installed core is the release build, and the installed
# command reads a trace and writes the timeline from the tree's own files.
set -eu
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
luarocks --lua-version 5.4 make --deps-mode=none --tree "$tree" rockspec/jobque-profile-scm-1.rockspec >"$tree/log" 2>&1 ||
  { cat "$tree/log"; exit 1; }
eval "$(luarocks --lua-version 5.4 path --tree "$tree")"
cat >"$tree/check.lua" <<'LUA'
local tree = arg[1]
local p = require "jobque_profile"
local core = require "jobque.core"
local found = package.searchpath("jobque.core", package.cpath)
assert(found and found:find(tree, 1, true), "not the installed core: " .. tostring(found))
assert(core._test == nil, "test helpers must not ship")
assert(p.PROFILE_COLOR_BLUE == 0x5e96de)
p.profile_start(64) p.profile_marker("rock", 1)
local jobque = require "jobque"
assert(package.searchpath("jobque", package.path):find(tree, 1, true), "not the installed jobque")
assert(jobque.with_job_que({workers = 2}, function(q)
  return q:submit(function(x) return x * 2 end, 21):wait()
end) == 42)
p.profile_stop()
assert(p.profile_save(tree .. "/t.json"))
print("installed rock works: " .. found)
LUA
lua5.4 "$tree/check.lua" "$tree"
# The installed command reads the trace back with the installed modules.
"$tree/bin/jobque-profile" report "$tree/t.json" | grep -q 'marker "rock": 1 unit;' ||
  { echo "installed jobque-profile did not report the trace" >&2; exit 1; }
echo "installed command works: $tree/bin/jobque-profile"
# The page, from the installed tree's files (run away from the checkout).
page_js=$(find "$tree" -path '*/jobque_profile/page/page.js' | head -n 1)
[ -n "$page_js" ] || { echo "the timeline's page.js is not installed" >&2; exit 1; }
(cd "$tree" && ./bin/jobque-profile html t.json -o t.html >/dev/null) ||
  { echo "installed jobque-profile did not write the page" >&2; exit 1; }
grep -q '<canvas id="tl">' "$tree/t.html" && ! grep -q 'probe=' "$tree/t.html" ||
  { echo "the installed page is not the timeline, or has the test hooks" >&2; exit 1; }
state=$(chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
  --user-data-dir="$tree/chromium" --window-size=1200,500 --dump-dom "file://$tree/t.html" 2>/dev/null |
  grep -o 'data-state="[^"]*"' | head -n 1)
echo "$state" | grep -q '&quot;markers&quot;:1,' ||
  { echo "the installed page did not draw in Chromium: ${state:-no state}" >&2; exit 1; }
echo "installed page draws: $tree/t.html"
