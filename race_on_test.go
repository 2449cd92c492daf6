//go:build race

package main

// raceEnabled reports whether the tests run under the race detector, for
// the scripts too slow to run under it ([race] skip).
const raceEnabled = true
