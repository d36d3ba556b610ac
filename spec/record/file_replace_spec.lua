-- How files are written: profile_save, core.write_file and `jobque-profile html -o`
-- replace a regular file atomically, follow a symlink at the target, keep an
-- existing file's mode and owner, write devices and FIFOs in place, and leave
-- no temporary behind, not even when the process is killed mid-write.
local p = require "jobque_profile"
local core = require "jobque.core"
local S = require "support"
local cjson = require "cjson"

local root = io.popen("id -u"):read("l") == "0"

local function sh(cmd)
  local ok = os.execute(cmd)
  assert(ok, "command failed: " .. cmd)
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- A fresh empty directory.
local function fresh_dir(name)
  local dir = S.tmpfile(name or "dir")
  sh("mkdir -p " .. q(dir))
  return dir
end

-- `stat -c FORMAT` of a path (not following a symlink at it).
local function stat(fmt, path)
  return io.popen("stat -c " .. q(fmt) .. " " .. q(path) .. " 2>/dev/null"):read("l")
end

local function kind(path) return stat("%F", path) end

-- The names in a directory, sorted, one string.
local function listing(dir)
  return io.popen("ls -A " .. q(dir)):read("a")
end

local function one_session(name)
  p.profile_start(64)
  p.profile_marker(name, 7)
  p.profile_stop()
end

local function is_trace(text, marker)
  local t = cjson.decode(text)
  return #S.markers(t, marker) == 1
end

local cli = S.cli

describe("profile_save", function()
  it("follows a symlink at the target: the file it points to is replaced, the link stays", function()
    one_session("replace link")
    local dir = fresh_dir()
    S.write(dir .. "/real.json", "old")
    sh("ln -s real.json " .. q(dir .. "/link.json"))
    assert.is_true(p.profile_save(dir .. "/link.json"))
    assert.are.equal("symbolic link", kind(dir .. "/link.json"))
    assert.are.equal("real.json", io.popen("readlink " .. q(dir .. "/link.json")):read("l"))
    assert.is_true(is_trace(S.read(dir .. "/real.json"), "replace link"))
    assert.are.equal("link.json\nreal.json\n", listing(dir))
  end)

  it("follows a chain of symlinks across directories, and a dangling one creates its file", function()
    one_session("replace chain")
    local dir = fresh_dir()
    sh("mkdir " .. q(dir .. "/sub"))
    sh("ln -s sub/second " .. q(dir .. "/first"))          -- relative to dir
    sh("ln -s ../missing.json " .. q(dir .. "/sub/second")) -- relative to sub, dangling
    assert.is_true(p.profile_save(dir .. "/first"))
    assert.are.equal("symbolic link", kind(dir .. "/first"))
    assert.are.equal("symbolic link", kind(dir .. "/sub/second"))
    assert.are.equal("regular file", kind(dir .. "/missing.json"))
    assert.is_true(is_trace(S.read(dir .. "/missing.json"), "replace chain"))
    assert.are.equal("first\nmissing.json\nsub\n", listing(dir))
  end)

  it("fails on a symlink loop and on a symlink to a directory, writing nothing", function()
    one_session("replace loop")
    local dir = fresh_dir()
    sh("ln -s b " .. q(dir .. "/a") .. " && ln -s a " .. q(dir .. "/b"))
    local ok, err, code = p.profile_save(dir .. "/a")
    assert.is_false(ok)
    assert.matches("cannot write trace to '.*/a': Too many levels of symbolic links", err)
    assert.is_number(code)
    sh("mkdir " .. q(dir .. "/d") .. " && ln -s d " .. q(dir .. "/to-dir"))
    ok, err = p.profile_save(dir .. "/to-dir")
    assert.is_false(ok)
    assert.matches("cannot write trace to '.*/to%-dir': it is a directory", err)
    assert.are.equal("", listing(dir .. "/d"))
    assert.are.equal("a\nb\nd\nto-dir\n", listing(dir))
  end)

  it("keeps the mode of the file it replaces", function()
    one_session("replace mode")
    local dir = fresh_dir()
    local path = dir .. "/private.json"
    S.write(path, "old")
    sh("chmod 0600 " .. q(path))
    assert.is_true(p.profile_save(path))
    assert.are.equal("600", stat("%a", path))
    sh("chmod 0640 " .. q(path))
    assert.is_true(p.profile_save(path))
    assert.are.equal("640", stat("%a", path))
    assert.is_true(is_trace(S.read(path), "replace mode"))
  end)

  it("gives a new file the mode 0666 less the umask", function()
    one_session("replace umask")
    local dir = fresh_dir()
    local script = S.tmpfile("umask.lua")
    S.write(script, [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = os.getenv("JQ_BUILD_CPATH")
      local p = require "jobque_profile"
      p.profile_start(4) p.profile_marker("x", 0) p.profile_stop()
      assert(p.profile_save(arg[1]))
    ]])
    sh(("umask 027; JQ_BUILD_CPATH=%s %s %s %s"):format(q(package.cpath), S.lua, script, q(dir .. "/new.json")))
    assert.are.equal("640", stat("%a", dir .. "/new.json"))
  end)

  it("keeps the owner of the file it replaces (as root)", function()
    if not root then return pending("needs root to give a file away") end
    one_session("replace owner")
    local path = fresh_dir() .. "/theirs.json"
    S.write(path, "old")
    sh("chown 65534:65534 " .. q(path) .. " && chmod 0604 " .. q(path))
    assert.is_true(p.profile_save(path))
    assert.are.equal("65534:65534 604", stat("%u:%g %a", path))
  end)

  it("writes a device in place: a full one fails with ENOSPC and stays a device", function()
    if not root then return pending("needs root for mknod") end
    one_session("replace device")
    local dir = fresh_dir()
    -- Private copies of /dev/full and /dev/null: the real ones are shared.
    sh("mknod " .. q(dir .. "/full") .. " c 1 7 && mknod " .. q(dir .. "/null") .. " c 1 3")
    local ok, err, code = p.profile_save(dir .. "/full")
    assert.is_false(ok)
    assert.matches("cannot write trace to '.*/full': No space left on device", err)
    assert.is_number(code)
    assert.are.equal("character special file", kind(dir .. "/full"))
    assert.is_true(p.profile_save(dir .. "/null"))
    assert.are.equal("character special file", kind(dir .. "/null"))
    assert.are.equal("full\nnull\n", listing(dir))
  end)

  it("fails at once on a FIFO nobody reads, and writes into one that has a reader", function()
    one_session("replace fifo")
    local dir = fresh_dir()
    local fifo = dir .. "/pipe"
    sh("mkfifo " .. q(fifo))
    local ok, err, code = p.profile_save(fifo)
    assert.is_false(ok)
    assert.matches("cannot write trace to '.*/pipe': it is a FIFO that no process is reading", err)
    assert.is_number(code)
    -- Opened read-write, the FIFO has a reader (this process) without blocking;
    -- a small trace fits in the pipe's buffer.
    local expect = select(2, S.save(p))
    local reader = assert(io.open(fifo, "r+"))
    assert.is_true(p.profile_save(fifo))
    assert.are.equal(expect, reader:read(#expect))
    reader:close()
    assert.are.equal("fifo", kind(fifo))
    assert.are.equal("pipe\n", listing(dir))
  end)

  it("fails with EPIPE, not a SIGPIPE that kills the process, when the FIFO's reader goes away", function()
    local dir = fresh_dir()
    local fifo = dir .. "/pipe"
    sh("mkfifo " .. q(fifo))
    local m = p.profile_marker_id("replace epipe")
    p.profile_start(100000) -- megabytes: far more than the pipe holds
    for i = 1, 100000 do p.profile_marker(m, i) end
    p.profile_stop()
    -- The reader opens the FIFO (a writer is there, so it does not block),
    -- says so, then reads 100 bytes and exits; this process keeps only a
    -- writer, so the reader is the only one.
    local both = assert(io.open(fifo, "r+"))
    local reader = io.popen("exec 3<" .. q(fifo) .. "; echo ready; head -c 100 <&3 >/dev/null")
    assert.are.equal("ready", reader:read("l"))
    local writer = assert(io.open(fifo, "w"))
    both:close()
    local ok, err, code = p.profile_save(fifo)
    reader:close()
    writer:close()
    assert.is_false(ok)
    assert.matches("cannot write trace to '.*/pipe': Broken pipe", err)
    assert.are.equal(32, code) -- EPIPE
    assert.is_true(p.profile_save(S.tmpfile()), "the process goes on")
  end)

  it("fails with EFBIG, not a SIGXFSZ that kills the process, beyond the file-size limit", function()
    -- A child with a 64 KiB limit (and SIGXFSZ's default action, which ends
    -- the process) saves a larger trace, then writes a larger file.
    local dir = fresh_dir()
    S.write(dir .. "/big.json", "old")
    local script = S.tmpfile("efbig.lua")
    S.write(script, [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = os.getenv("JQ_BUILD_CPATH")
      local core = require "jobque.core"
      local p = require "jobque_profile"
      local m = p.profile_marker_id("big")
      p.profile_start(100000)
      for i = 1, 100000 do p.profile_marker(m, i) end
      p.profile_stop()
      local ok, err, code = p.profile_save(arg[1])
      print(tostring(ok), tostring(err), tostring(code))
      ok, err, code = core.write_file(arg[1], string.rep("x", 100000))
      print(tostring(ok), tostring(err), tostring(code))
      print("alive")
    ]])
    local cmd = ("trap - XFSZ; ulimit -f 64; exec env JQ_BUILD_CPATH=%s %s %s %s"):format(
      q(package.cpath), S.lua, script, q(dir .. "/big.json"))
    local out = io.popen("sh -c " .. q(cmd) .. " 2>&1"):read("a")
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(3, #lines, out)
    assert.matches("^false\tcannot write trace to '.*/big%.json': File too large\t27$", lines[1])
    assert.matches("^nil\t.*big%.json.*File too large\t27$", lines[2])
    assert.are.equal("alive", lines[3])
    assert.are.equal("old", S.read(dir .. "/big.json"))
    assert.are.equal("big.json\n", listing(dir))
  end)

  it("handles names with spaces, quotes and newlines", function()
    one_session("replace odd name")
    local dir = fresh_dir()
    local path = dir .. "/a b'c\nd.json"
    assert.is_true(p.profile_save(path))
    assert.is_true(p.profile_save(path)) -- and replaces it
    assert.is_true(is_trace(S.read(path), "replace odd name"))
    assert.are.equal(1, tonumber(io.popen("ls -A " .. q(dir) .. " | grep -c d.json"):read("l")))
  end)

  it("is not stopped by files planted at predictable temporary names", function()
    one_session("replace planted")
    local dir = fresh_dir()
    local pid = io.open("/proc/self/stat"):read("a"):match("^(%d+)")
    sh(("cd %s && seq 0 2999 | sed 's/^/t.json.tmp-%s-/' | xargs touch"):format(q(dir), pid))
    assert.is_true(p.profile_save(dir .. "/t.json"))
    assert.is_true(is_trace(S.read(dir .. "/t.json"), "replace planted"))
  end)

  it("fails with the system's reason in a directory it cannot write, leaving the file", function()
    one_session("replace ro dir")
    local dir = fresh_dir()
    local path = dir .. "/kept.json"
    S.write(path, "old")
    sh("chmod 0666 " .. q(path) .. " && chmod 0555 " .. q(dir))
    -- As root permissions are not checked: the save runs as nobody.
    local script = S.tmpfile("ro.lua")
    S.write(script, [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = os.getenv("JQ_BUILD_CPATH")
      local p = require "jobque_profile"
      p.profile_start(4) p.profile_marker("x", 0) p.profile_stop()
      local ok, err = p.profile_save(arg[1])
      io.write(tostring(ok), "|", tostring(err))
    ]])
    sh("chmod 0644 " .. q(script))
    local as = root and "setpriv --reuid=65534 --regid=65534 --clear-groups " or ""
    local out = io.popen(("%senv JQ_BUILD_CPATH=%s %s %s %s"):format(as, q(package.cpath), S.lua, script, q(path)))
      :read("a")
    sh("chmod 0755 " .. q(dir))
    assert.matches("^false|cannot write trace to '.*kept%.json': Permission denied$", out)
    assert.are.equal("old", S.read(path))
    assert.are.equal("kept.json\n", listing(dir))
  end)

  -- A child saves a large trace and is killed (SIGKILL) in the middle of
  -- writing it: the save stops for good after its first write (a test
  -- hook), and the child is killed once it is seen, through /proc, with a
  -- file open in `dir` (its temporary, named or anonymous).
  local function killed_save(dir, fallback)
    local script = S.tmpfile("killed.lua")
    S.write(script, [[
      package.path = "lua/?.lua;" .. package.path
      package.cpath = os.getenv("JQ_BUILD_CPATH")
      local core = require "jobque.core"
      local p = require "jobque_profile"
      if arg[2] == "fallback" then core._test.replace_without_tmpfile(true) end
      local m = p.profile_marker_id("big")
      p.profile_start(1000000)
      for i = 1, 1000000 do p.profile_marker(m, i) end
      p.profile_stop()
      core._test.hang_after_write(true)
      p.profile_save(arg[1])
      print("not killed")
    ]])
    local cmd = ([[
      env JQ_BUILD_CPATH=%s %s %s %s %s &
      pid=$!
      until ls -l /proc/$pid/fd 2>/dev/null | grep -qF -- %s; do
        kill -0 $pid 2>/dev/null || { echo "ended before it was seen writing"; exit; }
      done
      kill -9 $pid
      wait $pid
      echo "status $?"]]):format(q(package.cpath), S.lua, script, q(dir .. "/big.json"),
      fallback and "fallback" or "", q(dir .. "/"))
    local out = io.popen("sh -c " .. q(cmd) .. " 2>/dev/null"):read("a")
    assert.are.equal("status 137\n", out)
  end

  it("leaves no file behind when killed mid-save", function()
    local dir = fresh_dir()
    S.write(dir .. "/big.json", "old")
    killed_save(dir)
    assert.are.equal("big.json\n", listing(dir))
    assert.are.equal("old", S.read(dir .. "/big.json"))
  end)

  it("removes the temporary of a save killed without O_TMPFILE at the next save there", function()
    local dir = fresh_dir()
    S.write(dir .. "/big.json", "old")
    S.write(dir .. "/other.jqtmp-1-notours", "not a temporary of ours")
    killed_save(dir, true)
    local left = listing(dir)
    assert.are.equal("old", S.read(dir .. "/big.json"))
    assert.are.equal(3, select(2, left:gsub("\n", "")), "the killed child left its temporary: " .. left)
    one_session("replace cleanup")
    assert.is_true(p.profile_save(dir .. "/small.json"))
    assert.are.equal("big.json\nother.jqtmp-1-notours\nsmall.json\n", listing(dir))
  end)

  it("does not remove the temporary of a save that may still be running", function()
    -- Temporaries of live processes (this one, and pid 1), made by hand.
    local dir = fresh_dir()
    local pid = io.open("/proc/self/stat"):read("a"):match("^(%d+)")
    local mine = ("%s/.x.json.jqtmp-%s-AbCdEf012345"):format(dir, pid)
    local init = dir .. "/.x.json.jqtmp-1-AbCdEf012345"
    S.write(mine, "partial")
    S.write(init, "partial")
    core._test.replace_without_tmpfile(true)
    one_session("replace live")
    local ok, err = p.profile_save(dir .. "/y.json")
    core._test.replace_without_tmpfile(false)
    assert.is_true(ok, err)
    assert.are.equal("partial", S.read(mine))
    assert.are.equal("partial", S.read(init))
  end)

  it("saves through the exclusive temporary when O_TMPFILE is not used", function()
    core._test.replace_without_tmpfile(true)
    one_session("replace fallback")
    local dir = fresh_dir()
    S.write(dir .. "/f.json", "old")
    sh("chmod 0600 " .. q(dir .. "/f.json"))
    local ok, err = p.profile_save(dir .. "/f.json")
    core._test.replace_without_tmpfile(false)
    assert.is_true(ok, err)
    assert.is_true(is_trace(S.read(dir .. "/f.json"), "replace fallback"))
    assert.are.equal("600", stat("%a", dir .. "/f.json"))
    assert.are.equal("f.json\n", listing(dir))
  end)
end)

-- The kernel's protected_symlinks rule, which our own link resolution must
-- apply: in a sticky world-writable directory (a /tmp) a symlink is followed
-- only when it belongs to the follower or to the directory's owner. Each
-- case plants a link to a root-owned 0600 file in a 0700 directory.
describe("a symlink in a sticky world-writable directory", function()
  local victim_text = "root's secret\n"

  -- A fresh shared directory (mode `mode`, owner `dir_owner` or root) and a
  -- private 0700 one holding the victim; returns their paths and the victim's.
  local function setting(mode, dir_owner)
    local base = fresh_dir("sticky")
    local shared, private = base .. "/shared", base .. "/private"
    sh(("mkdir %s %s && chmod %s %s && chmod 0700 %s"):format(q(shared), q(private), mode, q(shared), q(private)))
    if dir_owner then sh(("chown %s %s"):format(dir_owner, q(shared))) end
    local victim = private .. "/secret"
    S.write(victim, victim_text)
    sh("chmod 0600 " .. q(victim))
    return shared, private, victim
  end

  -- A symlink at `link` to `to`, owned by `owner` (the link itself).
  local function plant(link, to, owner)
    sh(("ln -s %s %s && chown -h %s %s"):format(q(to), q(link), owner, q(link)))
  end

  -- The victim and both directories are exactly as they were set up.
  local function untouched(shared_listing, private, victim)
    assert.are.equal(victim_text, S.read(victim))
    assert.are.equal("600 0", stat("%a %u", victim))
    assert.are.equal("secret\n", listing(private))
    return shared_listing
  end

  local function refusal(link, owner, uid)
    return ("not following the symlink '%s' (owned by %s, uid %d): it is in a sticky "
      .. "world-writable directory and belongs neither to you nor to the directory's owner "
      .. "(the kernel's protected_symlinks rule); remove it or write elsewhere"):format(link, owner, uid)
  end

  it("refuses another user's link: false, a message naming the link and its owner, nothing written", function()
    if not root then return pending("needs root to give a link away") end
    one_session("sticky refused")
    local shared, private, victim = setting("1777")
    local link = shared .. "/trace.json"
    plant(link, victim, "65534")
    local ok, err, code = p.profile_save(link)
    assert.is_false(ok)
    assert.are.equal(("cannot write trace to '%s': %s"):format(link, refusal(link, "nobody", 65534)), err)
    assert.are.equal(13, code) -- EACCES, as the kernel refuses
    assert.are.equal("trace.json\n", untouched(listing(shared), private, victim))
    assert.are.equal("symbolic link", kind(link))
  end)

  it("refuses it without O_TMPFILE too, and through core.write_file", function()
    if not root then return pending("needs root to give a link away") end
    one_session("sticky refused fallback")
    local shared, private, victim = setting("1777")
    local link = shared .. "/out.txt"
    plant(link, victim, "65534")
    core._test.replace_without_tmpfile(true)
    local ok, err, code = p.profile_save(link)
    core._test.replace_without_tmpfile(false)
    assert.is_false(ok)
    assert.are.equal(("cannot write trace to '%s': %s"):format(link, refusal(link, "nobody", 65534)), err)
    assert.are.equal(13, code)
    ok, err, code = core.write_file(link, "overwritten")
    assert.is_nil(ok)
    assert.are.equal(("cannot write '%s': %s"):format(link, refusal(link, "nobody", 65534)), err)
    assert.are.equal(13, code)
    assert.are.equal("out.txt\n", untouched(listing(shared), private, victim))
  end)

  it("checks every link of a chain: the refused one is named, wherever it is", function()
    if not root then return pending("needs root to give a link away") end
    one_session("sticky chain")
    local shared, private, victim = setting("1777")
    -- ours -> (relative) theirs -> victim: the second link is refused.
    plant(shared .. "/theirs", victim, "65534")
    plant(shared .. "/ours", "theirs", "0")
    local ok, err = p.profile_save(shared .. "/ours")
    assert.is_false(ok)
    assert.are.equal(("cannot write trace to '%s': %s"):format(shared .. "/ours",
      refusal(shared .. "/theirs", "nobody", 65534)), err)
    -- A link of ours elsewhere, to a link of theirs in a sticky subdirectory.
    local home = fresh_dir("home")
    sh(("mkdir %s && chmod 1777 %s"):format(q(shared .. "/sub"), q(shared .. "/sub")))
    plant(shared .. "/sub/x", "../../private/secret", "65534")
    plant(home .. "/out.json", shared .. "/sub/x", "0")
    ok, err = p.profile_save(home .. "/out.json")
    assert.is_false(ok)
    assert.are.equal(("cannot write trace to '%s': %s"):format(home .. "/out.json",
      refusal(shared .. "/sub/x", "nobody", 65534)), err)
    assert.are.equal("out.json\n", listing(home))
    assert.are.equal("ours\nsub\ntheirs\n", untouched(listing(shared), private, victim))
    assert.are.equal("x\n", listing(shared .. "/sub"))
  end)

  it("follows the follower's own link, and one of the directory's owner", function()
    if not root then return pending("needs root to give a link away") end
    one_session("sticky allowed")
    local shared, private, victim = setting("1777")
    plant(shared .. "/mine", victim, "0")
    assert.is_true(p.profile_save(shared .. "/mine"))
    assert.is_true(is_trace(S.read(victim), "sticky allowed"))
    assert.are.equal("600 0", stat("%a %u", victim))
    -- A directory of nobody's, and a link of nobody's in it.
    local theirs = setting("1777", "65534")
    plant(theirs .. "/owners", victim, "65534")
    S.write(victim, "again")
    assert.is_true(p.profile_save(theirs .. "/owners"))
    assert.is_true(is_trace(S.read(victim), "sticky allowed"))
    assert.are.equal("mine\n", listing(shared))
    assert.are.equal("owners\n", listing(theirs))
    assert.are.equal("secret\n", listing(private))
  end)

  it("follows another user's link where the directory is not both sticky and world-writable", function()
    if not root then return pending("needs root to give a link away") end
    one_session("not sticky")
    for _, mode in ipairs({"0777", "1775", "0755"}) do
      local shared, private, victim = setting(mode)
      plant(shared .. "/link", victim, "65534")
      local ok, err = p.profile_save(shared .. "/link")
      assert.is_true(ok, mode .. ": " .. tostring(err))
      assert.is_true(is_trace(S.read(victim), "not sticky"), mode)
      assert.are.equal("link\n", listing(shared))
      assert.are.equal("secret\n", listing(private))
    end
  end)
end)

describe("core.write_file", function()
  it("writes a string, or a list of strings in order, replacing the file", function()
    local dir = fresh_dir()
    local path = dir .. "/out.txt"
    assert.is_true(core.write_file(path, "one"))
    assert.are.equal("one", S.read(path))
    assert.is_true(core.write_file(path, {"a", "", "bc", ("x"):rep(100000)}))
    assert.are.equal("abc" .. ("x"):rep(100000), S.read(path))
    assert.is_true(core.write_file(path, {}))
    assert.are.equal("", S.read(path))
    assert.are.equal("out.txt\n", listing(dir))
  end)

  it("returns nil, a message naming the path, and errno when it cannot write", function()
    local dir = fresh_dir()
    local ok, err, code = core.write_file(dir .. "/no/such/dir.txt", "x")
    assert.is_nil(ok)
    assert.matches("cannot write '.*/no/such/dir.txt': No such file or directory", err)
    assert.are.equal(2, code) -- ENOENT
    ok, err = core.write_file(dir, "x")
    assert.is_nil(ok)
    assert.matches("it is a directory", err, 1, true)
  end)

  it("checks its arguments before writing anything", function()
    local dir = fresh_dir()
    assert.matches("bad argument #1 to 'jobque%.core%.write_file' %(string expected, got nil%)",
      S.err_of(core.write_file, nil, "x"))
    assert.matches("bad argument #1 to 'jobque%.core%.write_file' %(path contains a zero byte%)",
      S.err_of(core.write_file, dir .. "/a\0b", "x"))
    assert.matches("bad argument #2 to 'jobque%.core%.write_file' %(string or list of strings expected, got no value%)",
      S.err_of(core.write_file, dir .. "/a"))
    assert.matches("bad argument #2 to 'jobque%.core%.write_file' %(item 2 is a number, expected a string%)",
      S.err_of(core.write_file, dir .. "/a", {"x", 5}))
    assert.are.equal("", listing(dir))
  end)
end)

describe("jobque-profile html -o", function()
  local trace_path
  setup(function()
    one_session("html target")
    trace_path = select(3, S.save(p))
  end)

  it("does not write through a symlink planted at OUT.tmp", function()
    local dir = fresh_dir()
    S.write(dir .. "/victim", "precious")
    sh("ln -s victim " .. q(dir .. "/page.html.tmp"))
    local code, _, err = cli(("html %s -o %s"):format(q(trace_path), q(dir .. "/page.html")))
    assert.are.equal(0, code, err)
    assert.are.equal("precious", S.read(dir .. "/victim"))
    assert.are.equal("regular file", kind(dir .. "/page.html"))
    assert.matches("<!DOCTYPE html>", S.read(dir .. "/page.html"), 1, true)
  end)

  it("follows a symlink at OUT and keeps the page's mode", function()
    local dir = fresh_dir()
    S.write(dir .. "/real.html", "old")
    sh("chmod 0600 " .. q(dir .. "/real.html") .. " && ln -s real.html " .. q(dir .. "/page.html"))
    local code, _, err = cli(("html %s -o %s"):format(q(trace_path), q(dir .. "/page.html")))
    assert.are.equal(0, code, err)
    assert.are.equal("symbolic link", kind(dir .. "/page.html"))
    assert.are.equal("600", stat("%a", dir .. "/real.html"))
    assert.matches("<!DOCTYPE html>", S.read(dir .. "/real.html"), 1, true)
    assert.are.equal("page.html\nreal.html\n", listing(dir))
  end)

  it("exits 1 with a clean message, writing nothing, for another user's link in a sticky directory", function()
    if not root then return pending("needs root to give a link away") end
    local base = fresh_dir("sticky")
    local shared, private = base .. "/shared", base .. "/private"
    sh(("mkdir %s %s && chmod 1777 %s && chmod 0700 %s"):format(q(shared), q(private), q(shared), q(private)))
    S.write(private .. "/secret", "root's secret\n")
    sh("chmod 0600 " .. q(private .. "/secret"))
    local link = shared .. "/page.html"
    sh(("ln -s %s %s && chown -h 65534 %s"):format(q(private .. "/secret"), q(link), q(link)))
    local code, out, err = cli(("html %s -o %s"):format(q(trace_path), q(link)))
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.matches(("cannot write '%s': not following the symlink '%s' (owned by nobody, uid 65534)")
      :format(link, link), err, 1, true)
    assert.is_nil(err:find("traceback", 1, true))
    assert.are.equal("root's secret\n", S.read(private .. "/secret"))
    assert.are.equal("secret\n", listing(private))
    assert.are.equal("page.html\n", listing(shared))
  end)

  it("exits 1 with the reason when the device it writes to is full", function()
    if not root then return pending("needs root for mknod") end
    local dir = fresh_dir()
    sh("mknod " .. q(dir .. "/full") .. " c 1 7")
    local code, _, err = cli(("html %s -o %s"):format(q(trace_path), q(dir .. "/full")))
    assert.are.equal(1, code)
    assert.matches("cannot write '.*/full': No space left on device", err)
    assert.are.equal("character special file", kind(dir .. "/full"))
  end)
end)
