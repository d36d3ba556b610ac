// Two traces of one session (a JSON file and a .pftrace, or any two of
// either) read by Perfetto's trace processor v20.1 (spec/consumers/tp_query.cjs,
// one run per file), side by side (spec/record/proto_file_spec.lua):
//   node spec/consumers/compare_proto.cjs A B
// Prints one JSON object: {files, sides: [A's, B's], differences}. A side
// holds what the trace processor made of the file:
//   stats      its import errors (severity error or data_loss, value > 0)
//   slices     per (thread, name, cat): count and summed dur (ns); thread is
//              null for a slice on no thread's track (markers, awaits)
//   counters   per counter track name: count of values and their sum (the
//              perf samples' own "cpu-clock" tracks left out)
//   threads, processes   their names, sorted (tid/pid 0 and unnamed ones left out)
//   perfSamples, folded  the perf samples, and their stacks folded
//              ("root;...;leaf": count) through stack_profile_callsite
//   flows      rows of its flow table (v20.1 reads JSON arrows, not fixed64 ids)
// and, for a JSON file, what v20.1's JSON importer does not read, from the
// file itself, in fromFile: asyncSlices (b/e pairs, per (null, name, cat)),
// sampleWeight (the samples' summed weight), flowStarts and flowEnds
// (flow_out and flow_in slices).
// differences lists where the sides disagree: import errors on either side;
// slice counts; summed durations beyond 1 ns per slice (v20.1's JSON
// importer truncates us*1000); counter counts, and sums beyond a relative
// 1e-9; thread and process names; a JSON file's sample weight against the
// other side's perf samples (and folded stacks between two .pftrace files).
// Exit status 0: no difference; 1: differences; 2: usage, a file that is
// neither, or the trace processor failed.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const TP = path.join(path.dirname(process.argv[1]), 'tp_query.cjs');

const QUERIES = {
  stats: "select name, idx, value from stats where severity in ('error','data_loss') and value > 0",
  slices: 'select t.name as thread, s.name as name, s.category as cat, count(*) as count, sum(s.dur) as dur '
    + 'from slice s left join thread_track tt on s.track_id = tt.id left join thread t on tt.utid = t.utid '
    + 'group by 1, 2, 3 order by 1, 2, 3',
  counters: 'select t.name as name, count(c.id) as count, sum(c.value) as sum from counter_track t '
    + "left join counter c on c.track_id = t.id where t.type != 'perf_counter_track' group by t.name order by t.name",
  threads: 'select name from thread where tid != 0 and name is not null order by name',
  processes: 'select name from process where pid != 0 and name is not null order by name',
  perf: 'select callsite_id as cs, count(*) as n from perf_sample group by 1',
  callsites: 'select id, parent_id, frame_id from stack_profile_callsite',
  frames: 'select id, name from stack_profile_frame',
  flows: 'select count(*) as n from flow',
};

function fail(message) {
  process.stderr.write('compare_proto: ' + message + '\n');
  process.exit(2);
}

function formatOf(file) {
  let head;
  try {
    const fd = fs.openSync(file, 'r');
    head = Buffer.alloc(64);
    head = head.subarray(0, fs.readSync(fd, head, 0, 64, 0));
    fs.closeSync(fd);
  } catch (e) {
    fail(file + ': ' + e.message);
  }
  if (head.length > 0 && head[0] === 0x0a) return 'proto';
  const text = head.toString('latin1').trimStart();
  if (text.startsWith('{') || text.startsWith('[')) return 'json';
  return fail(file + ': neither a JSON trace nor a protobuf one (first byte 0x0A)');
}

// Runs every query of QUERIES on `file` in one trace processor; returns
// {appendErrors, rows: {key: [row, ...]}}.
function query(file) {
  const keys = Object.keys(QUERIES);
  let out;
  try {
    out = execFileSync(process.execPath, [TP, file, ...keys.map((k) => QUERIES[k])],
      { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    fail(file + ': the trace processor failed: ' + (e.stdout || '') + (e.stderr || e.message));
  }
  const bySql = new Map(keys.map((k) => [QUERIES[k], k]));
  const rows = {}, appendErrors = [];
  let current = null;
  for (const line of out.split('\n')) {
    if (line.startsWith('# ')) {
      current = bySql.get(line.slice(2));
      if (current === undefined) fail(file + ': an answer to an unknown query: ' + line);
      rows[current] = [];
    } else if (line.startsWith('APPEND ERROR')) {
      appendErrors.push(line);
    } else if (line.startsWith('{')) {
      if (current === null) fail(file + ': a row before any query: ' + line);
      rows[current].push(JSON.parse(line));
    } else if (line !== '') {
      fail(file + ': unexpected output of the trace processor: ' + line);
    }
  }
  for (const k of keys) if (!rows[k]) fail(file + ': no answer to ' + QUERIES[k]);
  return { appendErrors, rows };
}

// The perf samples' stacks folded root first: {"a;b;c": count}.
function folded(rows) {
  const callsites = new Map(rows.callsites.map((r) => [r.id, r]));
  const frames = new Map(rows.frames.map((r) => [r.id, r.name]));
  const out = {};
  for (const { cs, n } of rows.perf) {
    const names = [];
    for (let id = cs; id !== null && id !== undefined; id = callsites.get(id).parent_id) {
      if (!callsites.has(id)) { names.unshift('<callsite ' + id + '?>'); break; }
      names.unshift(frames.get(callsites.get(id).frame_id));
    }
    const key = cs === null ? '<no callsite>' : names.join(';');
    out[key] = (out[key] || 0) + n;
  }
  return out;
}

// What v20.1's JSON importer leaves out, read from the JSON file itself.
function jsonExtras(file) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const events = Array.isArray(doc) ? doc : doc.traceEvents || [];
  const open = new Map(), async = new Map();
  let flowStarts = 0, flowEnds = 0;
  const add = (name, cat, dur) => {
    const key = JSON.stringify([name, cat]);
    const a = async.get(key) || { thread: null, name, cat, count: 0, dur: 0 };
    a.count += 1;
    a.dur += dur;
    async.set(key, a);
  };
  for (const e of events) {
    if (e.flow_out === true) flowStarts += 1;
    if (e.flow_in === true) flowEnds += 1;
    if (e.ph !== 'b' && e.ph !== 'e') continue;
    const id = e.id2 ? JSON.stringify(e.id2) : String(e.id);
    const key = JSON.stringify([e.pid, e.cat, e.name, id]);
    if (e.ph === 'b') {
      if (!open.has(key)) open.set(key, []);
      open.get(key).push(e);
    } else if (open.has(key) && open.get(key).length > 0) {
      const b = open.get(key).pop();
      add(b.name, b.cat === undefined ? null : b.cat, (e.ts - b.ts) * 1000);
    }
  }
  for (const list of open.values()) for (const b of list) add(b.name, b.cat === undefined ? null : b.cat, -1);
  const asyncSlices = [...async.values()].map((a) => ({ ...a, dur: Math.round(a.dur) }));
  let sampleWeight = 0;
  for (const s of Array.isArray(doc.samples) ? doc.samples : []) sampleWeight += s.weight === undefined ? 1 : s.weight;
  return { asyncSlices, sampleWeight, flowStarts, flowEnds };
}

function side(file) {
  const format = formatOf(file);
  const { appendErrors, rows } = query(file);
  const s = {
    file, format, appendErrors,
    stats: rows.stats,
    slices: rows.slices,
    counters: rows.counters,
    threads: rows.threads.map((r) => r.name),
    processes: rows.processes.map((r) => r.name),
    perfSamples: rows.perf.reduce((sum, r) => sum + r.n, 0),
    folded: folded(rows),
    flows: rows.flows[0].n,
  };
  if (format === 'json') s.fromFile = jsonExtras(file);
  return s;
}

const sliceKey = (r) => JSON.stringify([r.thread, r.name, r.cat]);

// A side's slices, with a JSON file's b/e pairs that the importer dropped.
function allSlices(s) {
  const m = new Map(s.slices.map((r) => [sliceKey(r), r]));
  if (s.format === 'json') {
    for (const a of s.fromFile.asyncSlices) {
      const old = m.get(sliceKey(a));
      m.set(sliceKey(a), old ? { ...old, count: old.count + a.count, dur: old.dur + a.dur } : a);
    }
  }
  return m;
}

function compare(a, b) {
  const d = [];
  for (const s of [a, b]) {
    const name = s.file;
    for (const r of s.stats) d.push(`${name}: import error ${r.name}${r.idx === null ? '' : '[' + r.idx + ']'} = ${r.value}`);
    for (const line of s.appendErrors) d.push(`${name}: ${line}`);
  }
  const sa = allSlices(a), sb = allSlices(b);
  for (const key of [...new Set([...sa.keys(), ...sb.keys()])].sort()) {
    const x = sa.get(key) || { count: 0, dur: 0 }, y = sb.get(key) || { count: 0, dur: 0 };
    if (x.count !== y.count) d.push(`slices ${key}: ${x.count} against ${y.count}`);
    else if (Math.abs(x.dur - y.dur) > x.count) d.push(`slices ${key}: dur ${x.dur} against ${y.dur} (${x.count} slices)`);
  }
  const ca = new Map(a.counters.map((r) => [r.name, r])), cb = new Map(b.counters.map((r) => [r.name, r]));
  for (const name of [...new Set([...ca.keys(), ...cb.keys()])].sort()) {
    const x = ca.get(name) || { count: 0, sum: 0 }, y = cb.get(name) || { count: 0, sum: 0 };
    if (x.count !== y.count) d.push(`counter ${JSON.stringify(name)}: ${x.count} values against ${y.count}`);
    else if (Math.abs(x.sum - y.sum) > 1e-9 * Math.max(Math.abs(x.sum), Math.abs(y.sum)))
      d.push(`counter ${JSON.stringify(name)}: sum ${x.sum} against ${y.sum}`);
  }
  for (const what of ['threads', 'processes'])
    if (JSON.stringify(a[what]) !== JSON.stringify(b[what]))
      d.push(`${what}: ${JSON.stringify(a[what])} against ${JSON.stringify(b[what])}`);
  const samples = (s) => (s.format === 'json' ? s.fromFile.sampleWeight : s.perfSamples);
  if (samples(a) !== samples(b))
    d.push(`samples: ${samples(a)} (${a.format === 'json' ? 'sample weight' : 'perf samples'}) against `
      + `${samples(b)} (${b.format === 'json' ? 'sample weight' : 'perf samples'})`);
  if (a.format === 'proto' && b.format === 'proto' && JSON.stringify(a.folded) !== JSON.stringify(b.folded))
    d.push(`folded stacks: ${JSON.stringify(a.folded)} against ${JSON.stringify(b.folded)}`);
  return d;
}

if (process.argv.length !== 4) fail('usage: node spec/consumers/compare_proto.cjs A B (each a JSON trace or a .pftrace)');
const [fa, fb] = process.argv.slice(2);
const a = side(fa), b = side(fb);
for (const s of [a, b]) s.folded = Object.fromEntries(Object.entries(s.folded).sort());
const differences = compare(a, b);
process.stdout.write(JSON.stringify({ files: [fa, fb], sides: [a, b], differences }, null, 1) + '\n');
process.exitCode = differences.length === 0 ? 0 : 1;
