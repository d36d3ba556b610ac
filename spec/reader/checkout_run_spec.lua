-- The command run from the checkout as README.md and docs/cli.md say
-- (`lua5.4 lua/jobque-profile.lua ...` after `make build`), by a user who
-- has the checkout's lua/ on LUA_PATH already (as the Makefile's and
-- docs/benchmarks.md's lines set it) but no LUA_CPATH: the script finds
-- the reader's C module in build/ itself. Before the reader was a C module
-- of its own, `report` ran there; it must still.
local S = require "support"

local seed = "spec/fixtures/seed_trace_example.json"

-- Runs the command with exactly the environment `env` (LUA_CPATH unset),
-- from the directory `dir` ("." the checkout), the script at `script`.
local function run_bare(env, dir, script, args)
  local err = S.tmpfile("stderr.txt")
  local cmd = ("cd %s && env -u LUA_CPATH %s lua5.4 %s %s 2>'%s'"):format(dir, env, script, args, err)
  local h = io.popen(cmd)
  local out = h:read("a")
  local _, _, code = h:close()
  return code, out, S.read(err)
end

local describe_plain = S.plain_only(describe, pending, "runs the plain build/ the script finds")

describe_plain("jobque-profile run from the checkout", function()
  it("reports with the checkout's lua/ on LUA_PATH and no LUA_CPATH", function()
    local code, out, err = run_bare("LUA_PATH='lua/?.lua;;'", ".", "lua/jobque-profile.lua", "report " .. seed)
    assert.are.equal(0, code, err)
    assert.are.equal("", err)
    -- the seed example: 3 lanes (worker 0, worker 1, caller 2), 31 events
    -- (28 slices and 3 token markers), over [0, 2135] us
    assert.matches("^[^\n]*seed_trace_example%.json: jobque trace, 3 lanes, 31 events\n", out)
  end)

  it("writes the page with the checkout's lua/ on LUA_PATH and no LUA_CPATH", function()
    local page = S.tmpfile("page.html")
    local code, out, err = run_bare("LUA_PATH='lua/?.lua;;'", ".", "lua/jobque-profile.lua",
                                    ("html %s -o '%s'"):format(seed, page))
    assert.are.equal(0, code, err)
    assert.matches("(3 lanes, 28 slices, 3 markers)", out, 1, true)
  end)
end)
