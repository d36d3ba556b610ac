/* global canvas, AXIS, ROW, span, X, hit, draw, v0:writable, v1:writable */
// The timeline's test hooks, read from the URL fragment: #do= (replayed
// input), #probe= (a tooltip) and #bench (redraw times). html.render(model,
// {test_hooks = true}) puts what follows the first blank line where page.js
// says @TEST_HOOKS@, inside its function (hence the globals above); the page
// users get has none of it.

  // #do=STEP;STEP...: replays input through the real handlers (for the specs):
  // wheel:X:DY, drag:X1:X2, sdrag:X1:X2 (with shift), dblclick; X in canvas pixels.
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
    }
  }
  const probe = /probe=(\d+),([-0-9.e]+)/.exec(location.hash);
  if (probe) { // #probe=LANE,US: the tooltip a hover there shows (for the specs)
    window.timelineState.probe = hit(X(parseFloat(probe[2])), AXIS + parseInt(probe[1], 10) * ROW + ROW / 2);
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
