/* global ctx, lanes, us, sel, v0, v1, width, ROW, AXIS, LABEL, X, fmt, fit, cut, NAME_WIDTH, tip, placeTip,
   legend, draw:writable, hit:writable, lastHit:writable */
// The timeline's samples (CPU-time samples of Lua stacks): an icicle of the
// selected range (the whole trace without a selection), filtered by a
// sample category and a lane, its widths proportional to weight; and, when
// the view is narrower than TICKS_BELOW, a tick per sample at the bottom of
// its lane, whose tooltip is the sample's stack. page.lua puts what
// follows the first blank line where page.js says @TEST_HOOKS@ (before the
// hooks), inside its function (hence the globals above), and the samples'
// data in the #samples element, only for a trace with samples: a page
// without them is the page as it was, byte for byte. So this part adds
// itself around page.js's draw and hit instead of being called from them:
// draw() draws the timeline, then the ticks and the icicle, and publishes
// them in timelineState.samples.

  const samplesStarted = performance.now();
  // The samples (page.lua's sample_data): the frame tree, the categories,
  // the period, and a column per field; times in ns since the session's start.
  const SD = JSON.parse(document.getElementById("samples").textContent);
  const TICKS_BELOW = 50000; // us: a view narrower than this shows the ticks
  // IROW: an icicle row's height; MAX_ROWS: the most rows it draws (a canvas
  // is at most 32,767 px high); TICK: a tick's height.
  const IROW = 18, MAX_ROWS = 800, MAX_BOXES = 1000, MAX_STACK = 30, TICK = 6;
  const sTs = Float64Array.from(SD.ts, us), sLane = Int32Array.from(SD.lane), sLeaf = Int32Array.from(SD.leaf);
  const sW = Float64Array.from(SD.w), sCat = Int32Array.from(SD.c);
  const periodUs = SD.period === null ? null : SD.period / 1000; // the time of one unit of weight
  // Each lane's samples in time order (the file's order already: by lane, then time).
  const laneSamples = lanes.map(() => []);
  for (let i = 0; i < sTs.length; i++) laneSamples[sLane[i]].push(i);
  laneSamples.forEach((list, li) => {
    for (let k = 1; k < list.length; k++) {
      if (sTs[list[k - 1]] > sTs[list[k]]) { list.sort((p, q) => sTs[p] - sTs[q] || p - q); break; }
    }
    laneSamples[li] = Int32Array.from(list);
  });
  // The icicle's nodes: node 0 "all", then one per path of frame names
  // (frames of one name under one node are one node: the tree the file's
  // stacks make); a node's parent always comes before it.
  const nName = ["all"], nKind = [null], nParent = [-1], nDepth = [0];
  const nodeOf = new Int32Array(SD.fname.length), byPath = new Map();
  for (let k = 0; k < SD.fname.length; k++) {
    const fp = SD.fparent[k], p = fp >= 0 && fp < k ? nodeOf[fp] : 0, key = p + "\u0000" + SD.fname[k];
    let node = byPath.get(key);
    if (node === undefined) {
      node = nName.length;
      byPath.set(key, node);
      nName.push(SD.fname[k]); nKind.push(SD.kinds[SD.fkind[k]]); nParent.push(p); nDepth.push(nDepth[p] + 1);
    }
    nodeOf[k] = node;
  }
  const nKids = nName.map(() => []);
  for (let n = 1; n < nName.length; n++) nKids[nParent[n]].push(n);
  for (const kids of nKids) kids.sort((p, q) => (nName[p] < nName[q] ? -1 : nName[p] > nName[q] ? 1 : p - q));

  // A node's colour: Lua frames warm, C frames blue, the runtime's grey,
  // each name its own shade (the same on every page).
  function shade(name) {
    let h = 0;
    for (let k = 0; k < name.length; k++) h = (h * 31 + name.charCodeAt(k)) >>> 0;
    return h;
  }
  function color(n) {
    if (n === 0) return "#c8c8c8";
    const h = shade(nName[n]), kind = nKind[n];
    if (kind === "lua") return "hsl(" + (15 + h % 35) + ",85%," + (58 + (h >>> 8) % 14) + "%)";
    if (kind === "C") return "hsl(" + (195 + h % 30) + ",60%," + (62 + (h >>> 8) % 12) + "%)";
    return "hsl(0,0%," + (70 + h % 12) + "%)";
  }

  // The panel: a line of figures, the two filters, the icicle's canvas.
  const style = document.createElement("style");
  style.textContent = "#samples-panel { margin: 0 12px 8px; border: 1px solid #ccc; background: #fff; }\n" +
    "#samples-bar { padding: 4px 8px; display: flex; flex-wrap: wrap; gap: 4px 14px; align-items: center; }\n" +
    "#samples-bar select { max-width: 24em; }\n" +
    "#samples-scroll { max-height: 40vh; overflow-y: auto; }\n" +
    "#icicle { display: block; width: 100%; cursor: pointer; }\n";
  document.head.appendChild(style);
  const panel = document.createElement("div");
  panel.id = "samples-panel";
  const bar = document.createElement("div");
  bar.id = "samples-bar";
  const info = document.createElement("span");
  info.id = "samples-info";
  // A filter: a select whose options are "all" and each name (cut, the whole name as its title).
  function filter(id, label, names) {
    const l = document.createElement("label"), s = document.createElement("select");
    s.id = id;
    l.appendChild(document.createTextNode(label + " "));
    const all = document.createElement("option");
    all.value = "-1";
    all.textContent = "all";
    s.appendChild(all);
    names.forEach((name, k) => {
      const o = document.createElement("option");
      o.value = String(k);
      o.textContent = cut(name, NAME_WIDTH);
      o.title = name;
      s.appendChild(o);
    });
    l.appendChild(s);
    bar.appendChild(l);
    s.addEventListener("change", () => { focus = 0; draw(); });
    return s;
  }
  bar.appendChild(info);
  const catNames = SD.cats.map(c => c[0]);
  const catSel = filter("samples-category", "category", catNames);
  const laneSel = filter("samples-lane", "lane", lanes.map(l => l.name));
  const scroll = document.createElement("div");
  scroll.id = "samples-scroll";
  const icicle = document.createElement("canvas");
  icicle.id = "icicle";
  const ictx = icicle.getContext("2d");
  scroll.appendChild(icicle);
  panel.appendChild(bar);
  panel.appendChild(scroll);
  legend.parentNode.insertBefore(panel, legend);
  // #scat=NAME&slane=NAME (URL-encoded): opens with those filters.
  function fromHash(key, select, names) {
    const m = new RegExp("[#&]" + key + "=([^&]*)").exec(location.hash);
    if (!m) return;
    let name;
    try { name = decodeURIComponent(m[1]); } catch { return; } // not URL-encoded text: no filter
    const k = names.indexOf(name);
    if (k >= 0) select.value = String(k);
  }
  fromHash("scat", catSel, catNames);
  fromHash("slane", laneSel, lanes.map(l => l.name));

  // The first sample of a lane's list at or after t.
  function firstSample(list, t) {
    let lo = 0, hi = list.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (sTs[list[m]] < t) lo = m + 1; else hi = m; }
    return lo;
  }
  // The weight of each node over [a, b] (all of it when a is null), of the
  // samples of category cat and lane lane (-1: any): self (as a leaf) and
  // total (self and the nodes above it), and how many samples.
  function weigh(a, b, cat, lane) {
    const self = new Float64Array(nName.length);
    let count = 0;
    laneSamples.forEach((list, li) => {
      if (lane >= 0 && li !== lane) return;
      for (let k = a === null ? 0 : firstSample(list, a); k < list.length; k++) {
        const i = list[k];
        if (a !== null && sTs[i] > b) break;
        if (cat >= 0 && sCat[i] !== cat) continue;
        self[nodeOf[sLeaf[i]]] += sW[i];
        count++;
      }
    });
    const total = Float64Array.from(self);
    for (let n = nName.length - 1; n > 0; n--) total[nParent[n]] += total[n];
    return { self, total, count };
  }

  let focus = 0; // the node the icicle is zoomed to (clicked): as wide as the icicle
  let boxes = [], icicleState = null, icicleKey = null, weights = null, weightKey = null;
  // Weight as the page says it: its time when the file gives the period.
  const weightText = w => String(parseFloat(w.toPrecision(6))) + (periodUs === null ? "" : " (" + fmt(w * periodUs) +
    ")");

  // The icicle's boxes: the focus's ancestors across the whole width, then
  // the focus and its subtree, each node as wide as its share of the
  // focus's total weight, children in name order (no recursion: a stack).
  function layout(total, W) {
    const out = [];
    for (let n = nParent[focus]; n >= 0; n = nParent[n]) out.push({ node: n, x0: 0, x1: W });
    if (!(total[focus] > 0)) return out;
    const scale = W / total[focus], stack = [[focus, 0]];
    while (stack.length) {
      const [n, x] = stack.pop(), w = total[n] * scale;
      out.push({ node: n, x0: x, x1: x + w });
      if (w < 0.1) continue; // its subtree is narrower than a pixel's tenth: not laid out
      let cx = x;
      for (const c of nKids[n]) {
        if (total[c] > 0) { stack.push([c, cx]); cx += total[c] * scale; }
      }
    }
    return out;
  }

  function drawIcicle() {
    const a = sel ? Math.min(sel[0], sel[1]) : null, b = sel ? Math.max(sel[0], sel[1]) : null;
    const cat = Number(catSel.value), lane = Number(laneSel.value), W = icicle.clientWidth || width;
    const wkey = [a, b, cat, lane].join(":");
    if (wkey !== weightKey) { weights = weigh(a, b, cat, lane); weightKey = wkey; }
    const total = weights.total;
    if (!(total[focus] > 0)) focus = 0;
    const key = wkey + ":" + focus + ":" + W;
    if (key === icicleKey) return icicleState;
    icicleKey = key;
    boxes = layout(total, W);
    const deepest = boxes.reduce((m, x) => Math.max(m, nDepth[x.node] + 1), 1), rows = Math.min(deepest, MAX_ROWS);
    const dpr = window.devicePixelRatio || 1, H = rows * IROW;
    icicle.width = Math.round(W * dpr);
    icicle.height = Math.round(H * dpr);
    icicle.style.height = H + "px";
    ictx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ictx.clearRect(0, 0, W, H);
    ictx.font = "11px system-ui, sans-serif";
    ictx.textBaseline = "middle";
    let drawn = 0;
    for (const x of boxes) {
      if ((x.x1 - x.x0 < 0.5 && x.node !== 0) || nDepth[x.node] >= rows) continue;
      const y = nDepth[x.node] * IROW;
      ictx.fillStyle = color(x.node);
      ictx.globalAlpha = x.node !== focus && nDepth[x.node] < nDepth[focus] ? 0.55 : 1; // the focus's ancestors: dimmed
      ictx.fillRect(x.x0, y, Math.max(x.x1 - x.x0 - 0.5, 0.5), IROW - 1);
      ictx.globalAlpha = 1;
      if (x.x1 - x.x0 > 24) {
        ictx.fillStyle = "#111";
        ictx.fillText(fit(nName[x.node], x.x1 - x.x0 - 6), x.x0 + 3, y + IROW / 2);
      }
      drawn++;
    }
    const range = a === null ? "the whole trace" : "the selection " + fmt(b - a) + " from " + a.toFixed(3) + " us";
    info.textContent = "CPU samples of " + range + ": " + weights.count + (weights.count === 1 ? " sample" :
      " samples") + ", weight " + weightText(total[0]) + ". Click a frame to zoom to it, the top row to zoom out." +
      (deepest > rows ? " Frames deeper than " + MAX_ROWS + " rows are not drawn." : "");
    icicleState = { range: a === null ? null : [a, b], category: cat < 0 ? null : catNames[cat],
      lane: lane < 0 ? null : lanes[lane].name, count: weights.count, total: total[0], focus: nName[focus],
      width: W, rows, drawn, boxes: boxes.slice(0, MAX_BOXES).map(x => ({ name: nName[x.node], kind: nKind[x.node],
        depth: nDepth[x.node], x0: x.x0, x1: x.x1, total: total[x.node], self: weights.self[x.node] })),
      info: info.textContent };
    return icicleState;
  }

  // The box of the icicle at (x, y) in its pixels, or null.
  function boxAt(x, y) {
    const depth = Math.floor(y / IROW);
    for (const b of boxes) if (nDepth[b.node] === depth && x >= b.x0 && x < b.x1) return b;
    return null;
  }
  function boxText(b) {
    const t = weights.total[b.node], s = weights.self[b.node], all = weights.total[0] || 1;
    return [nName[b.node] + (nKind[b.node] ? "  (" + nKind[b.node] + ")" : ""),
      "total    " + weightText(t) + ", " + (100 * t / all).toFixed(1) + "% of the shown",
      "self     " + weightText(s) + ", " + (100 * s / all).toFixed(1) + "%"].join("\n");
  }
  icicle.addEventListener("click", ev => {
    const b = boxAt(ev.offsetX, ev.offsetY);
    if (b) { focus = b.node; draw(); }
  });
  icicle.addEventListener("mousemove", ev => {
    const b = boxAt(ev.offsetX, ev.offsetY);
    if (!b) { tip.style.display = "none"; return; }
    tip.textContent = boxText(b);
    tip.style.display = "block";
    placeTip(ev.clientX, ev.clientY);
  });
  icicle.addEventListener("mouseleave", () => { tip.style.display = "none"; });

  // Ticks: a sample's mark at the bottom of its lane (over its slices'
  // bottom edge), one per pixel column.
  let tickCount = 0;
  const ticksOn = () => v1 - v0 < TICKS_BELOW;
  function drawTicks() {
    tickCount = 0;
    if (!ticksOn()) return;
    ctx.fillStyle = "#263238";
    laneSamples.forEach((list, li) => {
      const y = AXIS + li * ROW + ROW - TICK - 1;
      let last = -1;
      for (let k = firstSample(list, v0); k < list.length && sTs[list[k]] <= v1; k++) {
        const px = Math.floor(X(sTs[list[k]]));
        if (px === last || px < LABEL || px >= width) continue;
        last = px;
        ctx.fillRect(px, y, 1, TICK);
        tickCount++;
      }
    });
  }
  // The sample whose tick is within two pixels of (x, y) in a lane's tick
  // strip (its bottom TICK + 2 px), or -1.
  function tickAt(x, y) {
    const li = Math.floor((y - AXIS) / ROW);
    if (!ticksOn() || li < 0 || li >= lanes.length || x < LABEL || y < AXIS + li * ROW + ROW - TICK - 2) return -1;
    const list = laneSamples[li], slack = 2 * (v1 - v0) / (width - LABEL), t = v0 + (x - LABEL) / (width - LABEL) *
      (v1 - v0);
    let best = -1, gap = Infinity;
    for (let k = firstSample(list, t - slack); k < list.length && sTs[list[k]] <= t + slack; k++) {
      const g = Math.abs(sTs[list[k]] - t);
      if (g < gap) { gap = g; best = list[k]; }
    }
    return best;
  }
  // A sample's tooltip: its time, lane, category, weight and stack, leaf first.
  function sampleText(i) {
    const out = ["sample   at " + sTs[i].toFixed(3) + " us", "lane     " + lanes[sLane[i]].name,
      "category " + catNames[sCat[i]], "weight   " + weightText(sW[i]), "stack    (leaf first)"];
    let n = nodeOf[sLeaf[i]], k = 0;
    for (; n > 0 && k < MAX_STACK; n = nParent[n], k++) out.push("  " + nName[n]);
    if (n > 0) out.push("  ... (" + nDepth[n] + " more)");
    return out.join("\n");
  }

  const hitTimeline = hit, drawTimeline = draw;
  hit = function (x, y) {
    const i = tickAt(x, y);
    if (i < 0) return hitTimeline(x, y);
    lastHit = null;
    return sampleText(i);
  };
  draw = function () {
    drawTimeline();
    drawTicks();
    const state = window.timelineState;
    state.samples = { count: sTs.length, period: periodUs, setupMs, ticks: { on: ticksOn(), drawn: tickCount },
      categories: catNames, icicle: drawIcicle() };
    document.body.dataset.state = JSON.stringify(state);
  };
  window.addEventListener("resize", draw);
  const setupMs = performance.now() - samplesStarted; // reading the samples and building the panel
  draw();
