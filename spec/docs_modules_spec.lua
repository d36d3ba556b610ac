-- The docs name the two C modules as they now are: a function of the
-- reader (jobque_profile.reader) is not called a function of jobque.core,
-- README.md's install section lists what `luarocks make` installs (both
-- C modules), and docs/internals.md describes no lua-cjson reader (there is
-- one reader, the C loader). docs/benchmarks.md is a log of past runs, so
-- it may keep the names those runs had.
local S = require "support"

local reader = require "jobque_profile.reader"
local core = require "jobque.core"

local DOCS = {"README.md", "CONTRIBUTING.md", "docs/cli.md", "docs/internals.md", "docs/profiler.md",
              "docs/queue.md", "docs/trace-format.md"}

describe("the docs' names of the C modules", function()
  it("call no function of jobque_profile.reader a function of jobque.core", function()
    local only_reader = {}
    for name, v in pairs(reader) do
      if type(v) == "function" and core[name] == nil then only_reader[#only_reader + 1] = name end
    end
    table.sort(only_reader)
    assert.is_true(#only_reader >= 10, "the reader's functions: " .. table.concat(only_reader, " "))
    local hits = {}
    for _, path in ipairs(DOCS) do
      local n = 0
      for line in (S.read(path) .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        for _, name in ipairs(only_reader) do
          if line:find("core." .. name, 1, true) then hits[#hits + 1] = ("%s:%d: core.%s"):format(path, n, name) end
        end
      end
    end
    assert.same({}, hits)
  end)

  it("list both C modules among what the rock installs (README.md)", function()
    local readme = S.read("README.md")
    local install = assert(readme:match("\n## Install with LuaRocks\n(.-)\n## "))
    assert.matches("jobque/core.so", install, 1, true)
    assert.matches("jobque_profile/reader.so", install, 1, true)
  end)

  it("describe no lua-cjson reader of traces in docs/internals.md", function()
    local hits = {}
    local n = 0
    for line in (S.read("docs/internals.md") .. "\n"):gmatch("([^\n]*)\n") do
      n = n + 1
      if line:find("cjson reader", 1, true) then hits[#hits + 1] = ("docs/internals.md:%d: %s"):format(n, line) end
    end
    assert.same({}, hits)
  end)
end)
