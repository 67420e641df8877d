"use strict";
// Draws every chart of a dbrig report with the inlined echarts. Each chart's
// option is JSON in a <script type="application/json" class="chart-option">
// beside its container; this script adds what JSON cannot carry (tooltip
// and axis label formatters) and keeps the charts sized to the page.
(function () {
  var charts = [];
  window.dbrigCharts = charts;
  if (typeof echarts === "undefined") {
    console.error("dbrig report: echarts did not load");
    return;
  }

  function esc(s) { return echarts.format.encodeHTML(String(s)); }

  // full formats a value for a tooltip: up to 6 significant digits.
  function full(v) {
    if (typeof v !== "number" || !isFinite(v)) { return String(v); }
    return v.toLocaleString("en-US", { maximumSignificantDigits: 6 });
  }

  // compact formats an axis label: 1500 -> 1.5k, 2000000 -> 2M.
  function compact(v) {
    if (typeof v !== "number" || !isFinite(v)) { return String(v); }
    var a = Math.abs(v);
    var units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    if (a >= 1e4) {
      for (var i = 0; i < units.length; i++) {
        if (a >= units[i][0]) { return +(v / units[i][0]).toPrecision(3) + units[i][1]; }
      }
    }
    if (a === 0) { return "0"; }
    if (a < 1e-3) { return v.toExponential(1); }
    return String(+v.toPrecision(4));
  }

  function axes(a) { return Array.isArray(a) ? a : (a ? [a] : []); }

  function tooltipFormatter(cats, xName) {
    var xl = esc(xName || "x") + " = ";
    return function (params) {
      var list = Array.isArray(params) ? params : [params];
      var out = [];
      for (var i = 0; i < list.length; i++) {
        var p = list[i];
        var d = p.data || {};
        var v = Array.isArray(d.value) ? d.value : (Array.isArray(p.value) ? p.value : [null, p.value]);
        // A box's figures with its x first, as echarts holds them.
        if (p.seriesType === "boxplot" && Array.isArray(p.value)) { v = p.value.length === 5 ? [p.dataIndex].concat(p.value) : p.value; }
        var x = v[0];
        if (cats && typeof x === "number" && cats[x] !== undefined) { x = cats[x]; }
        var line = p.marker + esc(p.seriesName) + ": <b>" + esc(full(v[1])) + "</b>";
        if (p.seriesType === "boxplot" && v.length === 6) { // [x, least, Q1, median, Q3, greatest]
          line = p.marker + esc(p.seriesName) + ": median <b>" + esc(full(v[3])) + "</b>, quartiles " + esc(full(v[2])) + " to " + esc(full(v[4])) + ", runs " + esc(full(v[1])) + " to " + esc(full(v[5]));
        }
        if (i === 0 && Array.isArray(params)) { out.push('<span style="color:#59636e">' + xl + esc(typeof x === "number" ? full(x) : x) + "</span>"); }
        if (!Array.isArray(params)) { line += '<br><span style="color:#59636e">' + xl + esc(typeof x === "number" ? full(x) : x) + "</span>"; }
        if (d.name) { line += '<br><span style="color:#59636e">' + esc(d.name) + "</span>"; }
        out.push(line);
      }
      return out.join("<br>");
    };
  }

  function draw(script) {
    var el = document.getElementById(script.getAttribute("data-for"));
    if (!el) { console.error("dbrig report: no chart container for " + script.getAttribute("data-for")); return; }
    var opt = JSON.parse(script.textContent);
    var xs = axes(opt.xAxis), ys = axes(opt.yAxis);
    var cats = xs.length && xs[0].type === "category" ? xs[0].data : null;
    xs.concat(ys).forEach(function (ax) {
      ax.nameTextStyle = { color: "#3d444d", fontSize: 13, fontWeight: 600 };
      ax.axisLabel = Object.assign({}, ax.axisLabel || {}, { color: "#59636e", fontSize: 12, hideOverlap: true });
      if (ax.type !== "category") { ax.axisLabel.formatter = compact; }
      ax.splitLine = Object.assign({}, ax.splitLine || {}, { lineStyle: { color: "#eaeef2" } });
      ax.axisLine = { lineStyle: { color: "#8c959f" } };
      if (ax.type === "log") { ax.minorTick = { show: true }; }
    });
    (opt.series || []).forEach(function (s) {
      if (s.type === "scatter") { s.z = 4; } // every run stays visible above the lines
    });
    opt.tooltip = Object.assign({}, opt.tooltip || {}, { formatter: tooltipFormatter(cats, xs.length ? xs[0].name : ""), confine: true });
    opt.textStyle = { fontFamily: getComputedStyle(document.body).fontFamily };
    var chart = echarts.init(el, null, { renderer: "canvas" });
    chart.on("finished", function () { el.setAttribute("data-rendered", "1"); });
    chart.setOption(opt);
    charts.push({ id: el.id, chart: chart });
    if (typeof ResizeObserver !== "undefined") {
      new ResizeObserver(function () { chart.resize(); }).observe(el);
    }
  }

  var scripts = document.querySelectorAll("script.chart-option");
  for (var i = 0; i < scripts.length; i++) {
    try { draw(scripts[i]); } catch (e) { console.error("dbrig report: chart " + scripts[i].getAttribute("data-for") + ": " + e); }
  }
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.chart.resize(); }); });
  window.addEventListener("beforeprint", function () { charts.forEach(function (c) { c.chart.resize(); }); });
})();
