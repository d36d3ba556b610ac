// The timeline page's script (jobque_profile.page puts it in page.html,
// with the trace as JSON in the #data element). It draws on a canvas and,
// after each draw, publishes what it shows in window.timelineState and
// document.body.dataset.state.
"use strict";
(function () {
  const started = performance.now();
  const D = JSON.parse(document.getElementById("data").textContent);
  // LABEL: the lane names' column; AXIS: the time axis, with the marker
  // labels in its lower half; MIN_ROW: the least height of a lane (rows
  // grow to fill the window); MARK_LABEL: the widest a marker's label gets.
  // NAME_WIDTH: the most characters of a name in the legend (the reports' width).
  const LABEL = 150, AXIS = 36, MIN_ROW = 22, DROPS = 20, MARK_LABEL = 180;
  const NAME_WIDTH = Number(document.getElementById("legend").dataset.nameWidth);
  // MAX_US: the largest time the reader accepts either side of zero (trace.MAX_US).
  const MAX_US = Number(document.getElementById("wrap").dataset.maxUs);
  const us = x => x / 1000; // the data holds nanoseconds as integers
  const lanes = D.lanes.map(l => ({ name: l.name, maxdur: us(l.maxdur), dropped: l.dropped,
    full: l.full === null ? null : us(l.full),
    ts: Float64Array.from(l.ts, us), dur: Float64Array.from(l.dur, us), c: Int32Array.from(l.c),
    n: Int32Array.from(l.n), a: Int32Array.from(l.a), ak: Int32Array.from(l.ak), av: l.av,
    f: Int32Array.from(l.f || []) })); // failed slices (indices), outlined in red
  const failedTotal = lanes.reduce((n, l) => n + l.f.length, 0);
  // Copies (copy in / out / result: a job's values copied between states)
  // are drawn in their own colour, with a legend entry of their own; their
  // time still counts under their job's category.
  const COPY = "#5d4037", COPY_NAMES = new Set(["copy in", "copy out", "copy result"]);
  let copiesTotal = 0, copiesDrawn = 0;
  lanes.forEach(l => {
    l.copy = null;
    for (let i = 0; i < l.a.length; i++) {
      const x = l.a[i] >= 0 ? D.args[l.a[i]] : null;
      if (x && typeof x === "object" && "bytes" in x && COPY_NAMES.has(D.names[l.n[i]])) {
        if (!l.copy) l.copy = new Uint8Array(l.a.length);
        l.copy[i] = 1;
        copiesTotal++;
      }
    }
  });
  let failedDrawn = 0;
  const cats = D.cats.map(c => ({ name: c[0], color: c[1] }));
  const waitCat = cats.findIndex(c => c.name === "wait");
  const markers = D.mt.map((t, i) => ({ t: us(t), kind: D.kinds[D.mk[i]], arg: D.ma[i] }));
  const span = D.span > 0 ? us(D.span) : 1;
  const canvas = document.getElementById("tl"), ctx = canvas.getContext("2d");
  const tip = document.getElementById("tip"), statsEl = document.getElementById("stats");
  let v0 = 0, v1 = span, sel = null, drawMs = 0, width = 0, firstDrawn = 0, ROW = MIN_ROW, height = 0;
  let laneLabels = [], markerLabels = [];

  // The parts each in an element of its own: the job graph (each job's
  // slices, latencies and neighbours, and the critical path; null without
  // jobs), the counters, and each lane's spans (slice index, depth pairs).
  const G = JSON.parse(document.getElementById("graph").textContent);
  // A counter's values beyond 2^53 are exact as text (x: index, digits pairs; min and max digits too).
  const counters = JSON.parse(document.getElementById("counters").textContent).map(c => {
    const exact = new Map();
    for (let q = 0; c.x && q < c.x.length; q += 2) exact.set(c.x[q], c.x[q + 1]);
    return { name: c.name, pid: c.pid, ts: Float64Array.from(c.ts, us),
      v: Float64Array.from(c.v, x => x === null ? NaN : x), min: typeof c.min === "string" ? Number(c.min) : c.min,
      max: typeof c.max === "string" ? Number(c.max) : c.max,
      minText: typeof c.min === "string" ? c.min : null, maxText: typeof c.max === "string" ? c.max : null, exact };
  });
  const CROW = 34; // a counter's row
  const MAX_ARROWS = 1000; // the most arrows a hovered job draws (one that submitted a million...)
  const spanPairs = JSON.parse(document.getElementById("spans").textContent);
  lanes.forEach((l, li) => {
    const p = spanPairs[li] || [];
    l.depth = null; // a slice's depth: 0 for all but spans (1 + the spans around them)
    l.maxDepth = 0;
    if (p.length) {
      l.depth = new Int32Array(l.ts.length);
      for (let k = 0; k < p.length; k += 2) {
        l.depth[p[k]] = p[k + 1];
        if (p[k + 1] > l.maxDepth) l.maxDepth = p[k + 1];
      }
    }
    l.job = new Int32Array(l.ts.length).fill(-1); // the job (index in jobs) of each job slice
  });
  // The jobs (page.lua's graph_data has the columns): their run time is their slices'.
  const jobs = [];
  for (let k = 0; G && k < G.id.length; k++) {
    const s = G.s.slice(2 * G.so[k], 2 * G.so[k + 1]);
    let run = 0;
    for (let q = 0; q < s.length; q += 2) run += lanes[s[q]].dur[s[q + 1]];
    jobs.push({ id: G.id[k], c: G.c[k], s, ready: G.ready[k] < 0 ? null : us(G.ready[k]), resume: 0, nresume: 0,
      run, susp: 0, deps: [], aw: [], by: null, sub: G.sl[k] >= 0 ? { li: G.sl[k], t: us(G.st[k]) } : null,
      kids: [], onPath: false });
  }
  if (G) {
    for (let q = 0; q < G.by.length; q += 2) jobs[G.by[q]].by = G.by[q + 1];
    for (let q = 0; q < G.deps.length; q += 2) jobs[G.deps[q]].deps.push(G.deps[q + 1]);
    for (let q = 0; q < G.aw.length; q += 3) jobs[G.aw[q]].aw.push([G.aw[q + 1], G.aw[q + 2]]);
    for (let q = 0; q < G.rs.length; q += 3) { jobs[G.rs[q]].resume = us(G.rs[q + 1]); jobs[G.rs[q]].nresume = G.rs[q + 2]; }
    for (let q = 0; q < G.sp.length; q += 2) jobs[G.sp[q]].susp = us(G.sp[q + 1]);
  }
  const jobById = new Map(jobs.map(j => [j.id, j]));
  jobs.forEach((j, k) => {
    for (let q = 0; q < j.s.length; q += 2) lanes[j.s[q]].job[j.s[q + 1]] = k;
    const parent = j.by === null ? null : jobById.get(j.by);
    if (parent) parent.kids.push(j);
  });
  const path = G ? G.path : null;
  const pathJobs = path ? path.jobs.map(id => jobById.get(id)).filter(Boolean) : [];
  for (const j of pathJobs) j.onPath = true;
  // The path's steps (page_graph.c: kind, start, duration, lane or -1, job,
  // the job that held the worker), in time order; per lane, those drawn there.
  const pathSteps = (path && path.steps ? path.steps : []).map(x => ({ kind: x[0], t: us(x[1]), dur: us(x[2]), li: x[3],
    job: x[4], held: x[5] }));
  const laneSteps = lanes.map(() => []);
  for (const x of pathSteps) if (x.li >= 0 && x.li < lanes.length) laneSteps[x.li].push(x);
  // Its make-up by kind, the report's (page_graph.c: kind, ns), most first.
  const byKind = (path && path.by_kind ? path.by_kind : []).map(x => ({ kind: x[0], us: us(x[1]) }));
  // The steps of lane li that cover t (within slack): their ends are in order too.
  function stepsAt(li, t, slack) {
    const list = laneSteps[li] || [], out = [];
    let lo = 0, hi = list.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (list[m].t + list[m].dur < t - slack) lo = m + 1; else hi = m; }
    for (let k = lo; k < list.length && list[k].t <= t + slack; k++) out.push(list[k]);
    return out;
  }
  const stepLine = x => "path     " + x.kind + ", " + fmt(x.dur) + (x.job === null || x.job === undefined ? "" :
    " (job " + x.job + ")") + (x.held === null || x.held === undefined ? "" : ": its worker ran job " + x.held);
  let cpOn = false, hoverJob = null, arrows = [], pathDrawn = 0, spanRects = [], spansDrawn = 0, counterInfo = [];
  let lastHit = null; // the slice hit() found last: { li, i }

  // A name on one line: line breaks as U+23CE, other control characters as \xHH.
  const oneLine = s => String(s).replace(/\r\n|\r|\n/g, "\u23ce")
    // eslint-disable-next-line no-control-regex -- control characters are what it replaces
    .replace(/[\u0000-\u001f\u007f]/g, c => "\\x" + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0"));
  // At most n characters (code points) of a name: when cut, its first two
  // thirds, an ellipsis and its end (as the report cuts it).
  function cut(s, n) {
    const chars = Array.from(oneLine(s));
    if (chars.length <= n) return chars.join("");
    const head = Math.ceil((n - 1) * 2 / 3), tail = n - 1 - head;
    return chars.slice(0, head).join("") + "\u2026" + (tail > 0 ? chars.slice(chars.length - tail).join("") : "");
  }
  // As much of a name as fits in px pixels of the canvas's current font.
  function fit(s, px) {
    const text = oneLine(s);
    if (ctx.measureText(text).width <= px) return text;
    const chars = Array.from(text);
    let lo = 0, hi = chars.length; // the most characters that fit with the ellipsis
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(chars.slice(0, mid).join("") + "\u2026").width <= px) lo = mid; else hi = mid - 1;
    }
    return lo > 0 ? chars.slice(0, lo).join("") + "\u2026" : "";
  }

  const countOf = (n, what) => n + " " + what + (n === 1 ? "" : "s"); // "1 lane", "2 lanes"
  document.getElementById("title").textContent = D.title + " (" + (D.format === "jobque" ? "jobque" : "Chrome") +
    " trace, " + countOf(lanes.length, "lane") + ", " + countOf(markers.length, "marker") + ")";
  const legend = document.getElementById("legend");
  for (const c of cats) {
    const e = document.createElement("span");
    e.className = "entry";
    const s = document.createElement("span");
    s.className = "swatch";
    s.style.background = c.color;
    e.appendChild(s);
    e.appendChild(document.createTextNode(cut(c.name, NAME_WIDTH)));
    e.title = c.name; // the whole name, as a tooltip
    legend.appendChild(e);
  }

  if (copiesTotal) {
    const e = document.createElement("span");
    e.className = "entry copies";
    const s = document.createElement("span");
    s.className = "swatch";
    s.style.background = COPY;
    e.appendChild(s);
    e.appendChild(document.createTextNode("copies (in, out, result)"));
    e.title = "values copied between states; their time counts under their job's category";
    legend.appendChild(e);
  }

  function fmt(us) {
    const a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toPrecision(4) + " s";
    if (a >= 1e3) return (us / 1e3).toPrecision(4) + " ms";
    return (a >= 10 ? us.toFixed(0) : us.toPrecision(3)) + " us";
  }
  const X = t => LABEL + (t - v0) / (v1 - v0) * (width - LABEL);
  const T = x => v0 + (x - LABEL) / (width - LABEL) * (v1 - v0);
  // A number of a counter: integers whole, others to 6 digits.
  const fmtV = v => Number.isInteger(v) ? String(v) : isNaN(v) ? "-" : String(parseFloat(v.toPrecision(6)));

  // Where a job's k-th slice starts, and where its last one ends: { li, t }.
  const startOf = (j, k) => ({ li: j.s[2 * k], t: lanes[j.s[2 * k]].ts[j.s[2 * k + 1]] });
  function endOf(j) {
    const k = j.s.length - 2, l = lanes[j.s[k]], i = j.s[k + 1];
    return { li: j.s[k], t: l.ts[i] + l.dur[i] };
  }
  // A job's arrows: the after dependencies it waited for (from their end),
  // the jobs it awaited (to the slice it resumed in), the submit that made
  // it (from the submitting job or the caller) and the jobs it submitted.
  function arrowsOf(j) {
    const out = [], first = startOf(j, 0);
    for (const id of j.deps) {
      const o = jobById.get(id);
      if (o) out.push({ kind: "after", from: o.id, to: j.id, a: endOf(o), b: first });
    }
    for (const [id, k] of j.aw) {
      const o = jobById.get(id);
      if (o) out.push({ kind: "await", from: o.id, to: j.id, a: endOf(o), b: startOf(j, k) });
    }
    if (j.sub) out.push({ kind: "submitted by", from: j.by, to: j.id, a: j.sub, b: first });
    for (const o of j.kids) if (o.sub) out.push({ kind: "submits", from: j.id, to: o.id, a: o.sub, b: startOf(o, 0) });
    return out;
  }
  // The critical path as arrows, each step from the job before it: from the
  // submit when that job submitted it, else from its end to the first slice
  // that started after it.
  function pathArrows() {
    const out = [];
    for (let k = 1; k < pathJobs.length; k++) {
      const p = pathJobs[k - 1], j = pathJobs[k];
      if (j.by === p.id && j.sub) {
        out.push({ kind: "path", from: p.id, to: j.id, a: j.sub, b: startOf(j, 0) });
        continue;
      }
      const a = endOf(p);
      let q = 0;
      while (q < j.s.length / 2 - 1 && startOf(j, q).t < a.t) q++;
      out.push({ kind: "path", from: p.id, to: j.id, a, b: startOf(j, q) });
    }
    return out;
  }
  const ARROW = { after: "#1565c0", await: "#8e24aa", "submitted by": "#2e7d32", submits: "#2e7d32",
    path: "#e65100" };
  const laneMid = li => AXIS + li * ROW + (lanes[li].maxDepth ? 3 + subRow(lanes[li]) / 2 : ROW / 2);
  function drawArrows(list, lineWidth) {
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL, AXIS, width - LABEL, lanes.length * ROW);
    ctx.clip();
    ctx.lineWidth = lineWidth;
    for (const w of list) {
      const x0 = X(w.a.t), y0 = laneMid(w.a.li), x1 = X(w.b.t), y1 = laneMid(w.b.li);
      const cx = (x0 + x1) / 2, cy = y0 === y1 ? y0 - ROW * 0.7 : y1; // one lane: a hop over the slices
      ctx.strokeStyle = ctx.fillStyle = ARROW[w.kind];
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      if (y0 === y1) ctx.quadraticCurveTo(cx, cy, x1, y1); else ctx.bezierCurveTo(cx, y0, cx, y1, x1, y1);
      ctx.stroke();
      const angle = Math.atan2(y1 - cy, x1 - cx);
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 8 * Math.cos(angle - 0.4), y1 - 8 * Math.sin(angle - 0.4));
      ctx.lineTo(x1 - 8 * Math.cos(angle + 0.4), y1 - 8 * Math.sin(angle + 0.4));
      ctx.fill();
      ctx.beginPath();
      ctx.arc(x0, y0, 2.5, 0, 2 * Math.PI);
      ctx.fill();
    }
    ctx.restore();
  }

  // The job under the cursor: its slices outlined.
  function outlineJob(j) {
    ctx.strokeStyle = "#111";
    ctx.lineWidth = 1.5;
    for (let q = 0; q < j.s.length; q += 2) {
      const l = lanes[j.s[q]], i = j.s[q + 1], s = l.ts[i], e = s + l.dur[i];
      if (e < v0 || s > v1) continue;
      const x0 = Math.max(LABEL, X(s)), x1 = Math.max(x0 + 2, Math.min(width, X(e)));
      ctx.strokeRect(x0, AXIS + j.s[q] * ROW + 2, x1 - x0, ROW - 4);
    }
    ctx.lineWidth = 1;
  }

  // The critical path: everything off it dimmed (an even-odd fill around
  // its steps, so that their spans stay as they are), its steps on the
  // lanes outlined (copies and the caller's work too), and arrows from each
  // of its jobs to the next. Returns the steps outlined.
  function drawPath() {
    const rects = [];
    for (const x of pathSteps) { // every step on a lane: runs, copies, submits, the caller's own work ...
      const s = x.t, e = x.t + x.dur;
      if (x.li < 0 || x.li >= lanes.length || !(x.dur > 0) || e < v0 || s > v1) continue;
      const x0 = Math.max(LABEL, X(s)), x1 = Math.max(x0 + 2, Math.min(width, X(e)));
      rects.push([x0, AXIS + x.li * ROW + 2, x1 - x0, ROW - 4]);
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL, AXIS, width - LABEL, lanes.length * ROW);
    for (const r of rects) ctx.rect(r[0], r[1], r[2], r[3]);
    ctx.fillStyle = "rgba(255,255,255,.7)";
    ctx.fill("evenodd");
    ctx.strokeStyle = ARROW.path;
    ctx.lineWidth = 2;
    for (const r of rects) ctx.strokeRect(r[0], r[1], r[2], r[3]);
    ctx.restore();
    drawArrows(pathArrows(), 2);
    return rects.length;
  }

  // The height of a span row in a lane with spans: its job slices' top row,
  // then a row per depth (at least 3 px; deeper spans share the last row).
  const subRow = l => Math.max(3, Math.max(ROW - 6, 1) / (l.maxDepth + 1));
  const spanRows = l => Math.max(1, Math.floor(Math.max(ROW - 6, 1) / subRow(l)) - 1);
  function drawSpans(l, li, y, k) {
    const h = subRow(l), rows = spanRows(l), last = [];
    let color = -2;
    for (let i = firstFrom(l, v0); i < l.ts.length; i++) {
      const s = l.ts[i];
      if (s > v1) break;
      const d = l.depth[i], e = s + l.dur[i];
      if (d === 0 || e < v0) continue;
      const row = Math.min(d, rows);
      let x0 = Math.max(LABEL, LABEL + (s - v0) * k), x1 = Math.min(width, LABEL + (e - v0) * k);
      if (x1 - x0 < 1) { // narrower than a pixel: one per pixel column and row
        const px = Math.floor(x0);
        if (last[row] === px) continue;
        last[row] = px; x0 = px; x1 = px + 1;
      } else {
        last[row] = Math.floor(x1);
      }
      if (l.c[i] !== color) { color = l.c[i]; ctx.fillStyle = cats[color] ? cats[color].color : "#888"; }
      const top = y + 3 + row * h;
      ctx.fillRect(x0, top, x1 - x0, h - 1);
      if (spanRects.length < 200) spanRects.push({ lane: li, index: i, depth: d, row, x0, x1, y0: top, y1: top + h - 1 });
      spansDrawn++;
    }
  }

  // The last sample of a counter at or before t (-1: none).
  function sampleAt(c, t) {
    let lo = 0, hi = c.ts.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (c.ts[m] <= t) lo = m + 1; else hi = m; }
    return lo - 1;
  }
  // Counters as area charts under the lanes, from 0 (or their min, when
  // below it) to their max: per pixel column the highest value there, so a
  // counter of a million samples draws as fast as one of a thousand.
  function drawCounters(top) {
    counterInfo = [];
    const cols = Math.max(1, Math.ceil(width - LABEL));
    counters.forEach((c, ci) => {
      const y = top + ci * CROW, lo = Math.min(0, c.min), hi = c.max > lo ? c.max : lo + 1;
      const Y = v => y + CROW - 4 - (v - lo) / (hi - lo) * (CROW - 10);
      ctx.fillStyle = ci % 2 ? "#f6f6f6" : "#fff";
      ctx.fillRect(0, y, width, CROW);
      let k = sampleAt(c, v0), cur = k >= 0 ? c.v[k] : NaN;
      k++;
      ctx.beginPath();
      ctx.moveTo(LABEL, Y(lo));
      for (let p = 0; p < cols; p++) {
        const end = T(LABEL + p + 1);
        let m = cur;
        while (k < c.ts.length && c.ts[k] < end) {
          cur = c.v[k++];
          if (!(m >= cur)) m = cur; // NaN (no value yet) gives way to any
        }
        const yy = isNaN(m) ? Y(lo) : Y(m);
        ctx.lineTo(LABEL + p, yy);
        ctx.lineTo(LABEL + p + 1, yy);
      }
      ctx.lineTo(LABEL + cols, Y(lo));
      ctx.closePath();
      ctx.fillStyle = "rgba(92,107,192,.35)";
      ctx.fill();
      ctx.strokeStyle = "#3949ab";
      ctx.stroke();
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, y, LABEL, CROW);
      ctx.fillStyle = "#222";
      const label = fit(c.name, LABEL - 12), maxLabel = "max " + (c.maxText || fmtV(c.max));
      ctx.fillText(label, 6, y + 10);
      ctx.fillStyle = "#666";
      ctx.fillText(maxLabel, 6, y + 24);
      counterInfo.push({ name: c.name, label, maxLabel, max: c.maxText || c.max, min: c.minText || c.min,
        n: c.ts.length });
    });
  }

  // First slice that may end after t: starts at or after t - maxdur.
  function firstFrom(l, t) {
    let lo = 0, hi = l.ts.length;
    const from = t - l.maxdur;
    while (lo < hi) { const m = (lo + hi) >> 1; if (l.ts[m] < from) lo = m + 1; else hi = m; }
    return lo;
  }

  // The first marker at or after t.
  function firstMarker(t) {
    let lo = 0, hi = markers.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (markers[m].t < t) lo = m + 1; else hi = m; }
    return lo;
  }

  // The figures of jobque_profile.stats over [a, b): busy and wait per lane
  // (each moment once, under the first slice met: the outer one), idle,
  // parallelism, categories.
  // Slice i of lane l's args.job (undefined when it has none).
  function argJob(l, i) {
    if (l.a[i] >= 0) { const x = D.args[l.a[i]]; return x && typeof x === "object" ? x.job : undefined; }
    return l.a[i] === -2 && D.keys[l.ak[i]] === "job" ? l.av[i] : undefined;
  }
  // A span inside a job adds no busy time (its job's slice holds it); one
  // outside jobs (the caller's own bracketing of its time) counts, as in the report.
  const spanInJob = (l, i) => l.depth !== null && l.depth[i] > 0 && argJob(l, i) !== undefined &&
    argJob(l, i) !== null && argJob(l, i) !== false;

  function rangeStats(a, b) {
    const acc = new Map();
    let busy = 0, wait = 0;
    for (const l of lanes) {
      let be = -Infinity, we = -Infinity;
      for (let i = firstFrom(l, a); i < l.ts.length; i++) {
        const s = l.ts[i];
        if (s >= b) break;
        const e = s + l.dur[i];
        if (e <= a || spanInJob(l, i)) continue;
        const x = s < a ? a : s, y = e > b ? b : e;
        if (l.c[i] === waitCat) {
          if (y > we) { wait += y - (x > we ? x : we); we = y; }
        } else if (y > be) {
          const st = x > be ? x : be;
          busy += y - st;
          const name = cats[l.c[i]].name;
          acc.set(name, (acc.get(name) || 0) + (y - st));
          be = y;
        }
      }
    }
    const dur = b - a;
    const top = [...acc].map(([name, t]) => ({ name, busy: t }))
      .sort((p, q) => q.busy - p.busy || (p.name < q.name ? -1 : 1));
    return { from: a, to: b, duration: dur, busy, wait,
      idle: dur > 0 && lanes.length ? 1 - busy / (dur * lanes.length) : 0,
      parallelism: dur > 0 ? busy / dur : 0, top };
  }

  let statsKey = null, statsCache = null;
  function showStats() { // only when the range changes: zooming and panning keep it
    const a = sel ? Math.min(sel[0], sel[1]) : 0, b = sel ? Math.max(sel[0], sel[1]) : span;
    const key = a + ":" + b;
    if (key === statsKey) return statsCache;
    const s = rangeStats(a, b);
    const top = s.top.slice(0, 3).map(c => cut(c.name, NAME_WIDTH) + " " + (100 * c.busy / (s.busy || 1)).toFixed(1) +
      "%").join(", ");
    statsEl.textContent = (sel ? "selection " : "whole trace ") + fmt(s.duration) + " from " + s.from.toFixed(3) +
      " us (since the session's start): idle " + (100 * s.idle).toFixed(1) + "%, parallelism " + s.parallelism.toFixed(2) +
      (top ? ", top: " + top : "");
    statsKey = key;
    statsCache = s;
    return s;
  }

  function niceStep(range, px) {
    const raw = range / Math.max(1, px / 90), p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }

  // Rows fill the window below the canvas's top, each at least MIN_ROW high.
  function rowHeight() {
    const top = canvas.getBoundingClientRect().top + window.scrollY;
    const room = (window.innerHeight || 0) - top - AXIS - DROPS - counters.length * CROW - 16;
    return Math.max(MIN_ROW, Math.floor(room / Math.max(1, lanes.length)));
  }

  function draw() {
    const t0 = performance.now();
    width = canvas.clientWidth || 1000;
    ROW = rowHeight();
    height = AXIS + lanes.length * ROW + counters.length * CROW + DROPS;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.height = height + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    // Axis.
    const step = niceStep(v1 - v0, width - LABEL);
    ctx.fillStyle = "#666";
    ctx.strokeStyle = "#eee";
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const x = X(t);
      ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, AXIS - 19); ctx.moveTo(x, AXIS); ctx.lineTo(x, height); ctx.stroke();
      ctx.fillText(fmt(t), x + 3, 9);
    }
    // The marker labels' band, below the tick labels.
    ctx.strokeStyle = "#ccc";
    ctx.beginPath(); ctx.moveTo(LABEL, AXIS - 18.5); ctx.lineTo(width, AXIS - 18.5); ctx.stroke();
    // Lanes: a slice narrower than a pixel shares its pixel column with the others there.
    let drawn = 0;
    failedDrawn = 0;
    copiesDrawn = 0;
    const bar = Math.max(ROW - 6, 1), thin = Math.max(4, Math.round(bar / 3));
    laneLabels = [];
    spanRects = [];
    spansDrawn = 0;
    lanes.forEach((l, li) => {
      const y = AXIS + li * ROW;
      ctx.fillStyle = li % 2 ? "#f6f6f6" : "#fff";
      ctx.fillRect(LABEL, y, width - LABEL, ROW);
      let last = -1, color = -2;
      const k = (width - LABEL) / (v1 - v0), ts = l.ts, dur = l.dur, n = ts.length, depth = l.depth;
      for (let i = firstFrom(l, v0); i < n; i++) {
        const s = ts[i];
        if (s > v1) break;
        if (depth !== null && depth[i] > 0) continue; // a span: drawn below, in its row
        const e = s + dur[i];
        if (e < v0) continue;
        let x0 = LABEL + (s - v0) * k, x1 = LABEL + (e - v0) * k;
        if (x0 < LABEL) x0 = LABEL;
        if (x1 > width) x1 = width;
        const wait = l.c[i] === waitCat;
        if (x1 - x0 < 1) {
          const px = Math.floor(x0);
          if (px === last) continue;
          last = px; x0 = px; x1 = px + 1;
        } else {
          last = Math.floor(x1);
        }
        const ci = l.copy && l.copy[i] ? -3 : l.c[i]; // -3: a copy
        if (ci === -3) copiesDrawn++;
        if (ci !== color) { color = ci; ctx.fillStyle = ci === -3 ? COPY : cats[ci] ? cats[ci].color : "#888"; }
        if (wait) ctx.fillRect(x0, y + 3 + (bar - thin) / 2, x1 - x0, thin);
        else ctx.fillRect(x0, y + 3, x1 - x0, bar);
        drawn++;
      }
      if (depth !== null) drawSpans(l, li, y, k);
      // Failed slices: a red outline with a diagonal hatch, at least 3 px wide.
      if (l.f.length) {
        ctx.save();
        ctx.strokeStyle = "#d32f2f";
        ctx.lineWidth = 2;
        for (const i of l.f) {
          const s = ts[i], e = s + dur[i];
          if (e < v0 || s > v1) continue;
          let x0 = Math.max(LABEL, LABEL + (s - v0) * k), x1 = Math.min(width, LABEL + (e - v0) * k);
          if (x1 - x0 < 3) { x0 -= 1; x1 = x0 + 3; }
          ctx.strokeRect(x0, y + 2, x1 - x0, ROW - 4);
          ctx.beginPath();
          for (let hx = x0 - ROW; hx < x1; hx += 6) {
            ctx.moveTo(Math.max(x0, hx), y + ROW - 2 - Math.max(0, x0 - hx));
            ctx.lineTo(Math.min(x1, hx + ROW - 4), y + 2 + Math.max(0, hx + ROW - 4 - x1));
          }
          ctx.lineWidth = 1;
          ctx.stroke();
          ctx.lineWidth = 2;
          failedDrawn++;
        }
        ctx.restore();
      }
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, y, LABEL, ROW);
      ctx.fillStyle = "#222";
      const label = fit(l.name, LABEL - 12);
      ctx.fillText(label, 6, y + ROW / 2);
      laneLabels.push(label);
    });
    pathDrawn = cpOn ? drawPath() : 0;
    arrows = hoverJob ? arrowsOf(hoverJob) : [];
    if (hoverJob) outlineJob(hoverJob);
    drawArrows(arrows.length > MAX_ARROWS ? arrows.slice(0, MAX_ARROWS) : arrows, 1.5);
    drawCounters(AXIS + lanes.length * ROW);
    // Dropped events: where each full lane stopped recording.
    const dy = AXIS + lanes.length * ROW + counters.length * CROW;
    ctx.fillStyle = "#fff"; ctx.fillRect(0, dy, width, DROPS);
    ctx.fillStyle = "#222"; ctx.fillText("dropped", 6, dy + DROPS / 2);
    let dropEnd = -Infinity;
    for (const l of lanes) {
      if (l.full === null || l.full === undefined) continue;
      const x = X(l.full);
      if (x < LABEL || x > width) continue;
      ctx.fillStyle = "#d32f2f";
      ctx.beginPath(); ctx.moveTo(x, dy + 3); ctx.lineTo(x + 6, dy + DROPS - 3); ctx.lineTo(x - 6, dy + DROPS - 3); ctx.fill();
      if (x + 8 >= dropEnd) { // a label only where the one before has ended
        const text = fit(l.name, MARK_LABEL) + ": " + l.dropped + " dropped";
        ctx.fillText(text, x + 8, dy + DROPS / 2);
        dropEnd = x + 8 + ctx.measureText(text).width + 6;
      }
    }
    // Markers across every lane. A label goes where the one before it has
    // ended (thinned, never drawn over another), cut to MARK_LABEL pixels.
    let labelEnd = -Infinity, lastX = -1;
    markerLabels = [];
    ctx.strokeStyle = "rgba(40,40,40,.55)";
    ctx.fillStyle = "#000";
    ctx.beginPath();
    for (let i = firstMarker(v0); i < markers.length && markers[i].t <= v1; i++) {
      const m = markers[i], x = Math.round(X(m.t)) + 0.5;
      if (x === lastX) continue; // markers closer than a pixel share one line
      lastX = x;
      ctx.moveTo(x, AXIS - 14); ctx.lineTo(x, dy);
      if (x + 3 >= labelEnd && x >= LABEL) {
        const text = fit(m.kind + (m.arg !== null ? " " + m.arg : ""), MARK_LABEL);
        const w = ctx.measureText(text).width;
        ctx.fillText(text, x + 3, AXIS - 9);
        markerLabels.push({ x: x + 3, w, text });
        labelEnd = x + 3 + w + 6;
      }
    }
    ctx.stroke();
    // The selection.
    if (sel) {
      const a = X(Math.min(sel[0], sel[1])), b = X(Math.max(sel[0], sel[1]));
      ctx.fillStyle = "rgba(33,150,243,.15)";
      ctx.fillRect(Math.max(a, LABEL), 0, Math.min(b, width) - Math.max(a, LABEL), height);
    }
    const stats = showStats();
    drawMs = performance.now() - t0;
    publish(stats, drawn);
  }

  function publish(stats, drawn) {
    const state = { lanes: lanes.length, legend: legend.children.length, markers: markers.length,
      width, label: LABEL, row: ROW, height, windowHeight: window.innerHeight, laneLabels, markerLabels,
      legendTexts: Array.from(legend.children, e => e.textContent), legendTitles: Array.from(legend.children, e => e.title),
      events: lanes.reduce((n, l) => n + l.ts.length, 0), drawn, drawMs, failed: failedTotal, failedDrawn,
      view: [v0, v1],
      selection: sel ? stats : null, whole: sel ? null : stats,
      loadMs: firstDrawn || (firstDrawn = performance.now() - started),
      critical: { on: cpOn, jobs: path ? path.jobs : [], duration: path ? us(path.dur) : null,
        share: path ? path.share : null, info: cpInfo.textContent, outlined: pathDrawn, steps: pathSteps.length,
        byKind, partial: !!(path && path.partial), banner: banner.hidden ? null : banner.textContent },
      hover: hoverJob ? hoverJob.id : null, arrowsTotal: arrows.length,
      arrows: arrows.slice(0, MAX_ARROWS).map(w => ({ kind: w.kind, from: w.from, to: w.to })),
      counters: counterInfo, spans: spanRects, spansDrawn, copies: copiesTotal, copiesDrawn };
    window.timelineState = state;
    document.body.dataset.state = JSON.stringify(state);
  }

  // The slice of lane l nearest t (within slack) among those drawn in
  // span row `row` (0: the job slices' row; the last row takes the deeper
  // spans too), or -1.
  function nearest(l, t, slack, row) {
    const rows = l.depth ? spanRows(l) : 0;
    let best = -1, bestGap = Infinity;
    for (let i = firstFrom(l, t - slack); i < l.ts.length && l.ts[i] <= t + slack; i++) {
      const d = l.depth ? l.depth[i] : 0;
      if (d !== row && !(row > 0 && row === rows && d > row)) continue;
      const s = l.ts[i], e = s + l.dur[i];
      const gap = t < s ? s - t : t > e ? t - e : 0;
      if (gap <= slack && gap <= bestGap) { best = i; bestGap = gap; }
    }
    return best;
  }
  // A job's lines in its slices' tooltip: its latencies (docs/cli.md).
  function jobLines(j) {
    return ["job      " + j.id + (j.onPath ? "  (on the critical path)" : ""),
      "ready    " + (j.ready === null ? "-" : fmt(j.ready)) + "  (ready to started: waiting for a worker)",
      "resume   " + (j.nresume ? fmt(j.resume) + "  (awaited job done to resumed, " + j.nresume + "x)" : "-"),
      "run      " + fmt(j.run), "suspended " + fmt(j.susp)];
  }
  // The job of a lane's slice: a job slice's own; a span's, a submit's (the
  // job it made) and a wait's (the job waited for): args.job.
  const submitCat = cats.findIndex(c => c.name === "submit");
  function jobAt(l, i) {
    if (l.job[i] >= 0) return jobs[l.job[i]];
    const args = l.a[i] >= 0 ? D.args[l.a[i]] : l.a[i] === -2 ? { [D.keys[l.ak[i]]]: l.av[i] } : null;
    const linked = (l.depth && l.depth[i] > 0) || l.c[i] === submitCat || l.c[i] === waitCat;
    return args && linked ? jobById.get(args.job) || null : null;
  }
  // A counter's value under the cursor.
  function counterHit(ci, t) {
    const c = counters[ci], k = sampleAt(c, t);
    return "counter " + c.name + "\nvalue   " + (k >= 0 ? c.exact.get(k) || fmtV(c.v[k]) : "- (before its first sample)") +
      "\nat      " + t.toFixed(3) + " us\nmax     " + (c.maxText || fmtV(c.max));
  }

  // Hover: the slice under the cursor (or within two pixels; in a lane with
  // spans, of the row under it), else a counter's value, else a marker.
  function hit(x, y) {
    const li = Math.floor((y - AXIS) / ROW);
    const t = T(x), slack = 2 * (v1 - v0) / (width - LABEL);
    lastHit = null;
    if (li >= 0 && li < lanes.length && x >= LABEL) {
      const l = lanes[li];
      const row = l.depth ? Math.max(0, Math.min(Math.floor((y - AXIS - li * ROW - 3) / subRow(l)), spanRows(l))) : 0;
      let best = nearest(l, t, slack, row);
      if (best < 0 && row > 0) best = nearest(l, t, slack, 0);
      if (best >= 0) {
        lastHit = { li, i: best };
        const isSpan = l.depth !== null && l.depth[best] > 0, j = l.job[best] >= 0 ? jobs[l.job[best]] : null;
        const c = cats[l.c[best]];
        const args = l.a[best] >= 0 ? D.args[l.a[best]] : null;
        const failed = args && args.failed === true;
        const onPath = stepsAt(li, t, slack).map(stepLine);
        return [D.names[l.n[best]] + (failed ? "  (FAILED)" : "") + (isSpan ? "  (span)" : ""),
          "category " + (c ? c.name : "?"),
          "lane     " + l.name,
          "start    " + l.ts[best].toFixed(3) + " us", "duration " + fmt(l.dur[best]),
          l.a[best] === -1 ? "" : "args     " + JSON.stringify(l.a[best] >= 0 ? D.args[l.a[best]] :
            { [D.keys[l.ak[best]]]: l.av[best] }),
          failed && typeof args.error === "string" ? "error    " + args.error : ""].concat(j ? jobLines(j) : [], onPath)
          .filter(Boolean).join("\n");
      }
      const onPath = stepsAt(li, t, slack); // a step where no slice is: a thread's own work, a wait for a worker
      if (onPath.length) return ["lane     " + l.name].concat(onPath.map(stepLine)).join("\n");
    }
    const ci = Math.floor((y - AXIS - lanes.length * ROW) / CROW);
    if (ci >= 0 && ci < counters.length && x >= LABEL) return counterHit(ci, t);
    const near = firstMarker(T(x - 3));
    for (let i = near; i < markers.length && X(markers[i].t) <= x + 3; i++) {
      const m = markers[i];
      if (Math.abs(X(m.t) - x) <= 3) {
        return "marker " + m.kind + (m.arg !== null ? "\narg    " + m.arg : "") +
          "\nat     " + m.t.toFixed(3) + " us";
      }
    }
    return null;
  }

  // The tooltip beside the cursor, kept on the page: to the left of it at
  // the right edge, above it at the bottom.
  function placeTip(cx, cy) {
    const w = tip.offsetWidth, h = tip.offsetHeight, W = document.documentElement.clientWidth || window.innerWidth;
    const H = window.innerHeight;
    let left = cx + 14, top = cy + 14;
    if (left + w > W - 4) left = Math.max(4, cx - 14 - w);
    if (top + h > H - 4) top = Math.max(4, cy - 14 - h);
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }

  let drag = null;
  canvas.addEventListener("mousedown", ev => {
    const x = ev.offsetX;
    drag = { x, v0, v1, select: ev.shiftKey };
    if (ev.shiftKey) sel = [T(x), T(x)];
  });
  window.addEventListener("mouseup", () => { drag = null; canvas.style.cursor = "grab"; });
  canvas.addEventListener("mousemove", ev => {
    if (drag) {
      if (drag.select) {
        sel[1] = T(ev.offsetX);
      } else {
        const dt = (ev.offsetX - drag.x) / (width - LABEL) * (drag.v1 - drag.v0);
        v0 = drag.v0 - dt; v1 = drag.v1 - dt;
        canvas.style.cursor = "grabbing";
      }
      tip.style.display = "none";
      draw();
      return;
    }
    const text = hit(ev.offsetX, ev.offsetY);
    const j = lastHit ? jobAt(lanes[lastHit.li], lastHit.i) : null;
    if (j !== hoverJob) { hoverJob = j; draw(); } // its arrows
    if (text) {
      tip.textContent = text;
      tip.style.display = "block";
      placeTip(ev.clientX, ev.clientY);
    } else {
      tip.style.display = "none";
    }
  });
  canvas.addEventListener("mouseleave", () => {
    tip.style.display = "none";
    if (hoverJob) { hoverJob = null; draw(); }
  });

  // The critical path: its figures beside the toggle (a checkbox, or the key c).
  const cpBox = document.getElementById("cp");
  const cpInfo = document.getElementById("cpinfo");
  const banner = document.getElementById("banner");
  if (path && path.partial) { // the trace lost events or left spans unclosed
    banner.textContent = "Partial trace: events were lost or spans left unclosed, so the critical path and " +
      "its figures may be short of the run's (the report says why).";
    banner.hidden = false;
  }
  const hasPath = pathJobs.length > 0 || pathSteps.length > 0; // a path through the caller alone has no jobs
  if (hasPath) {
    const n = new Set(path.jobs).size;
    cpInfo.textContent = fmt(us(path.dur)) + (path.share === null ? "" : ", " + (100 * path.share).toFixed(1) +
      "% of the session") + ", " + n + (n === 1 ? " job" : " jobs") + ": " +
      byKind.filter(p => p.us > 0).map(p => p.kind + " " + fmt(p.us)).join(", ") +
      (path.partial ? " (partial)" : "");
  } else {
    cpBox.disabled = true;
    cpInfo.textContent = "(no jobs in this trace)";
  }
  function setPath(on) {
    cpOn = on && hasPath;
    cpBox.checked = cpOn;
    draw();
  }
  cpBox.addEventListener("change", () => setPath(cpBox.checked));
  window.addEventListener("keydown", ev => {
    if ((ev.key === "c" || ev.key === "C") && !ev.ctrlKey && !ev.metaKey && !ev.altKey) setPath(!cpOn);
  });
  canvas.addEventListener("wheel", ev => {
    ev.preventDefault();
    const x = Math.max(LABEL, ev.offsetX), t = T(x);
    const k = Math.exp(Math.max(-1, Math.min(1, ev.deltaY * 0.002)));
    const w = Math.max((v1 - v0) * k, 1e-3);
    v0 = t - (x - LABEL) / (width - LABEL) * w; v1 = v0 + w;
    draw();
  }, { passive: false });
  canvas.addEventListener("dblclick", () => { v0 = 0; v1 = span; draw(); });
  window.addEventListener("resize", draw);

  // #from=US&to=US (since the session's start): zoomed to that range, and it selected.
  // A range the report refuses (beyond +-MAX_US, wholly outside the trace) or
  // one narrower than the file's nanosecond opens the whole trace instead.
  const m = /from=([-0-9.e+]+)&to=([-0-9.e+]+)/.exec(location.hash);
  if (m) {
    const a = parseFloat(m[1]), b = parseFloat(m[2]), lo = Math.min(a, b), hi = Math.max(a, b);
    if (Math.abs(lo) <= MAX_US && Math.abs(hi) <= MAX_US && hi - lo >= 1e-3 && lo < span && hi > 0) {
      sel = [Math.min(a, b), Math.max(a, b)];
      v0 = sel[0]; v1 = sel[1];
    }
  }
  // #cp (alone or among the others, "&cp"): opens with the critical path highlighted.
  if (/[#&]cp(&|$)/.test(location.hash) && hasPath) { cpOn = true; cpBox.checked = true; }
  draw();
  // @TEST_HOOKS@: where page.lua puts samples.js (a trace with samples) and hooks.js (the specs and the bench)
})();
