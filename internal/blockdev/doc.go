// Package blockdev is what a cold-read experiment needs of the block layer:
// a loop device of dbrig's own whose read-ahead it may set ([NewLoop],
// removed by [Loop.Close], or by [RemoveStale] after a killed run), the
// device's I/O counters from /proc/diskstats ([Device.Stats]: reads, bytes,
// queue depth), the operating system's cache of given files emptied and
// checked ([Evict], [Resident]; [DropCaches] as the last resort), and a
// plain sequential read's throughput at a given read size ([ReadRate]).
//
// dbrig changes the settings of a device only when it made it: a workload
// finds the device under its files with [DeviceOf] and checks
// [MadeByThisProcess] before it touches it.
package blockdev
