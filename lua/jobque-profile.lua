#!/usr/bin/env lua5.4
-- jobque-profile: reads traces saved by jobque_profile (or any Chrome-trace JSON).
--   jobque-profile report trace.json [--from US --to US] [--top N] [--json]
--   jobque-profile compare a.json b.json [--from US --to US] [--json]
--   jobque-profile html trace.json [-o timeline.html]
--   jobque-profile flame trace.json [--format folded|speedscope] [-o OUT] [filters] [--by G] [--lines]
-- Exit status: 0 done, 1 a file could not be read or written (or an
-- internal error: one line naming the file, "please report"), 2 bad usage.

-- Run from a checkout: find the modules beside this script, and the
-- reader's C module (jobque_profile/reader.so) in build/.
local here = arg and arg[0] and (arg[0]:match("^(.*)/[^/]*$") or ".")
if here and not package.searchpath("jobque_profile.trace", package.path) then
  package.path = here .. "/?.lua;" .. package.path
end
if here and not package.searchpath("jobque_profile.reader", package.cpath) then
  package.cpath = here .. "/../build/?.so;" .. package.cpath
end

local argparse = require "argparse"
local trace = require "jobque_profile.trace"

local parser = argparse("jobque-profile", "Reads traces saved by jobque_profile (or any Chrome-trace JSON).")
  :epilog("Times (--from, --to, the report's starts, the page's axis) are microseconds since the session's "
          .. "start (in a trace without one, its first event); --json gives the file's own timestamps. "
          .. "Exit status: 0 done, 1 a file could not be read or written, 2 bad usage.")
parser:command_target("command")
parser:require_command(true)

local function microseconds(option)
  return function(s)
    local n = tonumber(s)
    if not n or n ~= n then
      return nil, ("%s needs a time in microseconds, not '%s'"):format(option, s)
    end
    if not (n >= -trace.MAX_US and n <= trace.MAX_US) then
      return nil, ("%s needs a time in microseconds within +-%.0e, not '%s'"):format(option, trace.MAX_US, s)
    end
    return n
  end
end

local function times(cmd)
  cmd:option("--from", "Start of the range, in microseconds."):convert(microseconds("--from")):argname("US")
  cmd:option("--to", "End of the range, in microseconds."):convert(microseconds("--to")):argname("US")
end

local report_cmd = parser:command("report", "Busy, wait and idle time per lane, categories, marker units.")
report_cmd:argument("trace", "A saved trace (JSON or .pftrace).")
times(report_cmd)
report_cmd:option("--top", "List the N slowest units of each marker kind, and the N top functions of the CPU "
                  .. "samples (default 10).")
  :argname("N"):convert(function(text)
    local n = math.tointeger(tonumber(text))
    if not n or n < 0 or n > 1e6 then
      return nil, ("--top needs a whole number of units from 0 to 1000000, not '%s'"):format(text)
    end
    return n
  end)
report_cmd:flag("--json", "Print the figures as JSON.")
report_cmd:flag("--quiet", "No progress on stderr while a long trace loads.")

local compare_cmd = parser:command("compare", "Two traces' figures side by side, with differences.")
compare_cmd:argument("a", "The trace before.")
compare_cmd:argument("b", "The trace after.")
times(compare_cmd)
compare_cmd:flag("--json", "Print the rows as JSON.")
compare_cmd:flag("--quiet", "No progress on stderr while a long trace loads.")

local html_cmd = parser:command("html", "Write a self-contained HTML timeline of a trace.")
html_cmd:argument("trace", "A saved trace (JSON or .pftrace).")
html_cmd:option("-o --output", "Where to write the page (default: the trace's name with .html).")
  :argname("FILE")
html_cmd:flag("--quiet", "No progress on stderr while a long trace loads.")
-- For the specs and the bench only: the page reads #do=, #probe= and #bench.
html_cmd:flag("--test-hooks", "Put the test hooks in the page."):hidden(true)

local flame_cmd = parser:command("flame", "Flame graph data of the trace's CPU samples: folded stacks "
                                  .. "(flamegraph.pl, speedscope, Perfetto) or speedscope's JSON.")
flame_cmd:argument("trace", "A saved trace (JSON or .pftrace) recorded with sample_hz.")
times(flame_cmd)
flame_cmd:option("--format", "folded (the default) or speedscope."):choices({"folded", "speedscope"})
  :default("folded"):argname("F")
flame_cmd:option("-o --output", "Where to write (default: stdout)."):argname("FILE")
flame_cmd:option("--category", "Only samples of this category (again for more)."):count("*"):argname("NAME")
flame_cmd:option("--lane", "Only samples of this lane (again for more)."):count("*"):argname("NAME")
flame_cmd:option("--job", "Only samples of this job (again for more)."):count("*"):argname("ID")
  :convert(function(text)
    local n = math.tointeger(tonumber(text))
    if not n or n < 1 then
      return nil, ("--job needs a job id (a whole number from 1: jobs are numbered from 1), not '%s'"):format(text)
    end
    return n
  end)
flame_cmd:option("--span", "Only samples inside a span of this category (again for more)."):count("*")
  :argname("NAME")
flame_cmd:option("--by", "A root frame per category, lane or job."):choices({"category", "lane", "job"})
  :argname("G")
flame_cmd:flag("--lines", "Append the leaf's current line (:LINE).")
flame_cmd:flag("--quiet", "No progress on stderr while a long trace loads.")

-- "--top -1", "--from -50", "--job -1": argparse would read a negative
-- number after a space as an unknown option; give it to the option it
-- follows instead (which says what it needs).
local argv = {}
for i = 1, #arg do
  local prev = argv[#argv]
  if (prev == "--from" or prev == "--to" or prev == "--top" or prev == "--job") and arg[i]:match("^%-[%d.]") then
    argv[#argv] = prev .. "=" .. arg[i]
  else
    argv[#argv + 1] = arg[i]
  end
end

local ok, args = parser:pparse(argv)
if not ok then
  io.stderr:write(parser:get_usage(), "\n\njobque-profile: ", args, "\n(see jobque-profile --help)\n")
  os.exit(2)
end
if args.from and args.to and args.from >= args.to then
  io.stderr:write("jobque-profile: --from must be before --to\n")
  os.exit(2)
end

local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"

-- The files being worked on, for the message of an unexpected error.
local current = {}

-- Progress while a long trace loads: on stderr, only when it is a terminal
-- and --quiet is not given (the native loader reports every 16 MB).
local function progress_for(path)
  if args.quiet then return nil end
  if not require("jobque_profile.reader").stderr_is_tty() then return nil end
  local shown = false
  return function(done, total)
    if done == nil then -- the end: the line is cleared
      if shown then io.stderr:write("\r\27[K") end
      return
    end
    shown = true
    io.stderr:write(("\rjobque-profile: reading %s: %d%% of %.0f MB"):format(path, done * 100 // total, total / 1e6))
  end
end

local function load(path)
  current[#current + 1] = path
  local progress = progress_for(path)
  local model, err = trace.load(path, {progress = progress})
  if progress then progress() end
  if not model then
    io.stderr:write("jobque-profile: ", err, "\n")
    os.exit(1)
  end
  local skipped = trace.skipped_text(model)
  local nsamples = model.nsamples or 0
  local samples_skipped = trace.samples_skipped_text(model)
  if model.nevents == 0 and not (args.command == "flame" and nsamples > 0) then
    -- a report of nothing would read as an idle trace
    io.stderr:write(("jobque-profile: %s: nothing to report: %s%s\n"):format(path,
      skipped and (skipped .. ", none left") or "the trace holds no events",
      nsamples > 0 and ", only samples (jobque-profile flame shows them)"
      or samples_skipped and (", and " .. samples_skipped .. ", none left") or ""))
    os.exit(1)
  end
  if skipped then io.stderr:write(("jobque-profile: warning: %s: %s\n"):format(path, skipped)) end
  if samples_skipped then io.stderr:write(("jobque-profile: warning: %s: %s\n"):format(path, samples_skipped)) end
  -- What the load left behind (columns it replaced by sorting them, about a
  -- third of what it allocated) goes now, for the figures or the page to
  -- reuse: one full cycle over a heap that is mostly arrays is quick.
  collectgarbage()
  -- A range with nothing of the trace in it would read as 100% idle.
  local span = model.t1 - model.t0
  if (args.from and args.from >= span) or (args.to and args.to <= 0) then
    io.stderr:write(("jobque-profile: the range %s .. %s us is outside %s, which runs from 0 to %.3f us "
                     .. "(times count from the session's start)\n")
      :format(args.from and ("%.3f"):format(args.from) or "start", args.to and ("%.3f"):format(args.to) or "end",
              path, span))
    os.exit(2)
  end
  return model
end

-- A time since the session's start (--from, --to) on the file's clock.
local file_time = require("jobque_profile.util").file_time

-- The figures of a model over --from/--to, which count from its session's
-- start; the critical path's steps only for --json's report (the text and
-- compare show sums: a table a step is most of a big trace's figures).
local function figures(model, top)
  local steps = args.command == "report" and args.json or false
  return stats.compute(model, file_time(model, args.from), file_time(model, args.to), top,
                       {steps = steps, all_frames = args.command == "compare"})
end

-- What this command builds stays alive until it exits, so the collector
-- would only walk it again and again: it stays off, and the exit skips
-- freeing the heap object by object (the system takes the memory back).
collectgarbage("stop")

-- Exits 2 when a --category, --lane or --span names what the trace does
-- not have, saying what it has.
local function check_names(model, path)
  local names = require("jobque_profile.samples").names(model)
  local known_cat = {}
  for _, c in ipairs(model.categories or {}) do known_cat[c.name] = true end
  for _, c in ipairs(names.categories) do known_cat[c] = true end
  local function check(given, what, list, known)
    for _, name in ipairs(given or {}) do
      if not known[name] then
        local shown = {}
        for i, x in ipairs(list) do shown[i] = report.shown(x) end
        io.stderr:write(("jobque-profile: no %s \"%s\" in %s (%s)\n"):format(what, report.shown(name), path,
          #shown > 0 and ("it has: " .. table.concat(shown, ", ")) or "it has none"))
        os.exit(2)
      end
    end
  end
  local set = {}
  for _, x in ipairs(names.lanes) do set[x] = true end
  check(args.category, "category", names.categories, known_cat)
  check(args.lane, "lane", names.lanes, set)
  set = {}
  for _, x in ipairs(names.spans) do set[x] = true end
  check(args.span, "span", names.spans, set)
end

-- The filters given, as the command line spelt them (for a message).
local function filters_text()
  local parts = {}
  if args.from then parts[#parts + 1] = ("--from %.3f"):format(args.from) end
  if args.to then parts[#parts + 1] = ("--to %.3f"):format(args.to) end
  for _, k in ipairs{"category", "lane", "job", "span"} do
    for _, v in ipairs(args[k] or {}) do
      parts[#parts + 1] = ("--%s \"%s\""):format(k, report.shown(v))
    end
  end
  return table.concat(parts, " ")
end

-- Writes text (a string, or a list of strings in turn) to stdout, flushed:
-- a stdout that cannot be written (a full disk, /dev/full) is one line on
-- stderr and status 1.
local function say(text)
  local wrote, err = true, nil
  if type(text) == "table" then -- a list of parts, in turn
    for _, part in ipairs(text) do
      wrote, err = io.stdout:write(part)
      if not wrote then break end
    end
  else
    wrote, err = io.stdout:write(text)
  end
  if wrote then wrote, err = io.stdout:flush() end
  if not wrote then
    io.stderr:write(("jobque-profile: cannot write stdout: %s\n"):format(err))
    os.exit(1)
  end
end

-- Exits 2 when `out` (-o, or html's default) is the trace `path` itself
-- (the same file, by device and inode): writing it would destroy the trace.
local function check_output(path, out)
  if out and require("jobque_profile.reader").same_file(path, out) then
    io.stderr:write(("jobque-profile: the output %s is the trace being read (%s): give -o another file\n")
      :format(out, path))
    os.exit(2)
  end
end

-- flame: the samples that pass the filters as folded stacks or speedscope JSON.
local function flame_main()
  local path = args.trace
  check_output(path, args.output)
  local model = load(path)
  if (model.nsamples or 0) == 0 and (model.samples_skipped or 0) > 0 then
    io.stderr:write(("jobque-profile: %s: no samples left (every sample skipped, see the warning)\n"):format(path))
    os.exit(1)
  end
  if (model.nsamples or 0) == 0 then
    io.stderr:write(("jobque-profile: %s: no samples in this trace (record with profile_start(n, {sample_hz = 1000}))\n")
      :format(path))
    os.exit(1)
  end
  check_names(model, path)
  local samples = require "jobque_profile.samples"
  local flame = require "jobque_profile.flame"
  local idx = samples.select(model, {from = args.from, to = args.to, categories = args.category, lanes = args.lane,
                                     jobs = args.job, spans = args.span})
  local opts = {by = args.by, lines = args.lines, name = path:match("[^/]*$")}
  -- the text as parts (a line each), written in turn: never one string
  local parts = #idx > 0 and (args.format == "speedscope" and flame.speedscope_parts or flame.folded_parts)(
    model, idx, opts)
  if not parts or #parts == 0 then
    local given = filters_text()
    io.stderr:write(("jobque-profile: %s: no samples %s\n"):format(path,
      given ~= "" and ("match " .. given) or "weigh enough for a count of 1"))
    os.exit(2)
  end
  if not args.output then
    say(parts)
    return
  end
  local wrote, err = require("jobque_profile.reader").write_file(args.output, parts)
  if not wrote then
    io.stderr:write("jobque-profile: ", err, "\n")
    os.exit(1)
  end
  say(("wrote %s (%s)\n"):format(args.output, report.count_of(#idx, "sample")))
end

local function main()
  if args.command == "flame" then
    flame_main()
  elseif args.command == "report" then
    local model = load(args.trace)
    local f = figures(model, args.top)
    say(args.json and (report.json(f) .. "\n") or report.text(f, model))
  elseif args.command == "compare" then
    local a, b = load(args.a), load(args.b)
    local rows = stats.compare(figures(a), figures(b))
    say(args.json and (report.json(rows) .. "\n") or report.compare_text(rows, args.a, args.b))
  elseif args.command == "html" then
    local out = args.output or (args.trace:gsub("%.json$", "") .. ".html")
    check_output(args.trace, out)
    local model = load(args.trace)
    local wrote, err = require("jobque_profile.page").write(model, out, {test_hooks = args.test_hooks})
    if not wrote then
      io.stderr:write("jobque-profile: ", err, "\n")
      os.exit(1)
    end
    local slices = 0
    for _, lane in ipairs(model.lanes) do slices = slices + lane.n end
    local n_of = report.count_of
    say(("wrote %s (%s, %s, %s): open it in a browser\n"):format(
      out, n_of(#model.lanes, "lane"), n_of(slices, "slice"), n_of(#model.markers, "marker")))
  end
end

-- No input may end in a traceback: an error nobody expected is one line
-- naming the file, and a bug to report.
local ok_main, err_main = pcall(main)
if not ok_main then
  if trace.out_of_memory(err_main) and #current > 0 then -- past reading: the figures or the page
    collectgarbage()
    local bytes = 0
    for _, path in ipairs(current) do
      local f = io.open(path, "rb")
      if f then bytes = bytes + (f:seek("end") or 0) f:close() end
    end
    local doing = ({html = "draw a page of", compare = "compare"})[args.command] or "report on"
    io.stderr:write("jobque-profile: ", trace.out_of_memory_text(table.concat(current, " and "), bytes, doing), "\n")
    os.exit(1)
  end
  local msg = tostring(err_main):match("^[^\n]*")
  io.stderr:write(("jobque-profile: internal error on %s: %s (please report this, with the file)\n")
    :format(#current > 0 and table.concat(current, " and ") or "the command line", msg))
  os.exit(1)
end
io.stdout:flush()
os.exit(0)
