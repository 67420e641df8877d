// Reads what a reader would see wrong in a report's charts and layout; run
// by CheckInBrowser after the charts have drawn. It returns JSON: per chart
// its y axes' readable ticks, series laid flat by another unit on their
// axis, legend entries that do not name their series, and text drawn
// beyond the chart's box; for the page, elements wider than the window.
(() => {
  const minLabelGap = 18; // px between y labels of 12 px: closer ones touch or are hidden
  const flatShare = 0.03; // a series spanning less of its axis looks like a line at one value
  const pageMetrics = new Set();
  const all = [];
  for (const el of document.querySelectorAll("[data-chart]")) {
    const inst = window.echarts ? echarts.getInstanceByDom(el) : null;
    if (!inst) continue;
    const opt = inst.getOption();
    for (const s of opt.series || []) if (s.dbrigMetric) pageMetrics.add(s.dbrigMetric);
    all.push({el, inst, opt});
  }
  const name = s => String(s.name === undefined ? "" : s.name);
  const yOf = d => {
    const v = d && typeof d === "object" && !Array.isArray(d) ? d.value : d;
    if (Array.isArray(v)) return v.length > 2 ? v.slice(1) : [v[1]]; // a box plot's item is its five figures
    return [v];
  };
  const words = s => new Set(String(s).toLowerCase().split(/[^a-z0-9_%/]+/).filter(w => w));
  const out = {charts: [], wide: []};
  for (const {el, inst, opt} of all) {
    const c = {id: el.id, axes: [], flat: [], legend: [], clipped: []};
    const model = inst.getModel();
    const series = opt.series || [];
    (opt.yAxis || []).forEach((_, i) => {
      const axisModel = model.getComponent("yAxis", i);
      const axis = axisModel && axisModel.axis;
      if (!axis || axis.type === "category") return;
      const px = axis.scale.getTicks().map(t => inst.convertToPixel({yAxisIndex: i}, t.value)).filter(p => isFinite(p)).sort((a, b) => a - b);
      let readable = 0, last = -Infinity;
      for (const p of px) if (p - last >= minLabelGap) { readable++; last = p; }
      const ext = axis.getExtent();
      const length = Math.abs(ext[1] - ext[0]);
      c.axes.push({index: i, name: axisModel.get("name") || "", ticks: readable, length});
      // Each series' share of its axis, by unit.
      const mine = series.filter(s => (s.yAxisIndex || 0) === i && s.type !== "boxplot");
      const units = new Set(mine.map(s => s.dbrigUnit || ""));
      if (units.size < 2 || length === 0) return;
      const spans = mine.map(s => {
        const ys = (s.data || []).flatMap(yOf).filter(v => typeof v === "number" && isFinite(v));
        if (ys.length < 2) return {s, share: 1};
        const a = inst.convertToPixel({yAxisIndex: i}, Math.min(...ys)), b = inst.convertToPixel({yAxisIndex: i}, Math.max(...ys));
        const distinct = Math.min(...ys) !== Math.max(...ys);
        return {s, share: distinct ? Math.abs(a - b) / length : 1};
      });
      for (const f of spans.filter(x => x.share < flatShare)) {
        const other = spans.find(x => (x.s.dbrigUnit || "") !== (f.s.dbrigUnit || "") && x.share >= flatShare);
        if (other) c.flat.push(`series "${name(f.s)}" (${f.s.dbrigUnit || "no unit"}) lies flat on y axis ${i}, which it shares with "${name(other.s)}" (${other.s.dbrigUnit || "no unit"})`);
      }
    });
    // The legend names each series once, and a name says the series' own metric.
    const legend = [];
    for (const l of opt.legend || []) for (const d of l.data || []) legend.push(typeof d === "object" ? String(d.name) : String(d));
    const names = series.map(name);
    for (const n of legend) if (!names.includes(n)) c.legend.push(`legend entry "${n}" names no series`);
    if ((opt.legend || []).length) for (const n of names) if (!legend.includes(n)) c.legend.push(`series "${n}" has no legend entry`);
    for (const s of series) {
      if (!s.dbrigMetric) continue;
      const w = words(name(s));
      if (w.has(String(s.dbrigMetric).toLowerCase())) continue;
      for (const m of pageMetrics) {
        if (m !== s.dbrigMetric && w.has(String(m).toLowerCase())) {
          c.legend.push(`series "${name(s)}" draws ${s.dbrigMetric} but its name says ${m}`);
          break;
        }
      }
    }
    // Text drawn beyond the chart's own box is cut off by its canvas.
    const w = inst.getWidth(), h = inst.getHeight();
    for (const d of inst.getZr().storage.getDisplayList(true)) {
      if (d.type !== "tspan" || d.invisible || d.ignore || !d.style || !d.style.text) continue;
      const r = d.getBoundingRect().clone();
      r.applyTransform(d.getComputedTransform());
      if (r.x < -1 || r.y < -1 || r.x + r.width > w + 1 || r.y + r.height > h + 1) {
        c.clipped.push(`"${d.style.text}" at x ${Math.round(r.x)} to ${Math.round(r.x + r.width)}, y ${Math.round(r.y)} to ${Math.round(r.y + r.height)} in a ${w} x ${h} chart`);
      }
    }
    out.charts.push(c);
  }
  // Elements that reach beyond the window, unless a box that scrolls or
  // clips sideways holds them (a wide table in its scroll box is fine).
  const view = document.documentElement.clientWidth;
  const held = e => {
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      const ox = getComputedStyle(p).overflowX;
      if (ox === "auto" || ox === "scroll" || ox === "hidden" || ox === "clip") return p.getBoundingClientRect().right <= view + 1;
    }
    return false;
  };
  const describe = e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.trim().split(/\s+/).join(".") : "");
  for (const e of document.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.right <= view + 1 || held(e)) continue;
    if (out.wide.some(w => w.el.contains(e))) continue;
    out.wide.push({el: e, text: `${describe(e)} ("${(e.innerText || "").trim().slice(0, 40)}") reaches ${Math.round(r.right)} px in a ${view} px window`});
  }
  out.wide = out.wide.map(w => w.text);
  out.pageWidth = document.documentElement.scrollWidth;
  out.viewWidth = view;
  return out;
})()
