//go:build race

package load

// raceEnabled scales the heaviest tests down: the race detector makes them
// about thirty times slower, and their point (memory that does not grow with
// time) does not depend on the number of users.
const raceEnabled = true
