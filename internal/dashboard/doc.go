// Package dashboard serves a run as it goes to a browser: one page that
// draws each second of the load (throughput, p50 and p99 latency, errors),
// each second of the links (bytes each way, stalls) and the finished points
// beside their model, and ends with a link to the report (dbrig's
// --dashboard).
//
// The page, its script and the echarts it draws with (the report's own,
// [report.EchartsScript]) are embedded, so the page asks nothing of any
// host but the server. The run's events come from a [study.Feed] as
// Server-Sent Events at /events: a page that joins late gets the run's
// history first. A browser that falls behind loses its oldest events (the
// feed counts them, and the page says so); it never slows the run. Every
// event passes through the command's redaction before it leaves the
// process, and the server reads only the files of the run's directory
// (/run/NAME), read-only, through an [os.Root].
//
// [Start] binds and serves; [Server.Close] ends every stream and waits for
// every goroutine the server started.
package dashboard
