  // Installed before any page script (Page.addScriptToEvaluateOnNewDocument), so the
  // observers see every entry; `buffered: true` also replays what came before.
  if (window.__captureAudit) return;
  const state = {
    installed: true,
    lcp: null,
    lcpSelector: null,
    lcpUrl: null,
    lcpSize: null,
    cls: 0,
    shifts: [],
    fcp: null,
    longTasks: [],
    longTaskCount: 0,
    inputSeen: false,
    // Bumped by every LCP candidate and layout shift: the settle step waits for it to rest.
    changes: 0,
  };
  Object.defineProperty(window, '__captureAudit', { value: state, enumerable: false, configurable: false, writable: false });
  // The default buffer keeps 250 resource entries; an audited page may have more.
  try {
    performance.setResourceTimingBufferSize(2000);
  } catch (e) {}
  // Observer callbacks arrive as low-priority tasks; the collector calls `flush()` to take
  // the entries still queued, so nothing measured before collection is lost.
  const observers = [];
  const observe = (type, cb) => {
    try {
      const o = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) cb(entry);
      });
      o.observe({ type, buffered: true });
      observers.push([o, cb]);
    } catch (e) {}
  };
  state.flush = () => {
    for (const [o, cb] of observers) {
      for (const entry of o.takeRecords()) cb(entry);
    }
  };
  // LCP as web-vitals reports it: the last candidate before the first user input.
  observe('largest-contentful-paint', (e) => {
    if (state.inputSeen) return;
    state.changes++;
    state.lcp = e.startTime;
    state.lcpSize = e.size;
    state.lcpUrl = e.url || null;
    state.lcpSelector = e.element ? cssSelector(e.element) : null;
  });
  // CLS with session windows (web-vitals): shifts without recent input are grouped while
  // each comes less than 1 s after the previous one and within 5 s of the window's first;
  // CLS is the largest window's sum.
  let winValue = 0;
  let winFirst = 0;
  let winLast = 0;
  observe('layout-shift', (e) => {
    if (e.hadRecentInput) return;
    state.changes++;
    if (winValue && e.startTime - winLast < 1000 && e.startTime - winFirst < 5000) {
      winValue += e.value;
    } else {
      winValue = e.value;
      winFirst = e.startTime;
    }
    winLast = e.startTime;
    if (winValue > state.cls) state.cls = winValue;
    if (state.shifts.length < 20) {
      const sources = [];
      for (const s of e.sources || []) {
        const sel = s.node ? cssSelector(s.node) : null;
        if (sel && sources.length < 3) sources.push(sel);
      }
      state.shifts.push({ startTime: e.startTime, value: e.value, sources });
    }
  });
  observe('paint', (e) => {
    if (e.name === 'first-contentful-paint') state.fcp = e.startTime;
  });
  observe('longtask', (e) => {
    state.longTaskCount++;
    if (state.longTasks.length < 200) state.longTasks.push({ startTime: e.startTime, duration: e.duration });
  });
  for (const type of ['keydown', 'pointerdown', 'click']) {
    addEventListener(type, (ev) => { if (ev.isTrusted) state.inputSeen = true; }, { capture: true, passive: true });
  }
