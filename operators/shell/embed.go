// Package shell ships the shell-loop Echo operator: a bash script that polls
// with kubectl, the style a course starts with. rlab runs it through bash.
package shell

import _ "embed"

// Script is echo-operator.sh, the shell-loop operator.
//
//go:embed echo-operator.sh
var Script []byte
