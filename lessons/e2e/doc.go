// Package e2e verifies the course end to end against real sandboxes: its
// tests run `rlab lesson verify --all` itself, and follow a lesson the way
// the screen does. It is a package of its own so that the lessons' unit
// tests and fuzzing do not start a control plane.
package e2e
