// Package v1 holds the Echo API (group kkloud.io, version v1) shared by the three
// operators and by rlab itself, with its CRD manifest embedded.
//
// The CRD is the one from the course with two status fields added
// (observedGeneration and conditions), a CEL rule that spec.message say
// something, and descriptions for kubectl explain, so the course's kubectl
// commands work verbatim inside the sandbox.
package v1
