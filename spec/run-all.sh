#!/bin/sh
# Every check of `make test`, each counted and timed ("== label" then
# "-- label: N s"), ending with one line "tests: N passed, N failed". Run
# from the top of the checkout after the builds (make test does both).
# Under the sanitizer hosts the specs size their work down (S.sanitized in
# spec/support.lua) and leave the Chromium-driven blocks to the plain run.
set -u
LUA=${LUA:-lua5.4}
BUSTED=/usr/bin/busted
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
started=$(date +%s)

# timed LABEL: after a stage, how long it took.
timed() {
  echo "-- $1: $(($(date +%s) - stage_start)) s"
}

# busted_run LABEL BUILD_DIR INTERPRETER [ENV=VALUE...]
busted_run() {
  label=$1 build=$2 interp=$3
  shift 3
  echo "== specs ($label)"
  stage_start=$(date +%s)
  timeout 900 env "$@" JQ_BUILD="$build" JQ_LUA="$interp" "$interp" "$BUSTED" --output=plainTerminal >"$log" 2>&1
  rc=$?
  sed -n '/^Failure ->\|^Error ->/,/^$/p' "$log" | head -200
  grep -E '^[0-9]+ success' "$log" | tail -n 1
  timed "specs ($label)"
  line=$(grep -E '^[0-9]+ success' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    cat "$log"
    echo "busted ($label) did not finish (exit $rc)"
    failed=$((failed + 1))
    return
  fi
  s=$(echo "$line" | sed -E 's/^([0-9]+) success.*/\1/')
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) failures? .*/\1/')
  e=$(echo "$line" | sed -E 's/.* ([0-9]+) errors? .*/\1/')
  passed=$((passed + s))
  failed=$((failed + f + e))
  if [ "$rc" -ne 0 ] && [ $((f + e)) -eq 0 ]; then
    echo "busted ($label) exited $rc (a sanitizer report?)"
    tail -n 40 "$log"
    failed=$((failed + 1))
  fi
}

# check LABEL COMMAND...: one counted check.
check() {
  label=$1
  shift
  echo "== $label"
  stage_start=$(date +%s)
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1))
    tail -n 3 "$log"
  else
    cat "$log"
    echo "FAILED: $label"
    failed=$((failed + 1))
  fi
  timed "$label"
}

check "luacheck" luacheck --quiet lua spec bench examples lua/jobque-profile.lua
check "eslint: the timeline page's JavaScript" node_modules/.bin/eslint --max-warnings 0 lua/jobque_profile/page spec/consumers eslint.config.js

busted_run "plain build" build "$LUA"
busted_run "AddressSanitizer, monotonic clock" build-address "$PWD/build-address/lua_host" \
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 JOBQUE_PROFILE_CLOCK=monotonic
busted_run "ThreadSanitizer" build-thread "$PWD/build-thread/lua_host" \
  TSAN_OPTIONS=allocator_may_return_null=1:halt_on_error=1:second_deadlock_stack=1

check "valgrind: no leaks, no invalid accesses" \
  env JQ_BUILD=build valgrind --quiet --error-exitcode=99 --leak-check=full \
  --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
  "$LUA" spec/leak_check.lua

check "luarocks make installs offline, without test helpers" sh spec/rock_check.sh

echo "all stages: $(($(date +%s) - started)) s"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
