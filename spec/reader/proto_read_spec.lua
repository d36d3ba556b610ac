-- The reader of .pftrace files (src/reader/proto_read.c) on files encoded
-- here by hand in the shape our writer gives them (a trace attribute, a
-- clock snapshot, thread tracks ranked, one sequence per lane), whose
-- contents are known by construction: what it reads from them, and that
-- shapes the writer never makes (many sequences, deep nesting, arrow ends
-- whose job never ran) read in time linear in the file, never reading
-- freed memory (the sanitizer runs), never hanging.
local S = require "support"
local T = require "consumers.tiny_pftrace"
local cjson = require "cjson"

local v, s, packet = T.v, T.s, T.packet
local BOOT0 = 5000000

-- A file of ours: the setup packets for `lanes` lanes, then `body` (packets).
local function ours(lanes, body)
  local pk = {
    packet(v(8, BOOT0), s(6, s(1, v(1, 6) .. v(2, BOOT0)) .. v(2, 6))),
    packet(s(126, s(1, s(1, "jobqueProfile") .. s(3, '{"version":1,"startUs":0.000,"stopUs":1000.000}')))),
    packet(s(60, v(1, 1) .. s(3, v(1, 77) .. s(6, "jobque_profile")))),
  }
  for l = 0, lanes - 1 do
    pk[#pk + 1] = packet(s(60, v(1, 2 + l) .. s(4, v(1, 77) .. v(2, 100 + l) .. s(5, "lane " .. l)) .. v(12, l)))
  end
  return table.concat(pk) .. table.concat(body)
end

-- The first packet of sequence `seq` (lane `lane`): cleared, the lane's
-- track and clock 64 as defaults, names interned: 1 "job", 2 "after",
-- categories 1 "job", 2 "flow", annotation name 1 "job".
local function start(seq, lane)
  local interned = s(2, v(1, 1) .. s(2, "job")) .. s(2, v(1, 2) .. s(2, "after"))
    .. s(1, v(1, 1) .. s(2, "job")) .. s(1, v(1, 2) .. s(2, "flow")) .. s(3, v(1, 1) .. s(2, "job"))
  return packet(v(8, BOOT0), v(58, 6), v(10, seq), v(13, 3),
                s(59, v(58, 64) .. s(11, v(11, 2 + lane))),
                s(6, s(1, v(1, 64) .. v(2, 0) .. v(3, 1)) .. s(1, v(1, 6) .. v(2, BOOT0))),
                s(12, interned))
end

-- A track event packet of sequence seq, dt ns after the one before.
local function event(seq, dt, fields) return packet(v(10, seq), v(13, 2), v(8, dt), s(11, fields)) end
local function begin(seq, dt, name, cat, job)
  return event(seq, dt, v(9, 1) .. v(10, name) .. v(3, cat) .. (job and s(4, v(1, 1) .. v(4, job)) or ""))
end
local function finish(seq, dt) return event(seq, dt, v(9, 2)) end

local function report(path)
  return S.cli(("report --json '%s'"):format(path))
end

describe("the .pftrace reader on files made by hand", function()
  it("reads a slice as the JSON's: its lane, time and length from the packets", function()
    local path = S.tmpfile("one.pftrace")
    S.write(path, ours(1, {start(1, 0), begin(1, 100000, 1, 1, 7), finish(1, 250000)}))
    local code, out, err = report(path)
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.are.equal(1, r.total.events)
    assert.are.equal(1, #r.lanes)
    assert.are.equal("lane 0", r.lanes[1].name)
    assert.are.equal(250, r.lanes[1].busy) -- 250,000 ns
  end)

  it("reads 20,000 sequences of one packet each in time linear in them", function()
    local body = {}
    for q = 1, 20000 do body[#body + 1] = start(q, 0) end
    body[#body + 1] = begin(1, 1000, 1, 1, 1)
    body[#body + 1] = finish(1, 1000)
    local path = S.tmpfile("many.pftrace")
    S.write(path, ours(1, body))
    local code, _, err = S.cli(("report --json '%s'"):format(path), "timeout 120 env")
    assert.are.equal(0, code, err)
  end)

  it("reads 50,000 nested slices, and arrow ends whose job never ran, across sequences", function()
    local body = {start(1, 0)}
    for _ = 1, 50000 do body[#body + 1] = begin(1, 10, 1, 1, 1) end
    for _ = 1, 50000 do body[#body + 1] = finish(1, 10) end
    for k = 1, 300 do -- the `after` ends of job 9, which has no slice: each at its time
      body[#body + 1] = begin(1, 10, 2, 2, 9)
      body[#body + 1] = finish(1, 0)
      if k == 150 then
        for q = 2, 9 do body[#body + 1] = start(q, 0) end -- more sequences meanwhile
      end
    end
    local path = S.tmpfile("deep.pftrace")
    S.write(path, ours(1, body))
    local code, out, err = S.cli(("report --json '%s'"):format(path), "timeout 120 env")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.are.equal(50000 + 300, r.total.events)
  end)
end)
