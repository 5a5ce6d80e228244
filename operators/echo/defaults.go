package echo

import (
	corev1 "k8s.io/api/core/v1"
)

// An Echo whose spec.message is "" answers the namespace's default message:
// data.message of the ConfigMap echo-defaults in its namespace, or
// FallbackMessage when there is no such ConfigMap or it has no such key.
// Changing the ConfigMap changes what every such Echo wants, so every Echo of
// the namespace is reconciled again: the Go operators watch it (a map
// function from the ConfigMap to the namespace's Echoes), the shell loop
// reads it when it reconciles an Echo with an empty message.
const (
	// DefaultsName is the ConfigMap that holds the namespace's default message.
	DefaultsName = "echo-defaults"
	// DefaultsKey is the key of the message in its data.
	DefaultsKey = "message"
	// FallbackMessage is the message of an Echo with none when the
	// namespace has no default.
	FallbackMessage = "no message"
)

// Message is what an Echo's pods answer: its spec.message, or the default
// of defaults (the namespace's echo-defaults ConfigMap, nil if there is
// none) when that is empty.
func Message(specMessage string, defaults *corev1.ConfigMap) string {
	if specMessage != "" {
		return specMessage
	}
	if defaults != nil && defaults.Data[DefaultsKey] != "" {
		return defaults.Data[DefaultsKey]
	}
	return FallbackMessage
}

// The values of Options.DefaultsCache: what the controller-runtime
// operator's cache lists and watches of ConfigMaps.
const (
	// DefaultsCacheAll caches every ConfigMap of the namespace; a predicate
	// keeps the events of the others from the queue.
	DefaultsCacheAll = "all"
	// DefaultsCacheNamed caches echo-defaults alone (a field selector on
	// metadata.name): the others are neither listed nor watched.
	DefaultsCacheNamed = "named"
)

// DefaultsCaches are those values, in the order a flag lists them.
var DefaultsCaches = []string{DefaultsCacheAll, DefaultsCacheNamed}
