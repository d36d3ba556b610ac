// The timeline page's script (jobque_profile.html puts it in page.html,
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
  let failedDrawn = 0;
  const cats = D.cats.map(c => ({ name: c[0], color: c[1] }));
  const waitCat = cats.findIndex(c => c.name === "wait");
  const markers = D.mt.map((t, i) => ({ t: us(t), kind: D.kinds[D.mk[i]], arg: D.ma[i] }));
  const span = D.span > 0 ? us(D.span) : 1;
  const canvas = document.getElementById("tl"), ctx = canvas.getContext("2d");
  const tip = document.getElementById("tip"), statsEl = document.getElementById("stats");
  let v0 = 0, v1 = span, sel = null, drawMs = 0, width = 0, firstDrawn = 0, ROW = MIN_ROW, height = 0;
  let laneLabels = [], markerLabels = [];

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

  document.getElementById("title").textContent = D.title + " (" + (D.format === "jobque" ? "jobque" : "Chrome") +
    " trace, " + lanes.length + " lanes, " + markers.length + " markers)";
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

  function fmt(us) {
    const a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toPrecision(4) + " s";
    if (a >= 1e3) return (us / 1e3).toPrecision(4) + " ms";
    return (a >= 10 ? us.toFixed(0) : us.toPrecision(3)) + " us";
  }
  const X = t => LABEL + (t - v0) / (v1 - v0) * (width - LABEL);
  const T = x => v0 + (x - LABEL) / (width - LABEL) * (v1 - v0);

  // First slice that may end after t: starts at or after t - maxdur.
  function firstFrom(l, t) {
    let lo = 0, hi = l.ts.length;
    const from = t - l.maxdur;
    while (lo < hi) { const m = (lo + hi) >> 1; if (l.ts[m] < from) lo = m + 1; else hi = m; }
    return lo;
  }

  // The figures of jobque_profile.stats over [a, b): busy and wait per lane
  // (each moment once, under the outermost slice), idle, parallelism, categories.
  function firstMarker(t) {
    let lo = 0, hi = markers.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (markers[m].t < t) lo = m + 1; else hi = m; }
    return lo;
  }

  function rangeStats(a, b) {
    const acc = new Map();
    let busy = 0, wait = 0;
    for (const l of lanes) {
      let be = -Infinity, we = -Infinity;
      for (let i = firstFrom(l, a); i < l.ts.length; i++) {
        const s = l.ts[i];
        if (s >= b) break;
        const e = s + l.dur[i];
        if (e <= a) continue;
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
    const room = (window.innerHeight || 0) - top - AXIS - DROPS - 16;
    return Math.max(MIN_ROW, Math.floor(room / Math.max(1, lanes.length)));
  }

  function draw() {
    const t0 = performance.now();
    width = canvas.clientWidth || 1000;
    ROW = rowHeight();
    height = AXIS + lanes.length * ROW + DROPS;
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
    const bar = Math.max(ROW - 6, 1), thin = Math.max(4, Math.round(bar / 3));
    laneLabels = [];
    lanes.forEach((l, li) => {
      const y = AXIS + li * ROW;
      ctx.fillStyle = li % 2 ? "#f6f6f6" : "#fff";
      ctx.fillRect(LABEL, y, width - LABEL, ROW);
      let last = -1, color = -2;
      const k = (width - LABEL) / (v1 - v0), ts = l.ts, dur = l.dur, n = ts.length;
      for (let i = firstFrom(l, v0); i < n; i++) {
        const s = ts[i];
        if (s > v1) break;
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
        if (l.c[i] !== color) { color = l.c[i]; ctx.fillStyle = cats[color] ? cats[color].color : "#888"; }
        if (wait) ctx.fillRect(x0, y + 3 + (bar - thin) / 2, x1 - x0, thin);
        else ctx.fillRect(x0, y + 3, x1 - x0, bar);
        drawn++;
      }
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
    // Dropped events: where each full lane stopped recording.
    const dy = AXIS + lanes.length * ROW;
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
      loadMs: firstDrawn || (firstDrawn = performance.now() - started) };
    window.timelineState = state;
    document.body.dataset.state = JSON.stringify(state);
  }

  // Hover: the slice under the cursor (or within two pixels), else a marker.
  function hit(x, y) {
    const li = Math.floor((y - AXIS) / ROW);
    const t = T(x), slack = 2 * (v1 - v0) / (width - LABEL);
    if (li >= 0 && li < lanes.length && x >= LABEL) {
      const l = lanes[li];
      let best = -1, bestGap = Infinity;
      for (let i = firstFrom(l, t - slack); i < l.ts.length && l.ts[i] <= t + slack; i++) {
        const s = l.ts[i], e = s + l.dur[i];
        const gap = t < s ? s - t : t > e ? t - e : 0;
        if (gap <= slack && gap <= bestGap) { best = i; bestGap = gap; }
      }
      if (best >= 0) {
        const c = cats[l.c[best]];
        const args = l.a[best] >= 0 ? D.args[l.a[best]] : null;
        const failed = args && args.failed === true;
        return [D.names[l.n[best]] + (failed ? "  (FAILED)" : ""), "category " + (c ? c.name : "?"),
          "lane     " + l.name,
          "start    " + l.ts[best].toFixed(3) + " us", "duration " + fmt(l.dur[best]),
          l.a[best] === -1 ? "" : "args     " + JSON.stringify(l.a[best] >= 0 ? D.args[l.a[best]] :
            { [D.keys[l.ak[best]]]: l.av[best] }),
          failed && typeof args.error === "string" ? "error    " + args.error : ""].filter(Boolean).join("\n");
      }
    }
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
    if (text) {
      tip.textContent = text;
      tip.style.display = "block";
      tip.style.left = (ev.clientX + 14) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
    } else {
      tip.style.display = "none";
    }
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
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
  draw();
  // @TEST_HOOKS@: where html.lua puts hooks.js, for the specs and the bench only
})();
