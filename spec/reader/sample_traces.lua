-- A hand-written trace with CPU samples, for the flame, report and
-- speedscope specs (its figures are worked out by hand there); and a
-- session saved by the library with samples put by hand (saved()).
--
-- The frame tree (ids as in the file):
--   1 main chunk (job.lua)
--   2   run (job.lua:10)
--   3     heavy (job.lua:20)
--   6       sort [C]
--   4     rec (job.lua:30)
--   5       rec (job.lua:30)      (recursion: the same function twice)
--   8     decode (job.lua:40)
--   7 [copy in]                   (a root of its own, category runtime)
-- Nine samples on three lanes (session 0 .. 100 us, 10 kHz: period 100 us):
--   i  ts  lane (tid)   sf  weight  category     job  span  line
--   1  10  worker 1 (1)  3  1200    attention    17   3     21
--   2  20  worker 1 (1)  6   300    attention    17   -     22
--   3  30  worker 1 (1)  5  2050    mlp          18   -     31
--   4  90  worker 1 (1)  8    20    sample       22   -     42
--   5  40  worker 2 (2)  3   100    attention    19   -     25
--   6  50  worker 2 (2)  4   700    mlp          20   -     32
--   7  60  worker 2 (2)  7    50    mlp          20   -     -
--   8  80  worker 2 (2)  8  1000    embed        21   -     41
--   9  70  caller (3)    2   400    no category  -    -     11
-- Span 3 is a "sample + decode" span (a piece on worker 1, 5 .. 15 us).
local M = {}

local FRAMES = [[
"stackFrames":{
"1":{"name":"main chunk (job.lua)","category":"lua"},
"2":{"name":"run (job.lua:10)","category":"lua","parent":"1"},
"3":{"name":"heavy (job.lua:20)","category":"lua","parent":"2"},
"4":{"name":"rec (job.lua:30)","category":"lua","parent":"2"},
"5":{"name":"rec (job.lua:30)","category":"lua","parent":"4"},
"6":{"name":"sort [C]","category":"C","parent":"3"},
"7":{"name":"[copy in]","category":"runtime"},
"8":{"name":"decode (job.lua:40)","category":"lua","parent":"2"}},
"samples":[
{"tid":1,"ts":10.000,"sf":"3","weight":1200,"name":"attention","args":{"job":17,"span":3,"line":21}},
{"tid":1,"ts":20.000,"sf":"6","weight":300,"name":"attention","args":{"job":17,"line":22}},
{"tid":1,"ts":30.000,"sf":"5","weight":2050,"name":"mlp","args":{"job":18,"line":31}},
{"tid":1,"ts":90.000,"sf":"8","weight":20,"name":"sample","args":{"job":22,"line":42}},
{"tid":2,"ts":40.000,"sf":"3","weight":100,"name":"attention","args":{"job":19,"line":25}},
{"tid":2,"ts":50.000,"sf":"4","weight":700,"name":"mlp","args":{"job":20,"line":32}},
{"tid":2,"ts":60.000,"sf":"7","weight":50,"name":"mlp","args":{"job":20}},
{"tid":2,"ts":80.000,"sf":"8","weight":1000,"name":"embed","args":{"job":21,"line":41}},
{"tid":3,"ts":70.000,"sf":"2","weight":400,"name":"no category","args":{"line":11}}],
]]

local EVENTS = [[
{"traceEvents":[
{"ph":"M","pid":1,"name":"process_name","args":{"name":"jobque_profile"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"worker 1"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"worker 2"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"caller"}},
{"ph":"X","pid":1,"tid":1,"ts":5.000,"dur":20.000,"name":"attention","cat":"attention","args":{"job":17}},
{"ph":"X","pid":1,"tid":1,"ts":5.000,"dur":10.000,"name":"sample + decode","cat":"sample + decode",
 "args":{"span":3,"job":17,"piece":1}},
{"ph":"X","pid":1,"tid":1,"ts":25.000,"dur":10.000,"name":"mlp","cat":"mlp","args":{"job":18}},
{"ph":"X","pid":1,"tid":2,"ts":35.000,"dur":50.000,"name":"mlp","cat":"mlp","args":{"job":20}}
],
]]

local META = [[
"jobqueProfile":{"version":1,"clock":"tsc","pid":1,"eventsPerLane":1024,"durationUs":100.000,"startUs":0.000,
"stopUs":100.000,"lostEvents":0,"lanes":3,
%s"laneInfo":[
{"tid":1,"name":"worker 1","role":"worker","queue":1,"recorded":4,"dropped":0%s},
{"tid":2,"name":"worker 2","role":"worker","queue":1,"recorded":2,"dropped":0%s},
{"tid":3,"name":"caller","role":"caller","recorded":0,"dropped":0%s}],
"categories":[
{"id":1,"name":"attention","color":"#5E96DE"},{"id":2,"name":"mlp","color":"#43B08A"},
{"id":3,"name":"embed","color":"#AC82E4"},{"id":4,"name":"sample","color":"#C39536"}],
"markers":[]}}
]]

local SAMPLING = '"sampling":{"hz":10000,"periodNs":100000,"clock":"thread-cpu","depth":64,"samples":9,'
                 .. '"signals":9,"ticks":5820},\n'

--- The trace's text; without = true: the same trace with no samples at all.
function M.text(without)
  if without then return EVENTS .. META:format("", "", "", "") end
  return EVENTS .. FRAMES .. META:format(SAMPLING,
    ',"samples":4,"sampleWeight":3570,"samplesSkipped":{"userHook":0,"tableFull":0}',
    ',"samples":4,"sampleWeight":1850,"samplesSkipped":{"userHook":0,"tableFull":0}',
    ',"samples":1,"sampleWeight":400,"samplesSkipped":{"userHook":0,"tableFull":0}')
end

local MAIN = {"main chunk (job.lua)", "lua"}
local HEAVY = {"heavy (job.lua:12)", "lua"}
local REP = {"rep [C]", "C"}
local LIGHT = {"light (job.lua:40)", "lua"}

--- A saved session's path: on the caller, heavy (2 periods, job 7, "flame work"),
-- heavy > rep [C] (3, job 7, "flame work"), light inside a "decode part"
-- span (5, no job, no category); on the worker, heavy (1, job 1, "flame
-- other"). 1 ms periods.
function M.saved()
  local p = require "jobque_profile"
  local T = require("jobque.core")._test
  local work, other = p.profile_category("flame work"), p.profile_category("flame other")
  local part = p.profile_category("decode part")
  p.profile_start(1000)
  T.sampling_set({hz = 1000, depth = 64, period_ns = 1000000, signals = 4, ticks = 11})
  T.put_sample({MAIN, HEAVY}, {line = 13, weight = 2, job = 7, tag = work})
  T.put_sample({MAIN, HEAVY, REP}, {line = 14, weight = 3, job = 7, tag = work})
  p.profile_begin(part)
  T.put_sample({MAIN, LIGHT}, {line = 41, weight = 5})
  p.profile_end()
  require("jobque").with_job_que({workers = 1}, function(q)
    q:submit(function()
      require("jobque.core")._test.put_sample({{"main chunk (job.lua)", "lua"}, {"heavy (job.lua:12)", "lua"}},
                                              {line = 13, weight = 1, job = 1, tag = other})
    end):wait()
  end)
  p.profile_stop()
  local _, _, path = require("support").save(p)
  return path
end

return M
