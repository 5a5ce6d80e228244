package lessons

import "maps"

// The sample Echo every sandbox starts with, in each style's namespace
// (sim/sandbox's SampleName and SampleReplicas), and the bound the CRD's
// schema puts on spec.replicas (operators/api/v1's MaxReplicas): copied,
// as the engine's other words are (engine.go), and held to them by a test.
const (
	SampleEcho     = "hello"
	SampleReplicas = 2
	MaxEchoPods    = 5
)

// Footprint is the most a lesson holds at once in one style's namespace,
// as its steps play them: the sample Echo, the Echoes it creates, and the
// pods their replicas ask for, counted after every act, so that an Echo
// deleted before the next is created is not counted twice.
type Footprint struct {
	Echoes int // Echoes, and as many Deployments
	Pods   int // pods their spec.replicas ask for, Deployments scaled by hand included
}

// Footprint is what lesson l holds at most in one namespace. Every act
// counts in every namespace (an act on one style only is counted in all:
// the most any of them holds), and an act the apiserver must refuse
// (expect_error) counts for nothing.
func (l *Lesson) Footprint() Footprint {
	pods := map[string]int{SampleEcho: SampleReplicas} // by Echo
	var f Footprint
	note := func() {
		f.Echoes = max(f.Echoes, len(pods))
		n := 0
		for _, p := range pods {
			n += p
		}
		f.Pods = max(f.Pods, n)
	}
	note()
	for _, s := range l.Steps {
		if s.Action == nil {
			continue
		}
		for _, op := range s.Action.Play {
			if op.Args.Str("expect_error") != "" {
				continue
			}
			name := op.Args.Str("name")
			n, _ := op.Args.Int("replicas")
			switch op.Name {
			case "create_echo":
				pods[name] = n
			case "create_echoes":
				count, _ := op.Args.Int("count")
				if _, ok := op.Args.Int("replicas"); !ok {
					n = 1 // the action's default
				}
				for i := 1; i <= count; i++ {
					pods[SetName(op.Args.Str("prefix"), i)] = n
				}
			case "set_replicas":
				pods[name] = n
			case "scale_deployment", "apply_replicas":
				// The Deployment's pods, until its operator scales it
				// back (or, under lesson 14's fight, while it holds).
				was := pods[name]
				pods[name] = max(was, n)
				note()
				pods[name] = was
			case "delete_echo":
				delete(pods, name)
			case "delete_echoes":
				maps.DeleteFunc(pods, func(k string, _ int) bool {
					return len(k) > len(op.Args.Str("prefix")) && k[:len(op.Args.Str("prefix"))+1] == op.Args.Str("prefix")+"-"
				})
			}
			note()
		}
	}
	return f
}
