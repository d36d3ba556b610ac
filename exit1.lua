-- script ends (or os.exit) without profile_stop, queues open, workers busy & suspended, 10 kHz
local MODE = arg[1] or "end"
local p = require "jobque_profile"
local jobque = require "jobque"
p.profile_start(65536, {sample_hz = 10000})
local q = jobque.new{workers = 2}
local q2 = jobque.new{workers = 0}
for i = 1, 8 do
  q:submit(function() local s = 0 for k = 1, 5e6 do s = s + k end return s end)
end
local blocker = q:submit(function() local s = 0 for k = 1, 2e7 do s = s + k end return s end)
q:submit(function(b) return b:wait() end, blocker) -- suspended awaiting
q2:submit(function() return 1 end)
local s = 0 for k = 1, 1e6 do s = s + k end
if MODE == "exit" then os.exit(0)
elseif MODE == "exitclose" then os.exit(0, true)
elseif MODE == "error" then error("boom")
end
