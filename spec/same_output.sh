#!/bin/sh
# spec/same_output.sh REV [DIR]: whether this checkout's reading half and
# writer give the bytes REV's give (a move or a consolidation must not
# change them). Builds REV in a scratch worktree, then on the fixtures, the
# seed's example, a demo trace and every *.json in DIR: the load's message,
# `report` (whole and a range), `report --json` and the page
# (spec/same_output.lua); and a saved file recorded on the caller alone,
# its times masked. The page's own files are this checkout's on both sides. Prints the files that differ; exit 0 when none do.
set -eu
rev=${1:?usage: spec/same_output.sh REV [DIR]}
corpus=${2:-}
top=$(pwd)
tmp=$(mktemp -d)
trap 'git -C "$top" worktree remove --force "$tmp/old" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/old" "$rev"
# The page's own files (HTML, CSS, JavaScript: their diff shows their
# changes) are this checkout's on both sides: what is compared is what the
# reading half writes into the page.
for f in page.html page.css page.js hooks.js; do
  for d in page timeline; do
    [ -f "$tmp/old/lua/jobque_profile/$d/$f" ] && cp lua/jobque_profile/page/$f "$tmp/old/lua/jobque_profile/$d/$f"
  done
done
for side in old new; do
  dir=$top; [ "$side" = old ] && dir=$tmp/old
  (cd "$dir" && cmake -S . -B "$tmp/build-$side" -DJOBQUE_TESTING=ON >/dev/null && cmake --build "$tmp/build-$side" -j2 >/dev/null)
done
mkdir "$tmp/in"
cp spec/fixtures/*.json "$tmp/in/"
[ -f ../shared/reference/seed_trace_example.json ] && cp ../shared/reference/seed_trace_example.json "$tmp/in/seed_example.json"
(cd "$tmp/old" && LUA_PATH="lua/?.lua;;" LUA_CPATH="$tmp/build-old/?.so;;" lua5.4 examples/tokens.lua "$tmp/in/demo.json" >/dev/null)
if [ -n "$corpus" ]; then
  find "$corpus" -name '*.json' -size -20M | sort | while read -r f; do cp "$f" "$tmp/in/c-$(basename "$f")"; done
fi
cat >"$tmp/record.lua" <<'LUA'
local p = require "jobque_profile"
local jobque = require "jobque"
local out = arg[1]
p.profile_start(4096)
local cat = p.profile_category("io <b>\n", 0x123456)
local tok = p.profile_marker_id("token")
p.profile_tag(cat)
for i = 1, 5 do
  p.profile_marker(tok, i)
  p.profile_begin("step")
  p.profile_counter("depth", i)
  p.profile_span("inner", function() return i end)
  p.profile_end()
end
jobque.with_job_que({workers = 0}, function(q)
  local a = q:submit(function(x) return require("jobque_profile").profile_span("in job", function() return x * 2 end) end, 21)
  local b = q:after({a}, function() return "b" end)
  assert(b:wait() == "b" and a:wait() == 42)
  local f = q:submit(function() error("boom") end)
  assert(not f:pwait())
end)
p.profile_stop()
assert(p.profile_save(out))
LUA
mkdir "$tmp/out-old" "$tmp/out-new"
for side in old new; do
  dir=$top; [ "$side" = old ] && dir=$tmp/old
  (cd "$dir" && LUA_PATH="lua/?.lua;;" LUA_CPATH="$tmp/build-$side/?.so;;" \
    lua5.4 "$tmp/record.lua" "$tmp/out-$side/recorded.json" 2>&1 | head -5)
  sed -E 's/"(ts|dur|fullAtUs|startUs|stopUs|durationUs|at)":-?[0-9.e+-]+/"\1":T/g; s/"clock":"([a-z]+)","pid":[0-9]+/"clock":"\1","pid":P/; s/"(heap|value|KB)":[0-9.e+-]+/"\1":N/g' \
    "$tmp/out-$side/recorded.json" >"$tmp/out-$side/recorded.masked" && rm "$tmp/out-$side/recorded.json"
  (cd "$dir" && LUA_PATH="lua/?.lua;spec/?.lua;;" LUA_CPATH="$tmp/build-$side/?.so;;" \
    lua5.4 "$top/spec/same_output.lua" "$tmp/out-$side" "$tmp"/in/*.json)
done
n=$(ls "$tmp/in" | wc -l)
if diff -rq "$tmp/out-old" "$tmp/out-new"; then
  echo "same_output: the same bytes as $rev on $n traces ($(ls "$tmp/out-new" | wc -l) outputs) and a recorded file"
else
  echo "same_output: outputs differ from $rev (above)"
  [ -n "${KEEP:-}" ] && { cp -r "$tmp/out-old" "$tmp/out-new" "$KEEP"/; echo "kept in $KEEP"; }
  exit 1
fi
