-- The scratch copy shared by the two mutation runners (spec/mutate.lua, the
-- hand list, and spec/mutate_random.lua, the generated mutants): a copy of
-- the checkout's tracked files as they are in the working tree, its build
-- and its spec runs. The working tree is never written to.
local M = {}

M.LUA = os.getenv("LUA") or "lua5.4"
M.BUSTED = "/usr/bin/busted"
-- JQ_HEAVY_LOCK=/tmp/jq-heavy.lock: the heavy steps (a full build, a spec
-- run said to be heavy) take that lock (flock) each for itself, so that a
-- long run shares a busy machine by turns.
local LOCK = os.getenv("JQ_HEAVY_LOCK")

function M.sh_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Runs a shell command: true when it exits 0, and its exit code.
function M.run(cmd)
  local ok, _, code = os.execute(cmd)
  return ok == true, code
end

function M.read(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("a")
  f:close()
  return s
end

function M.write(path, text)
  local f = assert(io.open(path, "wb"))
  assert(f:write(text))
  assert(f:close())
end

-- A new scratch copy: {dir = its path, q = the path quoted for sh}.
-- `tag` names it in /tmp.
function M.new(tag)
  local h = assert(io.popen("mktemp -d /tmp/jobque-" .. tag .. ".XXXXXX"))
  local dir = h:read("l")
  h:close()
  assert(dir and dir ~= "", tag .. ": mktemp failed")
  local s = setmetatable({dir = dir, q = M.sh_quote(dir), log = dir .. "/build.log"}, {__index = M})
  M.run("chmod 0755 " .. s.q) -- a spec saves as another user (nobody) from here
  if not M.run("git ls-files -z | tar --null -T - -cf - | tar -xf - -C " .. s.q) then
    s:cleanup()
    error(tag .. ": could not copy the checkout to " .. dir)
  end
  -- The npm packages the consumer checks need (spec/record/consumers_spec.lua), not tracked.
  if not M.run("test -d node_modules && ln -s \"$PWD/node_modules\" " .. s.q .. "/node_modules") then
    s:cleanup()
    error(tag .. ": no node_modules here for spec/record/consumers_spec.lua: run `npm ci` first")
  end
  return s
end

function M:cleanup()
  M.run("rm -rf " .. self.q)
end

local function locked(cmd, heavy)
  if not LOCK or not heavy then return cmd end
  return ("flock %s sh -c %s"):format(M.sh_quote(LOCK), M.sh_quote(cmd))
end

-- Builds the copy (incrementally after the first time: only the first
-- build is heavy); true when it built. The build's output goes to self.log.
function M:build()
  local heavy = not self.built
  self.built = true
  local ql = M.sh_quote(self.log)
  return M.run(locked(("cd %s && cmake -S . -B build -DJOBQUE_TESTING=ON >%s 2>&1 && cmake --build build -j2 >>%s 2>&1")
    :format(self.q, ql, ql), heavy))
end

-- The spec files of the plain suite, in the copy, sorted by name.
function M:spec_files()
  local out = {}
  local p = assert(io.popen("cd " .. self.q .. " && ls spec/*_spec.lua spec/*/*_spec.lua"))
  for f in p:lines() do out[#out + 1] = f end
  p:close()
  table.sort(out)
  return out
end

-- Runs one spec file in the copy under `timeout` seconds: true when it
-- passes, and the exit code (124: it ran out of time). Its output goes to
-- spec.log in the copy. `extra`: more busted options; `heavy`: take the
-- lock.
function M:spec_passes(file, timeout, extra, heavy)
  return M.run(locked(("cd %s && timeout -k 5 %d env JQ_BUILD=build %s %s %s%s >%s 2>&1")
    :format(self.q, timeout, M.LUA, M.BUSTED, extra and (extra .. " ") or "", file,
      M.sh_quote(self.dir .. "/spec.log")), heavy))
end

return M
