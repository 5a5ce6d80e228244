//go:build race

package main

// raceOn: the tests run under -race (make test-unit), and so does the rlab
// they build.
const raceOn = true
