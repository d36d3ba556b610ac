-- The docs cannot drift: every public function of both modules is
-- documented on its page, every runnable Lua example in README.md,
-- CONTRIBUTING.md and docs/*.md runs (and prints what its output block
-- says), every other Lua example at least compiles, and every key, name
-- and category the writer puts in a saved trace is in docs/trace-format.md.
local S = require "support"

local root = assert(io.popen("pwd")):read("l")
local build = os.getenv("JQ_BUILD") or "build"
if build:sub(1, 1) ~= "/" then build = root .. "/" .. build end

local function doc_files()
  local files = {"README.md", "CONTRIBUTING.md"}
  local h = assert(io.popen("ls docs/*.md"))
  for path in h:lines() do files[#files + 1] = path end
  h:close()
  return files
end

local function read_doc(path)
  return S.read(root .. "/" .. path)
end

-- The fenced code blocks of a Markdown text: {info =, code =, line =,
-- output =} where output is the text of an ```output block that follows
-- (after blank lines only), if there is one.
local function code_blocks(text)
  local blocks, cur, pending = {}, nil, nil
  local n = 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    if cur then
      if line:match("^(`+)%s*$") == cur.fence then
        local code = table.concat(cur.lines, "\n") .. "\n"
        if cur.info == "output" and pending then
          pending.output = code
        elseif cur.info ~= "output" then
          blocks[#blocks + 1] = {info = cur.info, code = code, line = cur.line}
          pending = blocks[#blocks]
        end
        if cur.info == "output" then pending = nil end
        cur = nil
      else
        cur.lines[#cur.lines + 1] = line
      end
    else
      local fence, info = line:match("^(```+)%s*(.-)%s*$")
      if fence then
        cur = {info = info, lines = {}, line = n, fence = fence}
      elseif not line:match("^%s*$") then
        pending = nil
      end
    end
  end
  assert(cur == nil, "a code block opened at line " .. (cur and cur.line or 0) .. " is never closed")
  return blocks
end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Runs `code` as a script in a fresh, empty directory, with the checkout's
-- modules and the build's core on the paths; returns the exit status,
-- stdout and stderr.
local function run_block(name, code)
  local dir = S.tmpfile(name)
  assert(os.execute("mkdir -p " .. shell_quote(dir)))
  S.write(dir .. "/example.lua", code)
  local cmd = ("cd %s && LUA_PATH=%s LUA_CPATH=%s %s example.lua 2>stderr.txt"):format(
    shell_quote(dir), shell_quote(root .. "/lua/?.lua;;"), shell_quote(build .. "/?.so;;"), S.lua)
  local h = assert(io.popen(cmd))
  local out = h:read("a")
  local _, _, code_ = h:close()
  return code_, out, S.read(dir .. "/stderr.txt")
end

describe("the documentation", function()
  local files = doc_files()

  it("has the pages README.md points to, and a README of at most 10 KB", function()
    local readme = read_doc("README.md")
    assert.is_true(#readme <= 10240, "README.md is " .. #readme .. " bytes")
    for _, page in ipairs({"docs/queue.md", "docs/profiler.md", "docs/trace-format.md", "docs/cli.md",
                           "docs/internals.md", "docs/benchmarks.md", "CONTRIBUTING.md"}) do
      assert.truthy(readme:find(page, 1, true), "README.md does not point to " .. page)
      assert.truthy(io.open(root .. "/" .. page), page .. " is missing")
    end
  end)

  it("runs every runnable Lua example and checks what it prints", function()
    local ran = 0
    for _, path in ipairs(files) do
      for _, b in ipairs(code_blocks(read_doc(path))) do
        if b.info == "lua run" then
          local where = ("%s:%d"):format(path, b.line)
          local code, out, err = run_block(path:gsub("[/.]", "-") .. "-" .. b.line, b.code)
          assert.are.equal(0, code, where .. " failed:\n" .. err .. out)
          if b.output then
            assert.are.equal(b.output, out, where .. " printed something else than its output block")
          end
          ran = ran + 1
        end
      end
    end
    assert.is_true(ran >= 8, "only " .. ran .. " runnable examples")
  end)

  it("has only Lua examples that compile", function()
    for _, path in ipairs(files) do
      for _, b in ipairs(code_blocks(read_doc(path))) do
        if b.info == "lua" or b.info == "lua run" then
          local ok, err = load(b.code, "=" .. path .. ":" .. b.line)
          assert.truthy(ok, err)
        end
      end
    end
  end)

  it("marks code blocks only with the fences CONTRIBUTING.md describes", function()
    local known = {[""] = true, lua = true, ["lua run"] = true, output = true, sh = true, json = true, text = true}
    for _, path in ipairs(files) do
      for _, b in ipairs(code_blocks(read_doc(path))) do
        assert.truthy(known[b.info], ("%s:%d: unknown fence '```%s'"):format(path, b.line, b.info))
      end
    end
  end)
end)

-- The names a module really has, found at run time.
local function functions_of(t)
  local names = {}
  for k, v in pairs(t) do
    if type(v) == "function" then names[#names + 1] = k end
  end
  table.sort(names)
  return names
end

describe("the API pages", function()
  it("document every function of jobque, its queues and its jobs (docs/queue.md)", function()
    local jobque = require "jobque"
    local page = read_doc("docs/queue.md")
    local q = jobque.new{workers = 0}
    local job = q:submit(function() end)
    local groups = {
      {"jobque.", functions_of(jobque)},
      {"q:", functions_of(getmetatable(q).__index)},
      {"job:", functions_of(getmetatable(job).__index)},
    }
    q:close()
    local count = 0
    for _, g in ipairs(groups) do
      for _, name in ipairs(g[2]) do
        local pattern = "`" .. g[1]:gsub("%.", "%%.") .. name .. "[%(`]"
        assert.truthy(page:find(pattern), "docs/queue.md does not document " .. g[1] .. name)
        count = count + 1
      end
    end
    assert.is_true(count >= 15, "found only " .. count .. " functions")
  end)

  it("document every field of jobque_profile (docs/profiler.md)", function()
    local p = require "jobque_profile"
    local page = read_doc("docs/profiler.md")
    local count = 0
    for name in pairs(p) do
      assert.truthy(page:find("`" .. name .. "[%(`%s]"), "docs/profiler.md does not document " .. name)
      count = count + 1
    end
    assert.is_true(count >= 18, "found only " .. count .. " fields")
  end)
end)

describe("docs/trace-format.md", function()
  local p = require "jobque_profile"

  -- The session of S.record_everything (every kind of event), saved.
  local function record_everything()
    S.record_everything()
    return (S.save(p))
  end

  it("describes every key, name and category of a saved trace", function()
    local page = read_doc("docs/trace-format.md")
    local t = record_everything()
    local function documented(word, what)
      local found = false
      for _, form in ipairs({"`%s`", "`args.%s`", "`id2.%s`", "`%s "}) do
        found = found or page:find(form:format(word), 1, true) ~= nil
      end
      assert.truthy(found,
        ("docs/trace-format.md does not describe %s '%s'"):format(what, word))
    end
    local seen = {}
    local function once(word, what)
      if not seen[what .. word] then
        seen[what .. word] = true
        documented(word, what)
      end
    end
    local categories = {}
    for _, c in ipairs(t.jobqueProfile.categories) do categories[c.name] = true end
    local markers = {}
    for _, m in ipairs(t.jobqueProfile.markers) do markers[m.name] = true end
    for _, ev in ipairs(t.traceEvents) do
      for k, v in pairs(ev) do
        once(k, "the event key")
        if k == "args" or k == "id2" then
          for a in pairs(v) do once(a, "the key of " .. k) end
        end
      end
      if ev.cat and not (ev.args and ev.args.span) then once(ev.cat, "the category") end
      local name = ev.name
      if ev.cat == "submit" then name = name:match("^(submit) ") end
      if not (markers[ev.name] and ev.s == "g") and not (ev.cat == "job" and categories[ev.name])
         and ev.cat ~= "submit" then
        if not (ev.args and (ev.args.span or ev.args.KB)) and not (ev.ph == "C" and ev.name ~= "jobs") then
          once(name, "the event name") -- a span's name is its category's; a counter's is the user's
        end
      end
    end
    for k, v in pairs(t.jobqueProfile) do
      once(k, "the jobqueProfile key")
      if type(v) == "table" then
        for _, item in ipairs(v) do
          for ik in pairs(item) do once(ik, "the key of " .. k) end
        end
      end
    end
    -- What the session above must have produced, or it tested too little.
    for _, want in ipairs({"job", "submit", "copy", "await", "flow", "wait", "jobque", "edge"}) do
      assert.truthy(seen["the category" .. want], "the spec's session recorded no '" .. want .. "' event")
    end
    assert.truthy(seen["the event namewait all"], "no wait all slice")
    assert.truthy(seen["the event nameafter"] and seen["the event namedependency done"], "no `after` arrow")
    assert.truthy(seen["the key of laneInfofullAtUs"], "no lane filled")
    assert.truthy(seen["the event namewaited for"] and seen["the event namewaited for all"], "no wait edges")
    assert.truthy(seen["the key of argson"] and seen["the key of argsqueue"], "no edge's args")
    assert.truthy(seen["the key of laneInfoqueue"], "no worker lane's queue")
    assert.truthy(seen["the key of argserror"], "no error text")
    assert.truthy(seen["the key of argsunclosed"] and seen["the key of argspiece"], "no span left open")
    assert.truthy(seen["the key of argssuspended"] and seen["the key of argsKB"], "no queue counters")
    assert.truthy(seen["the key of argsvalue"], "no counter")
  end)

  it("describes every key of a sampled session's samples", function()
    local page = read_doc("docs/trace-format.md")
    local T = require("jobque.core")._test
    p.profile_start(100)
    T.sampling_set{hz = 1000, depth = 64, period_ns = 1000000, signals = 1, ticks = 1}
    p.profile_begin("docs spec sampled")
    T.put_sample({{"main chunk (docs.lua)", "lua"}, {"f (docs.lua:1)", "lua"}}, {job = 1, line = 2})
    p.profile_end()
    p.profile_stop()
    local doc, text = S.save(p)
    local keys = {}
    local function all(list, what)
      for _, item in pairs(list) do
        for k, v in pairs(item) do
          keys[#keys + 1] = {k, what}
          if k == "args" or k == "samplesSkipped" then
            for a in pairs(v) do keys[#keys + 1] = {(k == "args" and "args." or "") .. a, what .. "." .. k} end
          end
        end
      end
    end
    all(doc.stackFrames, "stackFrames")
    all(doc.samples, "samples")
    all({doc.jobqueProfile.sampling}, "jobqueProfile.sampling")
    all(doc.jobqueProfile.laneInfo, "laneInfo")
    for _, top in ipairs({"stackFrames", "samples", "sampling"}) do keys[#keys + 1] = {top, "the file"} end
    assert.is_true(#keys >= 24, "the sampled session has too few keys: " .. #keys)
    assert.truthy(text:find('"args":{"job":1,"span":1,"line":2}', 1, true), "no sample in a span")
    for _, k in ipairs(keys) do
      assert.truthy(page:find("`" .. k[1] .. "`", 1, true),
                    ("docs/trace-format.md does not describe %s's key '%s'"):format(k[2], k[1]))
    end
  end)

  it("is the page of the version the writer writes", function()
    local t = S.record_n(p, "docs spec version", 16, 1)
    local version = math.tointeger(t.jobqueProfile.version)
    local page = read_doc("docs/trace-format.md")
    assert.truthy(page:find("^# The saved trace file, format version " .. version .. "\n"))
    assert.truthy(page:find("`version` | `" .. version .. "`", 1, true))
  end)
end)

describe("the runnable examples' checker", function()
  it("reads a block inside a longer fence as text", function()
    local blocks = code_blocks("````text\n```lua run\nerror()\n```\n````\n")
    assert.are.equal(1, #blocks)
    assert.are.equal("text", blocks[1].info)
  end)

  it("sees a block's output block, and only one right after it", function()
    local blocks = code_blocks("```lua run\nprint(1)\n```\n\n```output\n1\n```\n"
                               .. "```lua run\nprint(2)\n```\ntext\n```output\n2\n```\n")
    assert.are.equal(2, #blocks)
    assert.are.equal("1\n", blocks[1].output)
    assert.is_nil(blocks[2].output)
  end)

  it("reports a failing example with its error", function()
    local code, _, err = run_block("failing", "error('docs spec: this fails')")
    assert.are_not.equal(0, code)
    assert.truthy(err:find("docs spec: this fails", 1, true))
  end)
end)
