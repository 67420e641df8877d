package report

import (
	_ "embed" // the page's template, style, script and echarts
)

// echartsJS is Apache ECharts (npm package "echarts", dist/echarts.min.js),
// Apache-2.0: see assets/LICENSE and assets/NOTICE. It is inlined in every
// HTML report so that a report opens without network access. go-echarts
// v2.6.x is written against echarts 5.4.3, the version embedded here.
//
//go:embed assets/echarts.min.js
var echartsJS string

// EchartsVersion is the version of the embedded echarts.min.js.
const EchartsVersion = "5.4.3"

//go:embed assets/report.html.tmpl
var pageTemplate string

//go:embed assets/report.css
var pageCSS string

//go:embed assets/report.js
var pageJS string
