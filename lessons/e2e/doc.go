// Package e2e verifies every lesson end to end: its test autoplays the whole
// course against one real sandbox, as `rlab lesson verify --all` does. It is
// a package of its own so that the lessons' unit tests and fuzzing do not
// start a control plane.
package e2e
