/* global tip */
// The icicle's test hooks (samples.js), read from the URL fragment after
// hooks.js's: #iclick=X,ROW (a click on the icicle there; each in turn), then
// #ihover=X,ROW (the mouse moved there: its tooltip in timelineState.itip);
// X in the icicle's pixels, ROW its row from 0 at the top. page.lua puts
// what follows the first blank line after hooks.js, in a page with samples
// and the test hooks only (a page without samples keeps hooks.js's bytes).

  const icicleAt = (type, m) => {
    const ic = document.getElementById("icicle"), r = ic.getBoundingClientRect();
    ic.dispatchEvent(new MouseEvent(type, { clientX: r.left + parseFloat(m[1]),
      clientY: r.top + parseInt(m[2], 10) * 18 + 9, bubbles: true }));
  };
  for (const m of location.hash.matchAll(/[#&]iclick=([0-9.]+),(\d+)/g)) icicleAt("click", m);
  const ihover = /[#&]ihover=([0-9.]+),(\d+)/.exec(location.hash);
  if (ihover) {
    icicleAt("mousemove", ihover);
    window.timelineState.itip = tip.textContent;
    document.body.dataset.state = JSON.stringify(window.timelineState);
  }
