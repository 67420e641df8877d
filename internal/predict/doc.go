// Package predict says, before a point runs, what a load will measure
// through a link: its throughput, its mean response time and what bounds
// them, from a calibration of the same load on an unimpaired path.
//
// A [Calibration] is what one transaction costs on the unimpaired path:
// its round trips (the turns of the conversation the link sees), its bytes
// each way, the time the client and the server spend, and the throughput
// the server sustained there ([Calibration.Capacity]), and what a round
// trip through a delaying path costs beyond its RTT
// ([Calibration.TurnOverhead]: the server and the client waking up).
// [Closed] and [Open]
// put that transaction through a [link.Config]:
//
//	response   = client + server + round trips × (RTT + turn overhead)
//	             + serialization of the bytes each way + window stalls × RTT
//	closed:   tps = min(users / (response + think), capacity, link rate / bytes)
//	open:     tps = min(rate, capacity, link rate / bytes); the server's time
//	          grows as an M/M/1 queue's, server / (1 - rate / capacity)
//
// [Estimate.Dominant] names the term that bounds the figure: the link's
// latency, its bandwidth, the TCP window, the server or the client.
//
// [Point] and [ForPoint] take the calibration from a study's points
// measured before the one predicted. The functions are pure: a prediction
// is made and stored before the point it predicts runs, and [Compare]
// states its error once the point is measured. A figure fitted on the measured points is a fit, never this
// model's confirmation.
package predict
