-- Loaded by busted before the specs: finds the built jobque.core.
-- JQ_BUILD names the build directory (build, build-asan, build-tsan).
local build = os.getenv("JQ_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath
