package workload

// Second is one second of a load of virtual users as it ends, for a live
// view of the run (dbrig's --dashboard): what a line of `dbrig load oltp`
// shows each second, in figures.
type Second struct {
	// EndS is the second's end, in seconds from the start of the point's
	// load (warm-up included).
	EndS float64 `json:"end_s"`
	// Phase is warm-up, measured or stopping (what finished after the end).
	Phase  string  `json:"phase"`
	Users  int     `json:"users"`
	TPS    float64 `json:"tps"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	Errors int64   `json:"errors"`
}
