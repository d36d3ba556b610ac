-- profile_save's {progress = true}: one line on stderr, only when stderr is
-- a terminal and the save has run for a second (a testing hook makes the
-- second 0 ms here, and the quarter second between lines 0 ms), cleared at
-- the end; never by default. The terminal is a pseudo-terminal of
-- `script` (util-linux), which copies what the child writes to its stdout.
local S = require "support"
local p = require "jobque_profile"

-- A child that records `n` markers and saves them to `path` with `opts`
-- (Lua source), the progress timing set to after_ms, every_ms (nil: the
-- library's own), on a terminal `cols` wide if given: what it wrote to the
-- terminal, and whether it exited 0.
local function child(path, n, opts, after_ms, every_ms, under_script, cols)
  local src = S.tmpfile("progress_child.lua")
  S.write(src, ([[
local T = require("jobque.core")._test
local p = require "jobque_profile"
if %s then T.progress_timing(%d, %d) end
local m = p.profile_marker_id("m")
p.profile_start(%d)
for i = 1, %d do p.profile_marker(m, i) end
p.profile_stop()
local ok, err = p.profile_save(%q, %s)
if not ok then io.stderr:write(err, "\n") os.exit(3) end
io.stdout:write("saved\n")
]]):format(tostring(after_ms ~= nil), after_ms or 0, every_ms or 0, n, n, path, opts))
  local run = ("LUA_PATH='lua/?.lua;;' LUA_CPATH='%s' %s '%s'"):format(package.cpath, S.lua, src)
  local out = S.tmpfile("progress_out.txt")
  if cols then run = ("stty cols %d; %s"):format(cols, run) end -- the pseudo-terminal's width
  local cmd = under_script and ("script -qec \"%s\" /dev/null >'%s' 2>&1"):format(run, out)
                            or ("%s >'%s' 2>&1"):format(run, out)
  local ok = os.execute(cmd)
  return S.read(out), ok
end

-- The progress lines in what a terminal got: {share, size text} each.
local function lines(text)
  local got = {}
  for share, size in text:gmatch("\rjobque_profile: saving [^\r]-: (%d+)%% of ([%d.]+ %a+)\27%[K") do
    got[#got + 1] = {tonumber(share), size}
  end
  return got
end

describe("profile_save's progress line", function()
  it("shows the share written and the file's size on a terminal, growing, then clears it", function()
    local path = S.tmpfile("progress.json")
    local text, ok = child(path, 200000, "{progress = true}", 0, 0, true)
    assert.is_true(ok, text)
    local got = lines(text)
    assert.is_true(#got >= 2, "fewer than two progress lines in: " .. text)
    for i = 2, #got do
      assert.is_true(got[i][1] >= got[i - 1][1], "the share went back: " .. text)
    end
    assert.is_true(got[#got][1] <= 100)
    assert.truthy(got[1][2]:find(" MB$"), got[1][2]) -- a 200,000-marker JSON is some MB
    -- the last line is cleared before the child goes on
    local clear = text:find("\r\27[K", 1, true)
    local last_line = select(2, text:gsub("\rjobque_profile", ""))
    assert.truthy(clear, "the line was not cleared")
    assert.truthy(text:find("\r\27%[Ksaved"), "no clearing right before the child's next output: " .. text)
    assert.are.equal(#got, last_line)
    local _, markers = S.read(path):gsub('"name":"m"', "")
    assert.are.equal(200000 + 1, markers) -- the file is whole: every marker, and the legend's kind
  end)

  it("prints nothing with stderr to a file, nor when not asked, nor for a save under a second", function()
    local path = S.tmpfile("quiet.json")
    local text, ok = child(path, 200000, "{progress = true}", 0, 0, false)
    assert.is_true(ok, text)
    assert.are.equal("saved\n", text)
    text, ok = child(path, 200000, "nil", 0, 0, true)
    assert.is_true(ok, text)
    assert.are.equal("saved\r\n", text)
    text, ok = child(path, 1000, "{progress = true}", nil, nil, true) -- the library's own second
    assert.is_true(ok, text)
    assert.are.equal("saved\r\n", text)
  end)

  it("shows a path's control bytes as '?': nothing in it reaches the terminal as an escape", function()
    local path = S.tmpfile("odd\27[31m\nname.json")
    local text, ok = child(path, 200000, "{progress = true}", 0, 0, true)
    assert.is_true(ok, text)
    assert.truthy(text:find("saving [^\r]-odd%?%[31m%?name%.json: %d+%% of"), text)
    assert.is_nil(text:find("\27[31m", 1, true))
  end)

  it("fits one row of the terminal: a long path is cut at its start, so that \"\\r\" can rewrite and clear it",
     function()
    -- a line wider than the terminal wraps: "\r" then goes back to its last row only, and each
    -- update (and the clearing) leaves the rows above it on the screen
    local name = ("n"):rep(200) .. ".json"
    local path = S.tmpfile(name)
    local text, ok = child(path, 200000, "{progress = true}", 0, 0, true, 60)
    assert.is_true(ok, text)
    local shown = 0
    for line in text:gmatch("\r(jobque_profile: [^\r]-)\27%[K") do
      shown = shown + 1
      assert.is_true(#line <= 59, ("%d columns on a terminal 60 wide: %q"):format(#line, line))
      assert.truthy(line:find("^jobque_profile: saving %.%.%.n+%.json: %d+%% of [%d.]+ %a+$"), line)
    end
    assert.is_true(shown >= 2, text)
  end)

  it("shows C1 controls (raw, or as UTF-8) and bytes of no valid UTF-8 as '?', other UTF-8 as it is", function()
    -- U+009B (C2 9B in UTF-8) is CSI on terminals that take C1 controls, as a raw 9B byte is on
    -- 8-bit ones: either would start an escape sequence from the path
    local path = S.tmpfile("c1\xC2\x9B2J-raw\x9B31m-bad\xFF\xC3-\xC3\xA9t\xC3\xA9.json")
    local text, ok = child(path, 200000, "{progress = true}", 0, 0, true)
    assert.is_true(ok, text)
    assert.truthy(text:find("c1?2J-raw?31m-bad??-\xC3\xA9t\xC3\xA9.json: ", 1, true), text)
    assert.is_nil(text:find("\x9B", 1, true), text:sub(1, 300))
    assert.is_nil(text:find("\xFF", 1, true))
  end)

  it("of a save that fails stops with it, and is cleared before the error is printed", function()
    -- /dev/full fails the first write (at the first 1 MiB of some 18 MB): the writer used to go on
    -- formatting the whole session, the line counting up to 100% of a file that was never written
    local text, ok = child("/dev/full", 200000, "{progress = true}", 0, 0, true)
    assert.is_falsy(ok, text) -- the child's exit 3
    local got = lines(text)
    assert.is_true(#got >= 1, text)
    for _, l in ipairs(got) do
      assert.is_true(l[1] < 50, "the line went on after the failure: " .. text)
    end
    assert.truthy(text:find("\r\27[Kcannot write trace to '/dev/full': No space left on device", 1, true), text)
  end)

  it("is a boolean option, named in the list of known ones", function()
    p.profile_start(8)
    p.profile_stop()
    local path = S.tmpfile("opt.json")
    local ok, err = pcall(p.profile_save, path, {progress = "yes"})
    assert.is_false(ok)
    assert.are.equal("bad argument #2 to 'jobque_profile.profile_save' (progress must be a boolean, got string)",
                     err)
    ok, err = pcall(p.profile_save, path, {progres = true})
    assert.is_false(ok)
    assert.truthy(err:find("profile_save: unknown option 'progres' (known: format, progress)", 1, true), err)
  end)
end)
