-- The seed page's example in Lua: a category, a marker kind, four tokens.
--
--   lua5.4 examples/tokens.lua [trace.json]
--
-- Until the job queue lands (`require "jobque"`, with_job_que), the caller
-- does each token's "heavy op" work itself, so the trace shows one lane with
-- a token marker at each unit boundary.
local p = require "jobque_profile"

local out = arg[1] or "trace.json"

local heavy = p.profile_category("heavy op")      -- auto id + palette colour
local tok = p.profile_marker_id("token")
p.profile_start(65536)
for i = 0, 3 do
  p.profile_marker(tok, i)                          -- unit boundary
  p.profile_tag(heavy)
  local x = 0                                       -- ... the token's work ...
  for k = 1, 300000 do x = x + k % 7 end
end
p.profile_stop()

local ok, err = p.profile_save(out)                -- open in Perfetto
if not ok then
  io.stderr:write("tokens: ", err, "\n")
  os.exit(1)
end
local dir = os.getenv("PWD")
local where = out:sub(1, 1) == "/" and out or ((dir and dir .. "/" or "") .. out)
print(("wrote %s: 4 token markers on the caller lane, category 'heavy op' (id %d)"):format(where, heavy))
print("open it: go to https://ui.perfetto.dev, choose 'Open trace file' and pick that file;")
print("the token markers sit on the global instant track at the top, the lane is 'caller'.")
print("the category and marker tables are under the file's \"jobqueProfile\" key.")
