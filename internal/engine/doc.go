// Package engine is the seam between dbrig and the database servers it
// runs: the [Engine] and [Instance] interfaces every engine implements
// (engine/postgres, engine/mariadb), the one description of an instance
// shared by the plan, the topology and the engines ([InstanceConfig]), an
// engine-neutral login that keeps its password private ([Conn]), and the
// registry of engines built in main ([Registry]).
//
// It also holds what every engine needs alike: starting server processes so
// that none outlives dbrig and each inherits its CPU affinity and memory
// cgroup from its first instruction ([StartWith], [Cgroup]), the
// unprivileged account servers run as when dbrig runs as root
// ([FindServerUser]), free loopback ports, each engine's list of the
// settings a study may vary and the refusal of the rest ([StudySettings],
// [CheckSettingValue]), the closest valid name for a misspelt setting
// ([Closest]) and redaction of passwords from connection
// strings ([RedactURI]).
//
// docs/engines.md explains how an engine plugs in and what it guarantees.
package engine
