-- Mutation testing: `make mutate`, or `lua5.4 spec/mutate.lua [--check] [ID...]`
-- from the top of the checkout (--check: only whether each mutant applies).
--
-- Reads the mutants of spec/mutants.txt (one single edit each), copies the
-- checkout's tracked files (as they are in the working tree) into a scratch
-- directory, builds there, and for each mutant: applies it to the scratch
-- copy, rebuilds if it touched src/, runs the plain specs (its own `specs`
-- first, stopping at the first spec file that fails, then the rest), and
-- restores the file. The working tree is never written to.
--
-- Prints one line per mutant: caught (and by which spec file), survived, or
-- not applicable (its text is not found exactly once, or it does not build),
-- then the counts. Exits 0 only when every mutant was caught.
package.path = "spec/?.lua;" .. package.path
local S = require("mutate_scratch")
local SPEC_TIMEOUT = tonumber(os.getenv("MUTATE_TIMEOUT") or "300") -- seconds, per spec file
local read, write = S.read, S.write

-- Counts the plain (not pattern) occurrences of needle in s.
local function count(s, needle)
  local n, at = 0, 1
  while true do
    local i = s:find(needle, at, true)
    if not i then return n end
    n, at = n + 1, i + 1
  end
end

-- Parses the mutants file: blocks of "key: value" lines separated by blank
-- lines; '#' starts a comment line. Keys: id, file, from, to, why, specs.
-- A value is taken literally after "key: " (one space), up to the end of
-- the line; "\n" in from/to stands for a newline, "\\" for a backslash.
local function unescape(v)
  return (v:gsub("\\(.)", function(c)
    if c == "n" then return "\n" end
    if c == "t" then return "\t" end
    if c == "\\" then return "\\" end
    return "\\" .. c
  end))
end

local function parse(path)
  local text = assert(read(path))
  local mutants, cur, lineno = {}, nil, 0
  local function finish()
    if not cur then return end
    for _, k in ipairs {"id", "file", "from", "to", "why"} do
      if not cur[k] then error(("%s:%d: mutant %s has no '%s:' line"):format(path, cur.line, cur.id or "?", k)) end
    end
    mutants[#mutants + 1] = cur
    cur = nil
  end
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    if line:match("^%s*$") then
      finish()
    elseif not line:match("^#") then
      local k, v = line:match("^(%a+): ?(.*)$")
      if not k then error(("%s:%d: expected 'key: value', got %q"):format(path, lineno, line)) end
      cur = cur or {line = lineno}
      if k == "from" or k == "to" then v = unescape(v) end
      if cur[k] then error(("%s:%d: '%s:' given twice"):format(path, lineno, k)) end
      cur[k] = v
    end
  end
  finish()
  local seen = {}
  for _, m in ipairs(mutants) do
    if seen[m.id] then error(("%s:%d: id '%s' used twice"):format(path, m.line, m.id)) end
    seen[m.id] = true
  end
  return mutants
end

local mutants = parse("spec/mutants.txt")
local args = {table.unpack(arg)}
local check_only = args[1] == "--check"
if check_only then table.remove(args, 1) end
if #args > 0 then -- only the mutants named
  local want, picked = {}, {}
  for _, id in ipairs(args) do want[id] = true end
  for _, m in ipairs(mutants) do
    if want[m.id] then picked[#picked + 1] = m; want[m.id] = nil end
  end
  for id in pairs(want) do io.stderr:write("mutate: no mutant with id '", id, "' in spec/mutants.txt\n") os.exit(2) end
  mutants = picked
end

-- The spec file a mutant's `specs:` name stands for: a path as it is, else
-- the spec file of that name in spec/ or one of its folders (nil: none).
local function spec_file(name)
  if name:find("/", 1, true) then return read(name) and name or nil end
  local base = name:match("_spec%.lua$") and name or (name .. "_spec.lua")
  for _, dir in ipairs{"spec/", "spec/queue/", "spec/record/", "spec/reader/"} do
    if read(dir .. base) then return dir .. base end
  end
end

-- --check: only whether each mutant applies to the working tree (no build),
-- and names spec files that exist.
if check_only then
  local bad = 0
  for _, m in ipairs(mutants) do
    local n = count(read(m.file) or "", m.from)
    local why = n ~= 1 and ("its text occurs %d times in %s (must be once)"):format(n, m.file)
    for name in (m.specs or ""):gmatch("[^%s,]+") do
      if not why and not spec_file(name) then why = ("its specs: name no spec file '%s'"):format(name) end
    end
    if why then bad = bad + 1 end
    io.write(("%-14s %-22s %s\n"):format(why and "not applicable" or "applies", m.id, why or m.file))
  end
  io.write(("mutate --check: %d mutants, %d not applicable\n"):format(#mutants, bad))
  os.exit(bad == 0 and 0 or 1)
end

-- The scratch copy: the tracked files as they are in the working tree.
local copy = S.new("mutate")
local scratch = copy.dir
local function cleanup() copy:cleanup() end
local build_log = copy.log
local function build() return copy:build() end

-- Every spec file of the plain suite, slow ones last.
local slow = {["spec/queue/soak_spec.lua"] = true, ["spec/reader/cli_spec.lua"] = true, ["spec/reader/page_view_spec.lua"] = true}
local all_specs = copy:spec_files()
table.sort(all_specs, function(a, b)
  if slow[a] ~= slow[b] then return not slow[a] end
  return a < b
end)

-- Runs one spec file in the scratch copy; true when it passes.
local function spec_passes(file)
  return (copy:spec_passes(file, SPEC_TIMEOUT))
end

-- The order to run the specs in for mutant m: its own, then the rest.
local function order(m)
  local out, seen = {}, {}
  for name in (m.specs or ""):gmatch("[^%s,]+") do
    local f = spec_file(name)
    if f and not seen[f] then out[#out + 1] = f; seen[f] = true end
  end
  for _, f in ipairs(all_specs) do
    if not seen[f] then out[#out + 1] = f; seen[f] = true end
  end
  return out
end

io.write(("mutate: %d mutants, scratch copy %s\n"):format(#mutants, scratch))
io.write("mutate: building the unmutated copy\n")
io.flush()
if not build() then
  io.write(read(build_log) or "", "\n")
  cleanup()
  error("mutate: the unmutated copy does not build")
end
-- The specs the mutants name first must pass unmutated, or a "caught" would mean nothing.
if os.getenv("MUTATE_NO_BASELINE") ~= "1" then
  io.write("mutate: running the plain specs on the unmutated copy\n")
  io.flush()
  for _, f in ipairs(all_specs) do
    if not spec_passes(f) then
      io.write(read(scratch .. "/spec.log") or "", "\n")
      cleanup()
      error("mutate: " .. f .. " fails without any mutant: fix it first")
    end
  end
end

local results = {caught = 0, survived = 0, ["not applicable"] = 0}
local survivors = {}
local dirty = false -- a src/ file was restored since the last build
for i, m in ipairs(mutants) do
  local path = scratch .. "/" .. m.file
  local original = read(path)
  local verdict, by
  if not original then
    verdict, by = "not applicable", "no such file " .. m.file
  else
    local n = count(original, m.from)
    if n ~= 1 then
      verdict, by = "not applicable", ("its text occurs %d times in %s (must be once)"):format(n, m.file)
    else
      local at = original:find(m.from, 1, true)
      write(path, original:sub(1, at - 1) .. m.to .. original:sub(at + #m.from))
      local native = m.file:match("^src/") or m.file:match("^CMakeLists")
      local built = true
      if native or dirty then built = build() end -- (also rebuilds a src/ file restored since)
      if not built and not native then error("mutate: the restored copy no longer builds") end
      dirty = false
      if not built then
        verdict, by = "not applicable", "it does not build"
      else
        verdict = "survived"
        for _, f in ipairs(order(m)) do
          if not spec_passes(f) then
            verdict, by = "caught", f
            break
          end
        end
      end
      write(path, original)
      if native then dirty = true end
    end
  end
  results[verdict] = results[verdict] + 1
  if verdict ~= "caught" then survivors[#survivors + 1] = m end
  io.write(("[%2d/%d] %-14s %-22s %s%s\n"):format(i, #mutants, verdict, m.id, m.file, by and ("  (" .. by .. ")") or ""))
  io.flush()
end
cleanup()

io.write(("mutate: %d caught, %d survived, %d not applicable\n")
  :format(results.caught, results.survived, results["not applicable"]))
for _, m in ipairs(survivors) do
  io.write(("  %s (%s): %s\n"):format(m.id, m.file, m.why))
end
os.exit(#survivors == 0 and 0 or 1)
