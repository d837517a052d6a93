(async () => {
  // After the load event: wait until the first contentful paint was observed and no LCP
  // candidate or layout shift has come for QUIET ms, at most MAX ms in all. Paint entries
  // arrive after the frame is presented, some time after requestAnimationFrame.
  const MAX = __MAX__;
  const QUIET = __QUIET__;
  const st = window.__captureAudit;
  const t0 = performance.now();
  // requestAnimationFrame stops in a hidden page; the timer keeps the loop going.
  const tick = () => new Promise((r) => {
    const t = setTimeout(r, 50);
    requestAnimationFrame(() => { clearTimeout(t); r(); });
  });
  let last = -1;
  let since = performance.now();
  while (st && performance.now() - t0 < MAX) {
    await tick();
    st.flush();
    if (st.changes !== last) {
      last = st.changes;
      since = performance.now();
    }
    if (st.fcp != null && performance.now() - since >= QUIET) break;
  }
  return { waitedMs: Math.round(performance.now() - t0), painted: !!(st && st.fcp != null) };
})()
