-- Generated mutation testing: `make mutate-random N=100 [SEED=s]`, or
--   lua5.4 spec/mutate_random.lua [N]            (N mutants, a random seed)
--   JQ_MUTATE_SEED=s lua5.4 spec/mutate_random.lua [N]   (replays seed s)
--   lua5.4 spec/mutate_random.lua --list         (every site, no build)
--   lua5.4 spec/mutate_random.lua SITE...        (only those, e.g. src/reader/page.c:120:9:rel)
-- from the top of the checkout.
--
-- Where spec/mutants.txt (`make mutate`) is a list written by hand, this
-- makes its mutants mechanically over src/**/*.[ch] and lua/**/*.lua: every
-- site of one of these edits is found, skipping comments, strings,
-- preprocessor lines and the JQ_TESTING blocks and files (spec-only code):
--   rel    a relational operator moved across its boundary: < <=, > >=, == != (~=)
--   arith  + -, * /, % * swapped (binary ones), ++ --, += -=, *= /=
--   logic  && ||, and or swapped
--   const  an integer constant +1 or -1 (0 only +1)
--   neg    a condition negated: if (x) -> if (!(x)); if x then -> if not (x) then
--          (also while, elseif, until)
--   drop   a line holding one call or assignment statement dropped (C: left as ";")
-- A site's id is file:line:column:kind (kind const+1 or const-1 for a constant).
-- The sites are shuffled with the seed (printed; JQ_MUTATE_SEED replays
-- it) and taken in that order until N mutants have compiled and changed
-- the code: one that does not build (or a Lua one that does not parse) is
-- not counted, nor one whose built modules (or Lua bytecode, stripped) is
-- byte for byte the unmutated one's (equivalent by construction).
--
-- One scratch copy is built once; a C mutant then costs one object's
-- compile and the link (the unmutated object is put back after it), a
-- header's the objects that include it. Each mutant runs the spec files
-- that cover its file (spec/mutate_map.lua), fastest first, each under a
-- timeout (three times its unmutated time plus 30 s): the first spec file
-- that fails kills it; running out of time also kills it, and is said so.
-- A survivor is printed with its diff. The last line gives the figures.
-- Exits 0 when at most JQ_MUTATE_MAX_SURVIVORS (default: N / 10) survived.
package.path = "spec/?.lua;" .. package.path
local S = require("mutate_scratch")
local MAP = require("mutate_map")
local read, write, run, sh_quote = S.read, S.write, S.run, S.sh_quote

-- ---- finding the sites ----

local function line_of(pos, lines)
  -- lines: the start positions of the lines, ascending
  local lo, hi = 1, #lines
  while lo < hi do
    local mid = (lo + hi + 1) // 2
    if lines[mid] <= pos then lo = mid else hi = mid - 1 end
  end
  return lo, pos - lines[lo] + 1
end

local function line_starts(text)
  local t = {1}
  for p in text:gmatch("()\n") do t[#t + 1] = p + 1 end
  return t
end

-- Longest first.
local C_PUNCT = {"<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
  "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##"}
local LUA_PUNCT = {"...", "..", "==", "~=", "<=", ">=", "//", "::", "<<", ">>"}

-- One past a number that starts at text[i] (a pp-number: digits, letters,
-- dots, and a sign after an exponent letter), for both languages.
local function number_end(text, i)
  local j = i
  while true do
    local d = text:sub(j, j)
    if d:match("[eEpP]") and text:sub(j + 1, j + 1):match("[+-]") then j = j + 2
    elseif d:match("[%w_.]") then j = j + 1
    else break end
  end
  return j
end

-- The longest operator of `list` (longest first) at text[i], or its one character.
local function punct_at(text, i, list)
  for _, p in ipairs(list) do
    if text:sub(i, i + #p - 1) == p then return p end
  end
  return text:sub(i, i)
end

-- C tokens: {t = text, pos = start, kind = "id"|"num"|"str"|"op", nl = first on
-- its line, skip = in a JQ_TESTING block}. Comments and preprocessor lines
-- are dropped; #if blocks naming JQ_TESTING (both branches) are marked skip.
local function c_tokens(text)
  local toks, i, n = {}, 1, #text
  local at_line_start = true
  local stack = {} -- per open #if: whether it names JQ_TESTING
  local testing = 0
  while i <= n do
    local c = text:sub(i, i)
    if c == "\n" then
      at_line_start = true
      i = i + 1
    elseif c:match("%s") then
      i = i + 1
    elseif text:sub(i, i + 1) == "/*" then
      local e = text:find("*/", i + 2, true) or n
      if text:sub(i, e):find("\n") then at_line_start = true end
      i = e + 2
    elseif text:sub(i, i + 1) == "//" then
      i = (text:find("\n", i, true) or n + 1)
    elseif c == "#" and at_line_start then
      local j = i
      repeat -- a preprocessor line, with its continuations
        local e = text:find("\n", j, true) or n + 1
        local cont = text:sub(e - 1, e - 1) == "\\"
        j = e + 1
      until not cont
      local dir = text:sub(i, j - 2)
      local word = dir:match("^#%s*(%a+)")
      if word == "if" or word == "ifdef" or word == "ifndef" then
        local t = dir:find("JQ_TESTING", 1, true) ~= nil
        stack[#stack + 1] = t
        if t then testing = testing + 1 end
      elseif word == "endif" then
        if table.remove(stack) then testing = testing - 1 end
      end
      i = j
      at_line_start = true
    else
      local tok = {pos = i, nl = at_line_start, skip = testing > 0}
      at_line_start = false
      if c == '"' or c == "'" then
        local j = i + 1
        while j <= n do
          local d = text:sub(j, j)
          if d == "\\" then j = j + 2
          elseif d == c then break
          else j = j + 1 end
        end
        tok.t, tok.kind, i = text:sub(i, j), "str", j + 1
      elseif c:match("[%a_]") then
        local s = text:match("^[%w_]+", i)
        tok.t, tok.kind, i = s, "id", i + #s
      elseif c:match("%d") or (c == "." and text:sub(i + 1, i + 1):match("%d")) then
        local j = number_end(text, i)
        tok.t, tok.kind, i = text:sub(i, j - 1), "num", j
      else
        local s = punct_at(text, i, C_PUNCT)
        tok.t, tok.kind, i = s, "op", i + #s
      end
      toks[#toks + 1] = tok
    end
  end
  return toks
end

-- Lua tokens, the same shape (no skip).
local function lua_tokens(text)
  local toks, i, n = {}, 1, #text
  local at_line_start = true
  local function long_bracket(at) -- [==[ ... ]==] starting at `at`: its end, or nil
    local eq = text:match("^%[(=*)%[", at)
    if not eq then return nil end
    local _, e = text:find("]" .. eq .. "]", at, true)
    return e or n
  end
  while i <= n do
    local c = text:sub(i, i)
    if c == "\n" then
      at_line_start = true
      i = i + 1
    elseif c:match("%s") then
      i = i + 1
    elseif text:sub(i, i + 1) == "--" then
      local e = long_bracket(i + 2)
      if e then
        if text:sub(i, e):find("\n") then at_line_start = true end
        i = e + 1
      else
        i = text:find("\n", i, true) or n + 1
      end
    elseif i == 1 and c == "#" then -- a #! line
      i = text:find("\n", i, true) or n + 1
    else
      local tok = {pos = i, nl = at_line_start}
      at_line_start = false
      local e = c == "[" and long_bracket(i)
      if e then
        tok.t, tok.kind, i = text:sub(i, e), "str", e + 1
      elseif c == '"' or c == "'" then
        local j = i + 1
        while j <= n do
          local d = text:sub(j, j)
          if d == "\\" then j = j + 2
          elseif d == c then break
          else j = j + 1 end
        end
        tok.t, tok.kind, i = text:sub(i, j), "str", j + 1
      elseif c:match("[%a_]") then
        local s = text:match("^[%w_]+", i)
        tok.t, tok.kind, i = s, "id", i + #s
      elseif c:match("%d") or (c == "." and text:sub(i + 1, i + 1):match("%d")) then
        local j = number_end(text, i)
        tok.t, tok.kind, i = text:sub(i, j - 1), "num", j
      else
        local s = punct_at(text, i, LUA_PUNCT)
        tok.t, tok.kind, i = s, "op", i + #s
      end
      toks[#toks + 1] = tok
    end
  end
  return toks
end

local REL = {["<"] = "<=", ["<="] = "<", [">"] = ">=", [">="] = ">", ["=="] = "!=", ["!="] = "=="}
local LUA_REL = {["<"] = "<=", ["<="] = "<", [">"] = ">=", [">="] = ">", ["=="] = "~=", ["~="] = "=="}
local ARITH = {["+"] = "-", ["-"] = "+", ["*"] = "/", ["/"] = "*", ["%"] = "*"}
local C_ARITH_MORE = {["++"] = "--", ["--"] = "++", ["+="] = "-=", ["-="] = "+=", ["*="] = "/=", ["/="] = "*="}
local LUA_ARITH_MORE = {["//"] = "*"}
local C_KEYWORDS = {}
for w in ([[auto break case char const continue default do double else enum extern float for goto if
  inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
  void volatile while _Atomic _Bool _Thread_local _Static_assert]]):gmatch("%S+") do C_KEYWORDS[w] = true end
local LUA_KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or repeat return then
  true until while]]):gmatch("%S+") do LUA_KEYWORDS[w] = true end

-- Whether the token before an operator makes it binary (an operand ends there).
local function ends_operand(prev, keywords)
  if not prev then return false end
  if prev.kind == "num" or prev.kind == "str" then return true end
  if prev.kind == "id" then return not keywords[prev.t] end
  return prev.t == ")" or prev.t == "]" or prev.t == "}"
end

-- The integer constant tok.t plus d, in its own notation; nil when not an
-- integer constant (a float) or it would go below 0.
local function bump(t, d, lang)
  local digits, suffix
  if t:match("^0[xX]") then
    digits, suffix = t:match("^0[xX](%x+)(.*)$")
    if not digits or (lang == "c" and not suffix:match("^[uUlL]*$")) or (lang == "lua" and suffix ~= "") then return nil end
    local v = tonumber(digits, 16)
    if not v or v + d < 0 or #digits > 15 then return nil end
    return t:sub(1, 2) .. (digits:match("%l") and "%x" or "%X"):format(v + d) .. suffix
  end
  digits, suffix = t:match("^(%d+)(.*)$")
  if not digits or #digits > 15 then return nil end
  if lang == "c" and not suffix:match("^[uUlL]*$") then return nil end
  if lang == "lua" and suffix ~= "" then return nil end
  if lang == "c" and digits:match("^0%d") then return nil end -- octal
  local v = tonumber(digits)
  if v + d < 0 then return nil end
  return tostring(v + d) .. suffix
end

-- The index of the token closing the bracket opened at toks[i].
local function closing(toks, i)
  local open, close = toks[i].t, ({["("] = ")", ["["] = "]", ["{"] = "}"})[toks[i].t]
  local depth = 0
  for j = i, #toks do
    if toks[j].t == open then depth = depth + 1
    elseif toks[j].t == close then
      depth = depth - 1
      if depth == 0 then return j end
    end
  end
end

-- The sites of one file: {file, pos, len, to, kind, line, col, id}.
local function sites_of(file, text)
  local lang = file:match("%.lua$") and "lua" or "c"
  local toks = lang == "c" and c_tokens(text) or lua_tokens(text)
  local lines = line_starts(text)
  local out = {}
  local function add(pos, len, to, kind)
    local line, col = line_of(pos, lines)
    out[#out + 1] = {file = file, pos = pos, len = len, to = to, kind = kind, line = line, col = col,
      id = ("%s:%d:%d:%s"):format(file, line, col, kind)}
  end
  local keywords = lang == "c" and C_KEYWORDS or LUA_KEYWORDS
  local rel = lang == "c" and REL or LUA_REL
  local more = lang == "c" and C_ARITH_MORE or LUA_ARITH_MORE
  local function first_of_line(k) -- the index of the first token of toks[k]'s line
    while k > 1 and not toks[k].nl do k = k - 1 end
    return k
  end
  local function last_of_line(k)
    while k < #toks and not toks[k + 1].nl do k = k + 1 end
    return k
  end
  local k = 1
  while k <= #toks do
    local tok, prev, nxt = toks[k], toks[k - 1], toks[k + 1]
    local t = tok.t
    if tok.skip then -- luacheck: ignore 542 (JQ_TESTING code: no sites)
    elseif tok.kind == "op" and rel[t] and ends_operand(prev, keywords) then
      add(tok.pos, #t, rel[t], "rel")
    elseif tok.kind == "op" and ARITH[t] and ends_operand(prev, keywords)
      and (lang == "lua" or t ~= "*" or (text:sub(tok.pos - 1, tok.pos - 1):match("%s")
        and text:sub(tok.pos + 1, tok.pos + 1):match("%s"))) then
      -- (C: a `*` only with a space on both sides, so not a pointer's)
      add(tok.pos, #t, ARITH[t], "arith")
    elseif tok.kind == "op" and more[t] then
      add(tok.pos, #t, more[t], "arith")
    elseif lang == "c" and (t == "&&" or t == "||") then
      add(tok.pos, 2, t == "&&" and "||" or "&&", "logic")
    elseif lang == "lua" and tok.kind == "id" and (t == "and" or t == "or") then
      add(tok.pos, #t, t == "and" and "or" or "and", "logic")
    elseif tok.kind == "num" then
      -- not an array's size in a declaration (type name[N])
      local decl = lang == "c" and prev and prev.t == "[" and nxt and nxt.t == "]" and toks[k - 2]
        and toks[k - 2].kind == "id" and toks[k - 3] and (toks[k - 3].kind == "id" and not C_KEYWORDS[toks[k - 3].t]
          or toks[k - 3].t == "*" or C_KEYWORDS[toks[k - 3].t] and toks[k - 3].t ~= "return")
      if not decl then
        for _, d in ipairs {1, -1} do
          local to = bump(t, d, lang)
          if to then add(tok.pos, #t, to, d > 0 and "const+1" or "const-1") end
        end
      end
    elseif lang == "c" and (t == "if" or t == "while") and nxt and nxt.t == "(" then
      local j = closing(toks, k + 1)
      if j then
        local a, b = nxt.pos, toks[j].pos
        add(a, b - a + 1, "(!" .. text:sub(a, b) .. ")", "neg")
      end
    elseif lang == "lua" and (t == "if" or t == "elseif" or t == "while" or t == "until") then
      local stop = ({["if"] = "then", ["elseif"] = "then", ["while"] = "do"})[t]
      local depth, j = 0, k + 1
      while j <= #toks do -- the condition: up to then/do at depth 0 (until: the line's end)
        local u = toks[j].t
        if u == "(" or u == "[" or u == "{" then depth = depth + 1
        elseif u == ")" or u == "]" or u == "}" then depth = depth - 1
        elseif depth == 0 and ((stop and u == stop) or (not stop and toks[j].nl)) then break end
        if u == "function" then j = nil break end
        j = j + 1
      end
      if j and j > k + 1 then
        local a = toks[k + 1].pos
        local last = toks[j - 1]
        local b = last.pos + #last.t - 1
        add(a, b - a + 1, "not (" .. text:sub(a, b) .. ")", "neg")
      end
    end
    -- drop: a whole line that is one call or assignment statement
    if not tok.skip and tok.nl and tok.kind == "id" and not keywords[t] then
      local e = last_of_line(k)
      local ok = true
      local depth, assign = 0, false
      local call
      for j = k, e do
        local u = toks[j].t
        if u == "(" or u == "[" or u == "{" then depth = depth + 1
        elseif u == ")" or u == "]" or u == "}" then depth = depth - 1
          if depth < 0 then ok = false end
        elseif depth == 0 and (u == "=" or more[u] or u == "|=" or u == "&=") then assign = true
        elseif depth == 0 and lang == "lua" and toks[j].kind == "id" and keywords[u] then ok = false
        elseif depth == 0 and lang == "c" and (u == "?" or u == ",") then ok = false end
      end
      if depth ~= 0 then ok = false end
      local before = toks[first_of_line(k) - 1]
      if lang == "c" then
        -- ends with ";"; not a declaration (two names first, or name * name)
        if toks[e].t ~= ";" then ok = false end
        if nxt and (nxt.kind == "id" or (nxt.t == "*" and toks[k + 2] and toks[k + 2].kind == "id")) then ok = false end
        call = toks[e - 1] and toks[e - 1].t == ")"
        if before and not (before.t == ";" or before.t == "{" or before.t == "}" or before.t == ")"
          or before.t == "else" or before.t == ":") then ok = false end
      else
        call = toks[e].t == ")"
        local after = toks[e + 1]
        if before and not (before.kind == "id" and (not keywords[before.t] or before.t == "end" or before.t == "then"
          or before.t == "do" or before.t == "else" or before.t == "repeat" or before.t == "nil"
          or before.t == "true" or before.t == "false")
          or before.kind == "num" or before.kind == "str" or before.t == ")" or before.t == "]"
          or before.t == "}") then ok = false end
        if after and (after.kind == "op" and after.t ~= "::" or after.kind == "str") then ok = false end
        if t == "local" then ok = false end
      end
      if ok and (assign or call) then
        local a, last = tok.pos, toks[e]
        add(a, last.pos + #last.t - a, lang == "c" and ";" or "", "drop")
      end
    end
    k = k + 1
  end
  return out
end

-- The files mutated: src/**/*.c, src/**/*.h (not the spec-only testing*.c) and
-- lua/**/*.lua, as the checkout tracks them, sorted.
local SKIP_FILES = {["src/testing/testing.c"] = true, ["src/testing/testing_codec.c"] = true}
local function mutated_files()
  local out = {}
  local p = assert(io.popen("git ls-files 'src/*.c' 'src/*.h' 'lua/*.lua' 'lua/**/*.lua'"))
  for f in p:lines() do
    if not SKIP_FILES[f] then out[#out + 1] = f end
  end
  p:close()
  table.sort(out)
  local seen, uniq = {}, {}
  for _, f in ipairs(out) do if not seen[f] then seen[f] = true uniq[#uniq + 1] = f end end
  return uniq
end

local function all_sites(root)
  local sites = {}
  for _, f in ipairs(mutated_files()) do
    for _, s in ipairs(sites_of(f, assert(read(root .. "/" .. f)))) do sites[#sites + 1] = s end
  end
  return sites
end

-- ---- the run ----

local args = {table.unpack(arg)}
if args[1] == "--list" then
  local sites = all_sites(".")
  for _, s in ipairs(sites) do
    local text = read(s.file)
    io.write(("%s  %q -> %q\n"):format(s.id, text:sub(s.pos, s.pos + s.len - 1), s.to))
  end
  io.write(("mutate-random --list: %d sites\n"):format(#sites))
  os.exit(0)
end

local only -- site ids given on the command line
local want = tonumber(args[1] or os.getenv("N") or "100")
if args[1] and not tonumber(args[1]) then
  only, want = {}, #args
  for _, id in ipairs(args) do only[id] = true end
end
for f in pairs(MAP) do
  if not read(f) then error("mutate_map.lua: no such file " .. f) end
end
-- JQ_MUTATE_SKIP_SPECS="spec/a_spec.lua ...": a quick look that leaves those
-- out (its figures are not the real ones: every line says so).
local skipped = os.getenv("JQ_MUTATE_SKIP_SPECS") or ""
if skipped ~= "" then
  local skip = {}
  for f in skipped:gmatch("%S+") do skip[f] = true end
  for f, list in pairs(MAP) do
    local kept = {}
    for _, sp in ipairs(list) do if not skip[sp] then kept[#kept + 1] = sp end end
    MAP[f] = kept
  end
  io.write("mutate-random: leaving out ", skipped, " (a quick look, not the real figures)\n")
end

local seed = tonumber(os.getenv("JQ_MUTATE_SEED") or "")
if not seed then
  local r = io.open("/dev/urandom", "rb")
  local b = r and r:read(4) or tostring(os.time())
  if r then r:close() end
  seed = 0
  for i = 1, #b do seed = (seed * 256 + b:byte(i)) % 2147483648 end
end
math.randomseed(seed)

local copy = S.new("mutate-random")
local function fail(msg)
  copy:cleanup()
  io.stderr:write("mutate-random: ", msg, "\n")
  os.exit(2)
end

local sites = all_sites(copy.dir)
if only then
  local picked = {}
  for _, s in ipairs(sites) do if only[s.id] then picked[#picked + 1] = s only[s.id] = nil end end
  for id in pairs(only) do fail("no site " .. id .. " (see --list)") end
  sites = picked
else
  for i = #sites, 2, -1 do -- Fisher-Yates, from the seed
    local j = math.random(i)
    sites[i], sites[j] = sites[j], sites[i]
  end
end
if #sites == 0 then fail("no sites found (run it from the top of the checkout)") end
local files_with_sites = {}
for _, s in ipairs(sites) do
  if not MAP[s.file] then fail("spec/mutate_map.lua names no specs for " .. s.file) end
  files_with_sites[s.file] = true
end

io.write(("mutate-random: seed %d (JQ_MUTATE_SEED=%d replays), %d sites, scratch copy %s\n")
  :format(seed, seed, #sites, copy.dir))
io.write("mutate-random: building the unmutated copy\n")
io.flush()
if not copy:build() then
  io.write(read(copy.log) or "", "\n")
  fail("the unmutated copy does not build")
end
-- The two modules built (a mutant's code is in one of them).
local SOS = {"jobque/core.so", "jobque_profile/reader.so"}
for _, so in ipairs(SOS) do
  assert(run(("cp -p %s/build/%s %s/%s.orig"):format(copy.q, so, copy.q, so:gsub("/", "_"))))
end
local function same_modules()
  for _, so in ipairs(SOS) do
    if not run(("cmp -s %s/build/%s %s/%s.orig"):format(copy.q, so, copy.q, so:gsub("/", "_"))) then return false end
  end
  return true
end
local function remove_modules()
  for _, so in ipairs(SOS) do os.remove(copy.dir .. "/build/" .. so) end
end

-- The unmutated specs: they must pass, and their times set the timeouts.
local spec_time = {}
local function clock()
  local p = assert(io.popen("date +%s.%N"))
  local t = tonumber(p:read("l"))
  p:close()
  return t
end
do
  local needed, list = {}, {}
  for f in pairs(files_with_sites) do
    for _, sp in ipairs(MAP[f]) do
      if not needed[sp] then needed[sp] = true list[#list + 1] = sp end
    end
  end
  table.sort(list)
  io.write(("mutate-random: timing the %d spec files of the map on the unmutated copy\n"):format(#list))
  io.flush()
  -- (all under one turn of JQ_HEAVY_LOCK: this is most of the suite)
  local script = {}
  for _, sp in ipairs(list) do
    script[#script + 1] = ("s=$(date +%%s.%%N); timeout -k 5 1800 env JQ_BUILD=build %s %s %s >spec.log 2>&1 || "
      .. "{ echo FAIL %s; exit 1; }; echo %s $s $(date +%%s.%%N)"):format(S.LUA, S.BUSTED, sp, sp, sp)
  end
  local lock = os.getenv("JQ_HEAVY_LOCK")
  local cmd = ("cd %s && %s sh -c %s"):format(copy.q, lock and ("flock " .. sh_quote(lock)) or "",
    sh_quote(table.concat(script, "\n")))
  local p = assert(io.popen(cmd))
  for line in p:lines() do
    local bad = line:match("^FAIL (%S+)")
    if bad then
      io.write(read(copy.dir .. "/spec.log") or "", "\n")
      fail(bad .. " fails without any mutant: fix it first")
    end
    local sp, a, b = line:match("^(%S+) ([%d.]+) ([%d.]+)$")
    if sp then spec_time[sp] = tonumber(b) - tonumber(a) end
  end
  p:close()
  for _, sp in ipairs(list) do assert(spec_time[sp], "no time for " .. sp) end
end

local function specs_for(file)
  local list = {table.unpack(MAP[file])}
  table.sort(list, function(a, b)
    if spec_time[a] ~= spec_time[b] then return spec_time[a] < spec_time[b] end
    return a < b
  end)
  return list
end

local function diff(file, original, mutated)
  local a, b = copy.dir .. "/mutant.orig", copy.dir .. "/mutant.new"
  write(a, original)
  write(b, mutated)
  local p = assert(io.popen(("diff -U1 --label a/%s --label b/%s %s %s"):format(file, file, sh_quote(a), sh_quote(b))))
  local d = p:read("a")
  p:close()
  return d
end

local function obj_of(file) -- the object of a src/**/*.c file in the build
  local target = file:match("^src/reader/") and "jobque_reader" or file:match("^src/common/") and "jq_common"
    or "jobque_core"
  return copy.dir .. "/build/CMakeFiles/" .. target .. ".dir/" .. file .. ".o"
end

local function luac(path, out)
  return run(("luac5.4 -s -o %s %s >/dev/null 2>&1"):format(sh_quote(out), sh_quote(path)))
end

local n, killed, by_timeout, survived, not_built, same_code = 0, 0, 0, 0, 0, 0
local survivors = {}
local dirty = false -- a module holds a mutant's code: relink before a Lua mutant
for _, s in ipairs(sites) do
  if n >= want then break end
  local path = copy.dir .. "/" .. s.file
  local original = assert(read(path))
  local mutated = original:sub(1, s.pos - 1) .. s.to .. original:sub(s.pos + s.len)
  local verdict, note
  local native = s.file:match("^src/")
  if native then
    local obj = s.file:match("%.c$") and obj_of(s.file)
    if obj then assert(run(("cp -p %s %s.orig"):format(sh_quote(obj), sh_quote(obj)))) end
    run(("touch -r %s %s/mutant.stamp"):format(sh_quote(path), copy.q))
    write(path, mutated)
    if not copy:build() then
      verdict = "not built"
    elseif same_modules() then
      verdict = "same code"
    end
    dirty = true
    s.restore = function()
      write(path, original)
      if obj then -- the unmutated object back, older than nothing it depends on
        run(("touch -r %s/mutant.stamp %s && mv %s.orig %s"):format(copy.q, sh_quote(path), sh_quote(obj), sh_quote(obj)))
      end
      -- (a header: the objects that include it rebuild next time)
    end
  else
    local a, b = copy.dir .. "/a.luac", copy.dir .. "/b.luac"
    write(path, mutated)
    if not luac(path, b) then
      verdict = "not built"
    else
      write(path, original)
      assert(luac(path, a))
      if read(a) == read(b) then verdict = "same code" end
      write(path, mutated)
    end
    if not verdict and dirty then
      remove_modules() -- relink from the unmutated objects
      if not copy:build() then fail("the restored copy no longer builds") end
      dirty = false
    end
    s.restore = function() write(path, original) end
  end
  if verdict == "not built" then
    not_built = not_built + 1
  elseif verdict == "same code" then
    same_code = same_code + 1
  else
    n = n + 1
    verdict = "survived"
    local t0 = clock()
    for _, sp in ipairs(specs_for(s.file)) do
      local limit = math.floor(3 * spec_time[sp] + 30)
      local ok, code = copy:spec_passes(sp, limit, "--no-keep-going", spec_time[sp] > 60)
      if not ok then
        verdict, note = "killed", sp
        if code == 124 or code == 137 then
          verdict, note = "killed", ("%s ran out of time (%d s): a hang"):format(sp, limit)
          by_timeout = by_timeout + 1
        end
        break
      end
    end
    if verdict == "killed" then killed = killed + 1 else survived = survived + 1 end
    io.write(("[%3d/%d] %-8s %s  %q -> %q%s, %.0f s\n"):format(n, want, verdict, s.id,
      original:sub(s.pos, s.pos + s.len - 1), s.to, note and ("  (" .. note .. ")") or "", clock() - t0))
    if verdict == "survived" then
      local d = diff(s.file, original, mutated)
      survivors[#survivors + 1] = s.id
      io.write(d)
    end
    io.flush()
  end
  s.restore()
end
if dirty then remove_modules() end
copy:cleanup()

if #survivors > 0 then
  io.write("mutate-random: survivors (run one again: lua5.4 spec/mutate_random.lua SITE):\n")
  for _, id in ipairs(survivors) do io.write("  ", id, "\n") end
end
io.write(("mutate-random: %d not built and %d with the unmutated code were not counted\n"):format(not_built, same_code))
io.write(("mutate-random: seed %d, %d mutants that compiled, %d killed (%d by a timeout), %d survived%s\n")
  :format(seed, n, killed, by_timeout, survived, skipped ~= "" and (" (without " .. skipped .. ")") or ""))
if n < want then io.write(("mutate-random: only %d sites gave a mutant that compiled, not %d\n"):format(n, want)) end
local max = tonumber(os.getenv("JQ_MUTATE_MAX_SURVIVORS") or "") or n // 10
os.exit(survived <= max and 0 or 1)
