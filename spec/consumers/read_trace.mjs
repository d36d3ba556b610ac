// Reads a saved trace the way two programs users open it in do, with the
// versions package-lock.json pins, and prints what they made of it as one
// JSON object (spec/record/consumers_spec.lua runs it):
//
//   node spec/consumers/read_trace.mjs TRACE
//   {"devtools":{"slices":N,"dropped":K,"drops":[...]},
//    "speedscope":{"profiles":P,"names":[...],"warnings":W,"warns":[...]}}
//
// devtools: Chrome DevTools' trace engine (npm @paulirish/trace_engine, the
// Performance panel's model). It builds a tree of each thread's slices and
// leaves out a slice that starts inside another and ends after it ("overlap
// without nesting"): `slices` counts the complete events it took per thread,
// `dropped` those left out of the trees.
// speedscope: speedscope's importer (npm speedscope). It shifts each
// thread's times to start at zero, turns each complete event into a begin
// and an end, and warns when an end is not the open slice's: `warnings`
// counts those, `profiles` the threads it imported, `names` their names.
// A trace with "samples" and "stackFrames" it imports as samples instead:
// one profile per thread that has samples.
// Both read times as JavaScript doubles. Exits 1 with a message on stderr
// when either cannot be run.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import {createRequire} from 'node:module';
import * as Trace from '@paulirish/trace_engine';

const require = createRequire(import.meta.url);

function fail(message) {
  process.stderr.write(`read_trace.mjs: ${message}\n`);
  process.exit(1);
}

async function devtools(events) {
  // The engine needs DOMRect, which node lacks (its README says so).
  globalThis.DOMRect ??= class DOMRect {
    constructor(x = 0, y = 0, width = 0, height = 0) {
      Object.assign(this, {x, y, width, height});
    }
  };
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  await model.parse(events.map(e => ({...e})));
  const renderer = model.parsedTrace().data.Renderer;
  let slices = 0;
  const drops = [];
  for (const [, proc] of renderer.processes) {
    for (const [tid, thread] of proc.threads) {
      for (const e of thread.entries) {
        if (e.ph !== 'X') continue;
        slices++;
        if (!renderer.entryToNode.has(e)) drops.push(`tid ${tid}: ${e.name} at ${e.ts} (dur ${e.dur})`);
      }
    }
  }
  return {slices, dropped: drops.length, drops: drops.slice(0, 10)};
}

// speedscope ships one browser bundle. It is run here in a bare context,
// with its last statement (drawing the page) replaced by handing out the
// module its page imports files with.
function speedscopeImporter() {
  const dir = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist', 'release');
  const name = fs.readdirSync(dir).find(f => /^speedscope-\w+\.js$/.test(f));
  if (!name) fail(`no speedscope-*.js in ${dir}`);
  const src = fs.readFileSync(path.join(dir, name), 'utf8');
  const mod = src.match(/return\(await (\w+)\)\.importProfilesFromArrayBuffer\(/);
  const boot = src.lastIndexOf('console.log(`speedscope v');
  if (!mod || boot < 0) fail(`${name}: not the bundle this script knows (speedscope 1.25.0)`);
  const warns = [];
  const log = (...a) => warns.push(a.join(' '));
  const element = () => ({style: {}, sheet: {insertRule() {}, cssRules: []},
    appendChild() {}, setAttribute() {}, addEventListener() {}});
  const ctx = {
    console: {log() {}, info() {}, warn: log, error: log},
    TextDecoder, TextEncoder, atob, btoa, URL, setTimeout, clearTimeout, performance,
    navigator: {userAgent: 'node', platform: 'linux'},
    location: {href: 'file:///', hash: '', search: '', protocol: 'file:'},
    document: {createElement: element, createTextNode: element, head: element(), body: element(),
      querySelector: () => null, addEventListener() {}},
    localStorage: {getItem: () => null, setItem() {}},
    addEventListener() {},
    matchMedia: () => ({matches: false, addEventListener() {}, addListener() {}}),
  };
  ctx.window = ctx;
  ctx.self = ctx;
  vm.createContext(ctx);
  vm.runInContext(`${src.slice(0, boot)}globalThis.__importer = ${mod[1]};})();`, ctx, {filename: name});
  return {importer: ctx.__importer, warns};
}

async function speedscope(text) {
  const {importer, warns} = speedscopeImporter();
  const mod = await importer;
  const buf = Buffer.from(text, 'utf8');
  const group = await mod.importProfilesFromArrayBuffer('trace.json',
    buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  if (!group) fail('speedscope could not import the trace');
  return {profiles: group.profiles.length, names: group.profiles.map(p => p.getName()),
    warnings: warns.length, warns: warns.slice(0, 10)};
}

const file = process.argv[2];
if (!file) fail('usage: node spec/consumers/read_trace.mjs TRACE');
const text = fs.readFileSync(file, 'utf8');
const doc = JSON.parse(text);
const out = {devtools: await devtools(doc.traceEvents ?? doc), speedscope: await speedscope(text)};
process.stdout.write(`${JSON.stringify(out)}\n`);
