(async () => {
  // Run after axe.min.js (npm `axe-core`) was evaluated in the page.
  const MAX_VIOLATIONS = 100;
  const MAX_NODES = 10;
  if (typeof axe === 'undefined' || !axe || typeof axe.run !== 'function') {
    return { error: 'axe-core is not loaded in the page' };
  }
  try {
    const r = await axe.run(document, { resultTypes: ['violations'] });
    // axe reports no impact for a rule that passed; its checks still carry the impact a
    // failure would have had, which the accessibility score weighs passes by.
    const RANK = { minor: 1, moderate: 2, serious: 3, critical: 4 };
    const passedImpacts = { critical: 0, serious: 0, moderate: 0, minor: 0 };
    for (const p of r.passes || []) {
      let best = null;
      for (const n of p.nodes || []) {
        for (const c of [].concat(n.any || [], n.all || [], n.none || [])) {
          if (c && RANK[c.impact] && (!best || RANK[c.impact] > RANK[best])) best = c.impact;
        }
      }
      passedImpacts[best || p.impact || 'moderate']++;
    }
    return {
      version: axe.version || null,
      passes: (r.passes || []).length,
      passedImpacts,
      incomplete: (r.incomplete || []).length,
      violations: (r.violations || []).slice(0, MAX_VIOLATIONS).map((v) => ({
        id: v.id,
        impact: v.impact || null,
        help: v.help,
        description: v.description,
        helpUrl: v.helpUrl,
        tags: (v.tags || []).slice(0, 12),
        nodeCount: (v.nodes || []).length,
        nodes: (v.nodes || []).slice(0, MAX_NODES).map((n) => ({
          target: (n.target || []).map((t) => (Array.isArray(t) ? t.join(' ') : String(t))),
          html: String(n.html || '').slice(0, 300),
          failureSummary: String(n.failureSummary || '').slice(0, 600),
        })),
      })),
    };
  } catch (e) {
    return { error: String((e && e.message) || e).slice(0, 500) };
  }
})()
