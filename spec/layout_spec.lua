-- The shape of the source tree: the include graph of src/ has no cycle, no
-- C or Lua function is over 80 lines, no file of src/ or lua/ over 1,500,
-- and no comment (src/, lua/, bench/, examples/) or spec name points at an
-- issue or a review (history belongs in commits). Read from the checkout, nothing built.
local MAX_FUNCTION = 80
local MAX_FILE = 1500

-- Files still being cut down to the limits: each entry lets that file break
-- the size rules (not the others). The list only shrinks.
local SHRINKING = {}
-- Files whose comments still name an issue (the same promise).
local HISTORY = {}

local function files(dir, pattern)
  local list = {}
  local h = assert(io.popen(("find %s -type f | LC_ALL=C sort"):format(dir)))
  for path in h:lines() do
    if path:match(pattern) then list[#list + 1] = path end
  end
  h:close()
  assert(#list > 0, "no files under " .. dir)
  return list
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- C text with comments, strings and character constants blanked (newlines
-- kept, so that line numbers still hold).
local function c_code(text)
  local out, i, n = {}, 1, #text
  while i <= n do
    local c, two = text:sub(i, i), text:sub(i, i + 1)
    if two == "/*" then
      local z = text:find("*/", i + 2, true) or n - 1
      out[#out + 1] = text:sub(i, z + 1):gsub("[^\n]", " ")
      i = z + 2
    elseif two == "//" then
      local z = text:find("\n", i, true) or n + 1
      i = z
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and text:sub(j, j) ~= c do
        j = j + (text:sub(j, j) == "\\" and 2 or 1)
      end
      out[#out + 1] = c .. c
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

-- The top-level brace blocks of C code that follow a ")" (function bodies):
-- {first line, last line} each.
local function c_functions(code)
  local found, depth, line, start, last = {}, 0, 1, nil, ""
  for i = 1, #code do
    local c = code:sub(i, i)
    if c == "\n" then
      line = line + 1
    elseif c == "{" then
      if depth == 0 and last == ")" then start = line end
      depth = depth + 1
    elseif c == "}" then
      depth = depth - 1
      if depth == 0 and start then
        found[#found + 1] = {start, line}
        start = nil
      end
    end
    if not c:match("%s") then last = c end
  end
  return found
end

describe("the source tree's layout", function()
  it("reads C function bodies as a scanner should (a check of the check)", function()
    local code = c_code('static int f(void) {\n  if (x) { y("}"); }\n  /* { */\n}\n'
                        .. 'static const int t[] = {1, 2};\nint g(int a)\n{\n}\n')
    assert.same({{1, 4}, {7, 8}}, c_functions(code))
  end)

  it("has no include cycle in src/ (a .c and its .h count as one module)", function()
    local edges, modules = {}, {}
    for _, path in ipairs(files("src", "%.[ch]$")) do
      local from = path:gsub("^src/", ""):gsub("%.[ch]$", "")
      modules[from] = true
      edges[from] = edges[from] or {}
      for inc in read(path):gmatch('#include "([^"]+)"') do
        local to = inc:gsub("%.[ch]$", "")
        if to ~= from then edges[from][to] = true end
      end
    end
    -- Depth-first, with an explicit stack: a cycle is an edge back to a
    -- module still on the path.
    local state, cycles = {}, {}
    local names = {}
    for m in pairs(modules) do names[#names + 1] = m end
    table.sort(names)
    for _, root in ipairs(names) do
      if not state[root] then
        local stack = {{root, nil}}
        local path = {}
        while #stack > 0 do
          local top = stack[#stack]
          local m = top[1]
          if not state[m] then
            state[m] = "open"
            path[#path + 1] = m
          end
          local nxt = next(edges[m], top[2])
          top[2] = nxt
          if nxt == nil then
            state[m] = "done"
            path[#path] = nil
            stack[#stack] = nil
          elseif state[nxt] == "open" then
            cycles[#cycles + 1] = table.concat(path, " -> ") .. " -> " .. nxt
          elseif not state[nxt] and modules[nxt] then
            stack[#stack + 1] = {nxt, nil}
          end
        end
      end
    end
    assert.same({}, cycles)
  end)

  -- The functions over MAX_FUNCTION lines in the files of `dir` that match
  -- `pattern`; `spans(path)` lists a file's functions as {first, last}.
  local function long_functions(dir, pattern, spans)
    local long = {}
    for _, path in ipairs(files(dir, pattern)) do
      if not SHRINKING[path] then
        for _, f in ipairs(spans(path)) do
          local n = f[2] - f[1] + 1
          if n > MAX_FUNCTION then long[#long + 1] = ("%s:%d: %d lines"):format(path, f[1], n) end
        end
      end
    end
    return long
  end

  it("has no C function over " .. MAX_FUNCTION .. " lines in src/", function()
    assert.same({}, long_functions("src", "%.[ch]$", function(path) return c_functions(c_code(read(path))) end))
  end)

  it("has no Lua function over " .. MAX_FUNCTION .. " lines in lua/", function()
    assert.same({}, long_functions("lua", "%.lua$", function(path)
      local h = assert(io.popen(("luac5.4 -p -l '%s' 2>&1"):format(path)))
      local listing = h:read("a")
      h:close()
      assert.matches("main <", listing, 1, true)
      local spans = {}
      for a, z in listing:gmatch("\nfunction <[^:]*:(%d+),(%d+)>") do
        spans[#spans + 1] = {tonumber(a), tonumber(z)}
      end
      return spans
    end))
  end)

  it("has no file over " .. MAX_FILE .. " lines in src/ or lua/", function()
    local long = {}
    for _, dir in ipairs{"src", "lua"} do
      for _, path in ipairs(files(dir, ".")) do
        local _, n = read(path):gsub("\n", "")
        if n > MAX_FILE and not SHRINKING[path] then long[#long + 1] = ("%s: %d lines"):format(path, n) end
      end
    end
    assert.same({}, long)
  end)

  it("names nothing of the project's history in src/, lua/, bench/, examples/ or the specs' names", function()
    local hits = {}
    local function scan(path, text)
      local n = 0
      for line in (text .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        local l = line:lower()
        if l:find("issue %d") or l:find("%(issue") or l:find("%f[%a]review") then
          hits[#hits + 1] = ("%s:%d: %s"):format(path, n, line)
        end
      end
    end
    for _, dir in ipairs{"src", "lua", "bench", "examples"} do
      for _, path in ipairs(files(dir, ".")) do
        if not HISTORY[path] then scan(path, read(path)) end
      end
    end
    for _, path in ipairs(files("spec", "_spec%.lua$")) do
      if not HISTORY[path] then
        scan(path, path)
        for name in read(path):gmatch('%f[%w]describe%(%s*"([^"]*)"') do scan(path, name) end
        for name in read(path):gmatch('%f[%w]it%(%s*"([^"]*)"') do scan(path, name) end
      end
    end
    assert.same({}, hits)
  end)
end)
