-- spec/same_output.lua OUT FILE...: for each trace FILE, what the reading
-- half makes of it, written under OUT (one file per trace and output):
-- the load's message or skipped text, the report's text (whole trace and a
-- range), its JSON and the page. spec/same_output.sh runs it on two
-- revisions and compares the outputs byte for byte.
local trace = require "jobque_profile.trace"
local stats = require "jobque_profile.stats"
local report = require "jobque_profile.report"
local page = package.searchpath("jobque_profile.page", package.path) and require "jobque_profile.page"
  or require "jobque_profile.html"

local out = assert(arg[1], "usage: same_output.lua OUT FILE...")

local function put(name, text)
  local f = assert(io.open(out .. "/" .. name, "wb"))
  f:write(text)
  f:close()
end

local function one(i, path)
  local key = path:match("([^/]+)$") .. "." .. i
  local model, err = trace.load(path)
  if not model then return put(key .. ".load", "error: " .. tostring(err) .. "\n") end
  put(key .. ".load", ("skipped: %s\nevents: %s\n"):format(tostring(trace.skipped_text(model)), model.nevents))
  if model.nevents == 0 then return end
  local f = stats.compute(model)
  put(key .. ".report", report.text(f, model))
  put(key .. ".json", report.json(f))
  local span = model.t1 - model.t0
  local g = stats.compute(model, model.t0 + span / 4, model.t0 + span / 2, 3)
  put(key .. ".range", report.text(g, model))
  put(key .. ".html", page.render(model))
end

for i = 2, #arg do
  local ok, err = pcall(one, i - 1, arg[i])
  if not ok then put(arg[i]:match("([^/]+)$") .. "." .. (i - 1) .. ".raised", tostring(err) .. "\n") end
  collectgarbage()
end
