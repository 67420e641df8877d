package report

// EchartsScript is the echarts.min.js every report inlines, for a page
// beside the report that draws with the same library and no network (dbrig's
// live dashboard serves it).
func EchartsScript() string { return echartsJS }
