/* global canvas, AXIS, ROW, CROW, lanes, span, X, hit, draw, v0:writable, v1:writable */
// The timeline's test hooks, read from the URL fragment: #do= (replayed
// input), #hover= (the mouse moved there), #probe= and #cprobe= (a slice's
// or a counter's tooltip) and #bench (redraw times). html.render(model,
// {test_hooks = true}) puts what follows the first blank line where page.js
// says @TEST_HOOKS@, inside its function (hence the globals above); the page
// users get has none of it.

  // #do=STEP;STEP...: replays input through the real handlers (for the specs):
  // wheel:X:DY, drag:X1:X2, sdrag:X1:X2 (with shift), dblclick; X in canvas pixels;
  // key:K (a key pressed), click:ID (the element with that id clicked).
  const steps = /do=([^&]*)/.exec(location.hash);
  if (steps) {
    const at = (type, x, more) => {
      const r = canvas.getBoundingClientRect();
      const init = Object.assign({ clientX: r.left + x, clientY: r.top + AXIS + ROW / 2, bubbles: true,
        cancelable: true }, more);
      return type === "wheel" ? new WheelEvent(type, init) : new MouseEvent(type, init);
    };
    for (const step of steps[1].split(";")) {
      const [kind, a, b] = step.split(":");
      if (kind === "wheel") canvas.dispatchEvent(at("wheel", +a, { deltaY: +b }));
      if (kind === "drag" || kind === "sdrag") {
        const shiftKey = kind === "sdrag";
        canvas.dispatchEvent(at("mousedown", +a, { shiftKey }));
        canvas.dispatchEvent(at("mousemove", +b, { shiftKey }));
        window.dispatchEvent(at("mouseup", +b, { shiftKey }));
      }
      if (kind === "dblclick") canvas.dispatchEvent(at("dblclick", 300));
      if (kind === "key") window.dispatchEvent(new KeyboardEvent("keydown", { key: a, bubbles: true }));
      if (kind === "click") document.getElementById(a).click();
    }
  }
  // A lane's row at its middle, or Y pixels below its top.
  const rowY = (lane, y) => AXIS + parseInt(lane, 10) * ROW + (y === undefined ? ROW / 2 : parseFloat(y));
  const hover = /hover=(\d+),([-0-9.e]+)(?:,([0-9.]+))?/.exec(location.hash);
  if (hover) { // #hover=LANE,US[,Y]: the mouse moved there (through the handler: its job's arrows)
    const r = canvas.getBoundingClientRect();
    canvas.dispatchEvent(new MouseEvent("mousemove", { clientX: r.left + X(parseFloat(hover[2])),
      clientY: r.top + rowY(hover[1], hover[3]), bubbles: true }));
    const tr = document.getElementById("tip").getBoundingClientRect(); // where its tooltip went
    window.timelineState.tip = { left: tr.left, right: tr.right, top: tr.top, bottom: tr.bottom,
      pageWidth: document.documentElement.clientWidth, text: document.getElementById("tip").textContent,
      cursor: r.left + X(parseFloat(hover[2])) };
    document.body.dataset.state = JSON.stringify(window.timelineState);
  }
  const probe = /[#&]probe=(\d+),([-0-9.e]+)(?:,([0-9.]+))?/.exec(location.hash);
  if (probe) { // #probe=LANE,US[,Y]: the tooltip a hover there shows (for the specs)
    window.timelineState.probe = hit(X(parseFloat(probe[2])), rowY(probe[1], probe[3]));
    document.body.dataset.state = JSON.stringify(window.timelineState);
  }
  const cprobe = /cprobe=(\d+),([-0-9.e]+)/.exec(location.hash);
  if (cprobe) { // #cprobe=COUNTER,US: the tooltip of a counter's chart there
    window.timelineState.probe = hit(X(parseFloat(cprobe[2])),
      AXIS + lanes.length * ROW + parseInt(cprobe[1], 10) * CROW + CROW / 2);
    document.body.dataset.state = JSON.stringify(window.timelineState);
  }
  if (/bench/.test(location.hash)) { // #bench: time redraws while zooming in and out (bench/report.lua)
    const times = [];
    for (let i = 0; i < 20; i++) {
      const w = span / Math.pow(2, i % 10), c = span * ((i * 0.37) % 1);
      v0 = c - w / 2; v1 = c + w / 2;
      const t = performance.now();
      draw();
      times.push(performance.now() - t);
    }
    times.sort((p, q) => p - q);
    v0 = 0; v1 = span;
    draw();
    window.timelineState.redrawMs = { median: times[10], max: times[19] };
    document.body.dataset.state = JSON.stringify(window.timelineState);
  }
