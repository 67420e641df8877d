// Package engine holds what every database engine dbrig starts has in
// common: starting server processes so that none outlives dbrig, the
// unprivileged account servers run as when dbrig runs as root, free loopback
// ports, and redaction of passwords from connection strings.
//
// Each engine lives in a sub-package (engine/postgres).
package engine
