"use strict";
// The live page of a dbrig run: it reads the run's events from /events
// (Server-Sent Events; the history so far first, then each as it comes) and
// draws them with the echarts the server serves beside it. Charts are made
// when their first figure arrives, so a chart on the page always has data.
(function () {
  if (typeof echarts === "undefined") {
    console.error("dbrig dashboard: echarts did not load");
    return;
  }
  var charts = {};
  var pending = false;
  var points = 0;

  function $(id) { return document.getElementById(id); }

  // series are each chart's named lines: [[t, value], ...].
  var series = {
    tps: { tps: [] },
    latency: { p50: [], p99: [] },
    errors: { errors: [] },
    bytes: {},
    stalls: {},
  };
  var units = { tps: "tps", latency: "ms", errors: "errors/s", bytes: "bytes/s", stalls: "stalls/s" };

  function chart(name) {
    if (charts[name]) { return charts[name]; }
    var el = $("chart-" + name);
    el.setAttribute("data-chart", name);
    var c = echarts.init(el, null, { renderer: "canvas" });
    c.on("finished", function () { el.setAttribute("data-rendered", "1"); });
    charts[name] = c;
    return c;
  }

  function draw() {
    pending = false;
    Object.keys(series).forEach(function (name) {
      var lines = series[name];
      var names = Object.keys(lines).filter(function (n) { return lines[n].length > 0; });
      if (names.length === 0) { return; }
      chart(name).setOption({
        animation: false,
        grid: { left: 10, right: 20, top: 30, bottom: 40, containLabel: true },
        legend: { top: 0, data: names },
        tooltip: { trigger: "axis" },
        // Whole seconds at the axis' ends: dataMin's own figure (6.167451272)
        // drew past the chart's left edge.
        xAxis: { type: "value", name: "s", nameLocation: "middle", nameGap: 25,
          min: function (v) { return Math.floor(v.min); }, max: function (v) { return Math.ceil(v.max); },
          axisLabel: { formatter: function (x) { return String(Math.round(x * 10) / 10); } } },
        yAxis: { type: "value", name: units[name] },
        series: names.map(function (n) {
          return { name: n, type: "line", showSymbol: false, data: lines[n] };
        }),
      });
    });
  }

  // redraw at most every half second, however fast events arrive.
  function redraw() {
    if (!pending) {
      pending = true;
      setTimeout(draw, 500);
    }
  }

  function text(el, s) { el.textContent = s; el.hidden = false; }

  function cell(row, s, cls) {
    var td = document.createElement("td");
    td.textContent = s;
    if (cls) { td.className = cls; }
    row.appendChild(td);
  }

  function pct(f) {
    if (f.model === undefined || f.model === 0) { return ""; }
    var e = (f.measured - f.model) / f.model * 100;
    return (e >= 0 ? "+" : "") + e.toFixed(0) + " %";
  }

  function addPoint(p) {
    points++;
    $("nopoints").hidden = true;
    var row = document.createElement("tr");
    row.className = p.status;
    var figs = p.figures || [];
    cell(row, String(points), "num");
    cell(row, p.key);
    cell(row, p.status + (p.error ? ": " + p.error : ""));
    cell(row, figs.map(function (f) { return f.label + " " + f.text; }).join(", "));
    cell(row, figs.filter(function (f) { return f.model !== undefined; }).map(function (f) { return f.label + " " + f.model_text + (f.model_from ? " (" + f.model_from + ")" : ""); }).join(", "));
    cell(row, figs.filter(function (f) { return f.model !== undefined; }).map(function (f) { return f.label + " " + pct(f); }).join(", "));
    cell(row, p.seconds.toFixed(1) + " s", "num");
    $("points").tBodies[0].appendChild(row);
  }

  var handlers = {
    start: function (e) {
      $("title").textContent = "dbrig: " + e.study;
      text($("status"), e.total + " points into " + e.dir + (e.done ? " (" + e.done + " done before)" : ""));
    },
    point_start: function (e) {
      text($("status"), "point " + e.n + "/" + e.total + ": " + e.key);
    },
    second: function (e) {
      var s = e.second;
      if (s.phase === "stopping") { return; } // what was in flight at the end, over a sliver: no rate
      $("load").hidden = false;
      series.tps.tps.push([e.t, s.tps]);
      series.latency.p50.push([e.t, s.p50_ms]);
      series.latency.p99.push([e.t, s.p99_ms]);
      series.errors.errors.push([e.t, s.errors]);
      redraw();
    },
    link: function (e) {
      $("link").hidden = false;
      e.links.forEach(function (l) {
        var fwd = l.name + " forward", rev = l.name + " reverse";
        (series.bytes[fwd] = series.bytes[fwd] || []).push([e.t, l.forward_bytes]);
        (series.bytes[rev] = series.bytes[rev] || []).push([e.t, l.reverse_bytes]);
        (series.stalls[l.name] = series.stalls[l.name] || []).push([e.t, l.stalls]);
      });
      redraw();
    },
    point: function (e) { addPoint(e.point); },
    error: function (e) {
      var el = $("end");
      el.className = "failed";
      text(el, "The run stopped: " + e.error);
    },
    dropped: function (e) {
      text($("dropped"), e.dropped + " events were dropped because this page fell behind: the charts miss them");
    },
    end: function (e) {
      var el = $("end");
      var failed = el.className === "failed";
      el.textContent = (failed ? el.textContent + ". " : "") + "The run ended. ";
      el.hidden = false;
      if (e.report) {
        var a = document.createElement("a");
        a.href = "run/" + e.report.split("/").pop();
        a.id = "report";
        a.textContent = "Open the report";
        el.appendChild(a);
      }
      text($("status"), "ended");
      source.close();
    },
  };

  var source = new EventSource("events");
  source.onmessage = function (m) {
    var e = JSON.parse(m.data);
    var h = handlers[e.type];
    if (h) { h(e); }
  };
  window.addEventListener("resize", function () {
    Object.keys(charts).forEach(function (n) { charts[n].resize(); });
  });
})();
