--- jobque_profile.util: the small helpers the trace reader, its figures and
-- its pages share. It loads the reader's C module (jobque_profile.reader)
-- for its JSON writer, and neither lua-cjson nor jobque.core.
--
--   without_gc(f, ...)   f(...) with the garbage collector paused
--   quote(s), json(v)    JSON text of a string (bytes that are not UTF-8 as
--                        U+FFFD), of a value: the reader's json_text
--                        (src/reader/json_text.c)
--   id_text(v)           a pid or tid as text, the same for the same value
--   PALETTE              the twelve colours profile_category picks from
--   palette_color(name)  the colour profile_category gives `name` when it is
--                        given none (0xRRGGBB); the same hash as the core's
--                        (src/record/session.c: FNV-1a of the name's bytes, modulo 12),
--                        which spec/reader/util_spec.lua checks name by name
--   color_for(name)      "#RRGGBB" for a category a trace registered no colour for
local M = {}

--- Calls f(...) with the garbage collector paused (restarting it after, if it
-- ran): reading a trace builds millions of tables that all stay alive, so a
-- collection in between would only walk them again and again.
function M.without_gc(f, ...)
  local running = collectgarbage("isrunning")
  collectgarbage("stop")
  local res = table.pack(pcall(f, ...))
  if running then collectgarbage("restart") end
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

local json_text = require("jobque_profile.reader").json_text

--- `v` as JSON text: numbers, strings, booleans, lists and string-keyed
-- objects (an empty table is a list), written by json_text.
M.json = json_text

--- The JSON text of the string s (each sequence of bytes that is not UTF-8
-- as U+FFFD).
function M.quote(s)
  if type(s) ~= "string" then error(("quote: string expected, got %s"):format(type(s)), 2) end
  return json_text(s)
end

--- A pid or tid as text: a number as an integer when it is one (lua-cjson
-- reads 1 as 1.0), a string as it is, anything else (an object, null, a
-- boolean) as its JSON, so equal ids give equal text (never an address).
function M.id_text(v)
  local t = type(v)
  if t == "number" then return tostring(math.tointeger(v) or v) end
  if t == "string" then return v end
  return M.json(v)
end

--- The palette, in the core's order (jobque_profile.PROFILE_PALETTE).
M.PALETTE = {0x5e96de, 0x43b08a, 0xac82e4, 0xc39536, 0xe08563, 0x4fc3d0,
             0xd678b4, 0x8385e8, 0x9bb54a, 0xd9675e, 0x5aa6a0, 0xb58f6b}
local PALETTE = M.PALETTE

--- The colour profile_category gives `name` when it is given none.
function M.palette_color(name)
  local h = 2166136261 -- FNV-1a, 32 bits
  for i = 1, #name do
    h = ((h ~ name:byte(i)) * 16777619) & 0xffffffff
  end
  return PALETTE[h % #PALETTE + 1]
end

--- The colour a category gets when the trace did not register one.
function M.color_for(name)
  if name == "submit" then return "#9E9E9E" end
  if name == "wait" then return "#D6D6D6" end
  return ("#%06X"):format(M.palette_color(name))
end

return M
