--- jobque_profile: self-describing profiling for jobque (the seed page's API).
--
-- Every function here is a C function of jobque.core itself: calling
-- `profile_marker` costs one Lua-to-C call, with no Lua wrapper in between.
-- See docs/profiler.md for the API and docs/trace-format.md for the saved file.
local core = require "jobque.core"

local M = {}
for name, value in pairs(core.profile) do
  M[name] = value
end

return M
