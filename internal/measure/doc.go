// Package measure holds dbrig's latency distributions: HDR histograms of 3
// significant figures from 1 µs to 1 h ([Histogram]), recorded without
// locks by the load layer's workers, merged without loss across runs,
// processes and machines, and kept whole in results so that every
// percentile a report shows comes from a merged distribution, never from an
// average of percentiles.
package measure
