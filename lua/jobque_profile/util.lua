--- jobque_profile.util: the small helpers the trace reader, its figures and
-- its pages share. Plain Lua: it loads neither lua-cjson nor the native
-- core (jobque.core), so the figures and the reports do not either.
--
--   without_gc(f, ...)   f(...) with the garbage collector paused
--   quote(s), json(v)    JSON text of a string (bytes that are not UTF-8 as
--                        U+FFFD), of a value
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

-- JSON: numbers, strings, booleans, lists and string-keyed objects. An
-- empty table is written as a list (every object of ours has fields).
local escapes = {['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
                 ['\r'] = '\\r', ['\t'] = '\\t'}

-- s with each sequence of bytes that is not UTF-8 replaced by U+FFFD: the
-- lead byte and the continuation bytes that could still have made a
-- character with it (the "maximal subpart" the Unicode standard recommends
-- replacing, as TextDecoder does); overlong forms, surrogates and code
-- points beyond U+10FFFF are no characters (utf8.len's strict check).
local function valid_utf8(s)
  if not s:find("[\128-\255]") or utf8.len(s) then return s end
  local out, from, i, n = {}, 1, 1, #s
  while i <= n do
    local c = s:byte(i)
    local need, lo, hi = 0, 0x80, 0xBF
    if c < 0x80 then
      need = -1
    elseif c >= 0xC2 and c <= 0xDF then
      need = 1
    elseif c >= 0xE0 and c <= 0xEF then
      need, lo, hi = 2, c == 0xE0 and 0xA0 or 0x80, c == 0xED and 0x9F or 0xBF
    elseif c >= 0xF0 and c <= 0xF4 then
      need, lo, hi = 3, c == 0xF0 and 0x90 or 0x80, c == 0xF4 and 0x8F or 0xBF
    end
    local k = 1
    while k <= need do
      local d = s:byte(i + k)
      if not d or d < lo or d > hi then break end
      lo, hi, k = 0x80, 0xBF, k + 1
    end
    if need ~= 0 and k > need then -- a character (or an ASCII byte)
      i = i + k
    else
      out[#out + 1] = s:sub(from, i - 1)
      out[#out + 1] = "\239\191\189"
      i = i + k
      from = i
    end
  end
  out[#out + 1] = s:sub(from)
  return table.concat(out)
end

local function quote(s)
  s = valid_utf8(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return escapes[c] or ("\\u%04x"):format(c:byte())
  end) .. '"'
end
M.quote = quote

local function encode(v, out)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = quote(v)
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      out[#out + 1] = "null"
    elseif math.type(v) == "integer" then
      out[#out + 1] = tostring(v)
    else
      local s = ("%.14g"):format(v)
      if tonumber(s) ~= v then s = ("%.17g"):format(v) end -- times since 1970 need more digits
      out[#out + 1] = s
    end
  elseif t == "boolean" then
    out[#out + 1] = tostring(v)
  elseif t == "table" then
    if next(v) == nil or v[1] ~= nil then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        encode(v[i], out)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) == "string" then keys[#keys + 1] = k end
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = quote(k)
        out[#out + 1] = ":"
        encode(v[k], out)
      end
      out[#out + 1] = "}"
    end
  else
    out[#out + 1] = "null"
  end
end

--- `v` as JSON text.
function M.json(v)
  local out = {}
  encode(v, out)
  return table.concat(out)
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
