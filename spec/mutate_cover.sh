#!/bin/sh
# Measures which spec files cover which file of src/ and lua/, for
# spec/mutate_map.lua: `sh spec/mutate_cover.sh [DIR]` from the top of the
# checkout (slow: the whole plain suite on a --coverage build; run it under
# flock /tmp/jq-heavy.lock and timeout). Writes nothing in the checkout:
# it copies the tracked files to DIR (default: a new /tmp directory) and
# prints, per file, the spec files that ran it, as a Lua table's fields.
#
# A spec file covers a C file when, run alone, it executes more of the
# file's lines (gcov) than loading jobque.core, jobque and jobque_profile
# alone does; a Lua file when it calls one of the file's functions (a call
# hook set in every state and coroutine through LUA_INIT_5_4, so also in
# the command's child processes).
set -eu
dir=${1:-$(mktemp -d /tmp/jobque-cover.XXXXXX)}
mkdir -p "$dir/tree" "$dir/out"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$dir/tree"
# the npm packages spec/record/consumers_spec.lua reads traces with (npm ci), not tracked
[ -d node_modules ] && ln -s "$PWD/node_modules" "$dir/tree/node_modules"
cat >"$dir/hook.lua" <<'EOF'
local out = os.getenv("JQ_COVER_OUT")
if out then
  local seen, getinfo, sethook = {}, debug.getinfo, debug.sethook
  local function hook()
    local info = getinfo(2, "S")
    local s = info and info.source
    if s and not seen[s] and s:sub(1, 5) == "@lua/" then
      seen[s] = true
      local f = io.open(out, "a")
      if f then f:write(s:sub(2), "\n") f:close() end
    end
  end
  sethook(hook, "c")
  local create = coroutine.create
  coroutine.create = function(fn) local co = create(fn) sethook(co, hook, "c") return co end
  coroutine.wrap = function(fn)
    local co = create(fn) sethook(co, hook, "c")
    return function(...)
      local r = table.pack(coroutine.resume(co, ...))
      if not r[1] then error(r[2], 0) end
      return table.unpack(r, 2, r.n)
    end
  end
end
EOF
cd "$dir/tree"
cmake -S . -B build -DJOBQUE_TESTING=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=--coverage >/dev/null
cmake --build build -j2 >/dev/null
gcov_lines() { # the executed lines per file of src/, from the .gcda files now there
  for d in build/CMakeFiles/*.dir/src/*; do (cd "$d" && for g in *.gcda; do [ -e "$g" ] && gcov -n "$g" 2>/dev/null; done); done |
    awk -v root="$dir/tree/" '/^File /{f=$2; gsub("\x27","",f); sub(root,"",f); next}
      /^Lines executed:/ && f ~ /^src\// {split($2,a,":"); p=a[2]; sub("%","",p); n[f]+=int(p*$4/100+0.5); f=""}
      END{for (k in n) print k, n[k]}'
}
find build -name '*.gcda' -delete
LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" lua5.4 -e 'require "jobque.core"; require "jobque"; require "jobque_profile"'
gcov_lines >"$dir/out/base"
for f in spec/*_spec.lua spec/*/*_spec.lua; do
  n=$(echo "${f#spec/}" | sed 's/\.lua$//; s|/|+|g')
  find build -name '*.gcda' -delete
  JQ_COVER_OUT="$dir/out/$n.lua" LUA_INIT_5_4="@$dir/hook.lua" timeout 1800 env JQ_BUILD=build lua5.4 /usr/bin/busted "$f" \
    >"$dir/out/$n.log" 2>&1 || echo "($f did not pass under the hook: its figures may be short)" >&2
  gcov_lines >"$dir/out/$n.c"
done
cd "$dir/out"
for f in *_spec.c; do
  n=${f%.c}
  awk -v s="$n" 'NR==FNR{b[$1]=$2; next} $2>b[$1]+0 {print $1, s}' base "$f"
  sort -u "$n.lua" 2>/dev/null | awk -v s="$n" '{print $1, s}'
done | sort | grep -v '^src/testing' | awk '
  $1 != cur {if (cur != "") print line "},"; cur = $1; line = "  [\"" $1 "\"] = {"; sep = ""}
  {sp = $2; gsub(/\+/, "/", sp); item = "\"spec/" sp ".lua\""; if (length(line) + length(item) > 112) {print line ","; line = "    "; sep = ""}
   line = line sep item; sep = ", "}
  END {if (cur != "") print line "},"}'
