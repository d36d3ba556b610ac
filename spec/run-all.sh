#!/bin/sh
# Every check of `make test`, each counted and timed, ending with one line
# "tests: N passed, N failed". Run from the top of the checkout after the
# builds (make test does both).
#
# The lints run first; then two lanes run side by side, one per core: the
# plain specs then the AddressSanitizer specs, and the ThreadSanitizer
# specs then valgrind and the rock. JQ_SERIAL=1 runs every stage one after
# the other (each stage's seconds are then its own, not shared with the
# other lane). Each stage's report is printed in the order above, with
# "-- <stage>: N s". Under the sanitizer hosts the specs size their work
# down (S.sanitized in spec/support.lua) and leave the blocks that drive
# Chromium or node, which no sanitizer instruments, to the plain run.
set -u
LUA=${LUA:-lua5.4}
BUSTED=/usr/bin/busted
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
started=$(date +%s)

# Every stage NAME writes its report to $out/NAME.log and its counts,
# "passed failed", to $out/NAME.count.
counts() {
  echo "$2 $3" >"$out/$1.count"
}

# busted_run NAME LABEL BUILD_DIR INTERPRETER [ENV=VALUE...]
busted_run() {
  name=$1 label=$2 build=$3 interp=$4
  shift 4
  log=$out/$name.busted
  t0=$(date +%s)
  {
    echo "== specs ($label)"
    timeout 900 env "$@" JQ_BUILD="$build" JQ_LUA="$interp" "$interp" "$BUSTED" --output=plainTerminal >"$log" 2>&1
    rc=$?
    sed -n '/^Failure ->\|^Error ->/,/^$/p' "$log" | head -200
    line=$(grep -E '^[0-9]+ success' "$log" | tail -n 1)
    echo "$line"
    echo "-- specs ($label): $(($(date +%s) - t0)) s"
    if [ -z "$line" ]; then
      cat "$log"
      echo "busted ($label) did not finish (exit $rc)"
      counts "$name" 0 1
    else
      s=$(echo "$line" | sed -E 's/^([0-9]+) success.*/\1/')
      f=$(echo "$line" | sed -E 's/.* ([0-9]+) failures? .*/\1/')
      e=$(echo "$line" | sed -E 's/.* ([0-9]+) errors? .*/\1/')
      bad=$((f + e))
      if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
        echo "busted ($label) exited $rc (a sanitizer report?)"
        tail -n 40 "$log"
        bad=1
      fi
      counts "$name" "$s" "$bad"
    fi
  } >"$out/$name.log"
}

# check NAME LABEL COMMAND...: one counted check.
check() {
  name=$1 label=$2
  shift 2
  log=$out/$name.out
  t0=$(date +%s)
  {
    echo "== $label"
    if "$@" >"$log" 2>&1; then
      tail -n 3 "$log"
      counts "$name" 1 0
    else
      cat "$log"
      echo "FAILED: $label"
      counts "$name" 0 1
    fi
    echo "-- $label: $(($(date +%s) - t0)) s"
  } >"$out/$name.log"
}

plain_then_address() {
  busted_run plain "plain build" build "$LUA"
  busted_run address "AddressSanitizer, monotonic clock" build-address "$PWD/build-address/lua_host" \
    ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 JOBQUE_PROFILE_CLOCK=monotonic
}

thread_then_the_rest() {
  busted_run thread "ThreadSanitizer" build-thread "$PWD/build-thread/lua_host" \
    TSAN_OPTIONS=allocator_may_return_null=1:halt_on_error=1:second_deadlock_stack=1
  # valgrind runs one thread at a time; --fair-sched=yes hands the turn
  # round in order, so the jobs that yield in a loop until a close (a
  # job cancelled while suspended) cannot starve the threads that would
  # close their queue (without it the check took from 3 s to minutes).
  check valgrind "valgrind: no leaks, no invalid accesses" \
    env JQ_BUILD=build valgrind --quiet --fair-sched=yes --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
    "$LUA" spec/leak_check.lua
  check rock "luarocks make installs offline, without test helpers" sh spec/rock_check.sh
}

check luacheck "luacheck" luacheck --quiet lua spec bench examples lua/jobque-profile.lua
check eslint "eslint: the timeline page's JavaScript" node_modules/.bin/eslint --max-warnings 0 \
  lua/jobque_profile/page spec/consumers eslint.config.js
cat "$out/luacheck.log" "$out/eslint.log"

if [ -n "${JQ_SERIAL:-}" ]; then
  plain_then_address
  thread_then_the_rest
else
  plain_then_address &
  lane=$!
  thread_then_the_rest
  wait "$lane"
fi

passed=0
failed=0
for name in luacheck eslint plain address thread valgrind rock; do
  [ "$name" = luacheck ] || [ "$name" = eslint ] || cat "$out/$name.log"
  if [ -f "$out/$name.count" ]; then
    read -r s f <"$out/$name.count"
  else
    echo "stage $name left no count"
    s=0 f=1
  fi
  passed=$((passed + s))
  failed=$((failed + f))
done
echo "all stages: $(($(date +%s) - started)) s"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
