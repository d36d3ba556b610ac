rockspec_format = "3.0"
package = "jobque-profile"
version = "scm-1"
source = {
  url = "git+file:///jobque-profile",  -- `luarocks make` builds the checkout it runs in
}
description = {
  summary = "A multi-threaded job queue for Lua 5.4 with a self-describing Perfetto profiler",
  detailed = [[
jobque_profile records markers and op tags into per-thread native rings
without locks, and saves Perfetto-compatible JSON that carries its own
category and marker tables. The trace reader's command needs argparse
(the reader itself is C and Lua of its own); tests use busted and
lua-cjson (Debian's lua-busted, lua-cjson). Offline, against Debian's
lua-argparse, build with --deps-mode=none.
]],
  license = "MIT",
}
dependencies = {
  "lua >= 5.4, < 5.5",
  "argparse",
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    LUA_INCDIR = "$(LUA_INCDIR)",
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
  },
  install = {
    -- the trace reader's command (it needs argparse)
    bin = {["jobque-profile"] = "lua/jobque-profile.lua"},
  },
}
test = {
  -- busted comes from Debian's lua-busted, not from a rocks server.
  type = "command",
  command = "make spec",
}
