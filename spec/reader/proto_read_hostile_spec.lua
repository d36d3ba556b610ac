-- The .pftrace reader (src/reader/proto_read.c, proto_json.c) on hostile
-- files encoded here by hand, each in the shape our writer gives its files
-- (a trace attribute, a clock snapshot, thread tracks ranked, one sequence
-- per lane) but for the one thing under test: it reads them in time linear
-- in the file, or refuses them with status 1 and "damaged protobuf at byte
-- N (why)", the byte counted in the file; never a crash, hang or traceback.
local S = require "support"
local T = require "consumers.tiny_pftrace"
local cjson = require "cjson"

local v, s, packet = T.v, T.s, T.packet
local BOOT0 = 5000000
local PROFILE = '{"version":1,"startUs":0.000,"stopUs":1000.000}'

-- The setup packets for `lanes` lanes, with `profile` as the attribute.
local function head(lanes, profile)
  local pk = {
    packet(v(8, BOOT0), s(6, s(1, v(1, 6) .. v(2, BOOT0)) .. v(2, 6))),
    packet(s(126, s(1, s(1, "jobqueProfile") .. s(3, profile or PROFILE)))),
    packet(s(60, v(1, 1) .. s(3, v(1, 77) .. s(6, "jobque_profile")))),
  }
  for l = 0, lanes - 1 do
    pk[#pk + 1] = packet(s(60, v(1, 2 + l) .. s(4, v(1, 77) .. v(2, 100 + l) .. s(5, "lane " .. l)) .. v(12, l)))
  end
  return table.concat(pk)
end

-- Sequence 1's first packet (lane 0, clock 64, name and category 1 "job",
-- annotation name 1 "job"), a job slice of 1 us after it.
local function one_slice()
  local interned = s(2, v(1, 1) .. s(2, "job")) .. s(1, v(1, 1) .. s(2, "job")) .. s(3, v(1, 1) .. s(2, "job"))
  local function event(dt, fields) return packet(v(10, 1), v(13, 2), v(8, dt), s(11, fields)) end
  return packet(v(8, BOOT0), v(58, 6), v(10, 1), v(13, 3), s(59, v(58, 64) .. s(11, v(11, 2))),
                s(6, s(1, v(1, 64) .. v(2, 0) .. v(3, 1)) .. s(1, v(1, 6) .. v(2, BOOT0))), s(12, interned))
    .. event(1000, v(9, 1) .. v(10, 1) .. v(3, 1) .. s(4, v(1, 1) .. v(4, 7)))
    .. event(1000, v(9, 2))
end

local function report(path, env)
  return S.cli(("report --json '%s'"):format(path), env)
end

describe("the .pftrace reader on hostile files made by hand", function()
  it("reads 200,000 lanes in time linear in them (the lanes' names at the head: no scan of the tracks per lane)",
     function()
    -- about 8 s on the plain build; a scan per lane took 45 s (under the
    -- sanitizer hosts: fewer lanes, for their memory checks)
    local n = S.sanitized and 50000 or 200000
    local path = S.tmpfile("lanes.pftrace")
    S.write(path, head(n) .. one_slice())
    local code, out, err = report(path, "timeout 25 env")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.are.equal(n, #r.lanes)
    assert.are.equal("lane " .. (n - 1), r.lanes[n].name)
    assert.are.equal(1, r.total.events)
  end)

  it("refuses a jobqueProfile attribute that is not one JSON object, naming its byte in the file", function()
    local cases = {
      {'{"version":1,', 13, "expected a string key"},
      {'{"version":1,"x":"a\nb"}', 19, "control character in a string (escape it)"},
      {'[1]', 0, "not an object"},
      {'{"version":1} x', 14, "text after the object"},
      -- what would close the session's object and add events of its own
      {'{"version":1,"startUs":0,"stopUs":1000},"traceEvents":[{"ph":"X","ts":1,"dur":5,"pid":1,"tid":1,'
       .. '"name":"injected","cat":"job"}]', 39, "text after the object"},
    }
    for _, c in ipairs(cases) do
      local path = S.tmpfile("attribute.pftrace")
      local bytes = head(1, c[1]) .. one_slice()
      local at = bytes:find(c[1], 1, true) - 1 -- where the attribute's text starts in the file
      S.write(path, bytes)
      local code, out, err = report(path)
      assert.are.equal(1, code, c[1])
      assert.are.equal("", out)
      assert.are.equal(("jobque-profile: %s: damaged protobuf at byte %d (its attribute jobqueProfile is "
                        .. "not a JSON object: %s)\n"):format(path, at + c[2], c[3]), err)
    end
  end)

  it("reads a wake's parked_us of a whole number of us as the JSON's float (9706.000 there), not as an integer",
     function()
    -- sequence 1: name 1 "wake", category 1 "worker", annotation name 1
    -- "parked_us"; a wake instant 1 us after the start, parked 9706 us
    local interned = s(2, v(1, 1) .. s(2, "wake")) .. s(1, v(1, 1) .. s(2, "worker"))
      .. s(3, v(1, 1) .. s(2, "parked_us"))
    local seq = packet(v(8, BOOT0), v(58, 6), v(10, 1), v(13, 3), s(59, v(58, 64) .. s(11, v(11, 2))),
                       s(6, s(1, v(1, 64) .. v(2, 0) .. v(3, 1)) .. s(1, v(1, 6) .. v(2, BOOT0))), s(12, interned))
      .. packet(v(10, 1), v(13, 2), v(8, 1000), s(11, v(9, 3) .. v(10, 1) .. v(3, 1)
                                                   .. s(4, v(1, 1) .. T.key(5, 1) .. string.pack("<d", 9706.0))))
    local path = S.tmpfile("wake.pftrace")
    S.write(path, head(1) .. seq)
    local model = assert(require("jobque_profile.trace").load(path))
    local wake = model.lanes[1].instants[1]
    assert.are.equal("wake", wake.name)
    assert.are.equal("float", math.type(wake.args.parked_us))
    assert.are.equal(9706, wake.args.parked_us)
  end)

  it("refuses a double that is not a finite number (an argument's, a counter's), naming its byte", function()
    local interned = s(2, v(1, 1) .. s(2, "wake")) .. s(1, v(1, 1) .. s(2, "worker"))
      .. s(3, v(1, 1) .. s(2, "parked_us"))
    local first = packet(v(8, BOOT0), v(58, 6), v(10, 1), v(13, 3), s(59, v(58, 64) .. s(11, v(11, 2))),
                         s(6, s(1, v(1, 64) .. v(2, 0) .. v(3, 1)) .. s(1, v(1, 6) .. v(2, BOOT0))), s(12, interned))
    local counter_track = packet(s(60, v(1, 9) .. s(2, "ctr value") .. v(5, 1) .. s(8, "")))
    for _, x in ipairs{0 / 0, math.huge, -math.huge} do
      local double = string.pack("<d", x)
      -- a wake parked x us: the byte of its annotation's value
      local value = T.key(5, 1) .. double
      local bytes = head(1) .. first
        .. packet(v(10, 1), v(13, 2), v(8, 1000), s(11, v(9, 3) .. v(10, 1) .. v(3, 1) .. s(4, v(1, 1) .. value)))
      -- a counter event of x: the byte where its TrackEvent's fields start
      local event = v(9, 4) .. v(11, 9) .. T.key(44, 1) .. double
      local cbytes = head(1) .. counter_track .. first .. packet(v(10, 1), v(13, 2), v(8, 1000), s(11, event))
      for _, c in ipairs{{bytes, bytes:find(value, 1, true) - 1}, {cbytes, cbytes:find(event, 1, true) - 1}} do
        local path = S.tmpfile("double.pftrace")
        S.write(path, c[1])
        local code, out, err = report(path)
        assert.are.equal(1, code, tostring(x))
        assert.are.equal("", out)
        assert.are.equal(("jobque-profile: %s: damaged protobuf at byte %d (a double that is not a finite number)\n")
                         :format(path, c[2]), err)
      end
    end
  end)
end)
