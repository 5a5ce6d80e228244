package lessons

import "testing"

// TestFootprint: the most a lesson holds at once in a namespace, act by
// act: Echoes created and deleted, scaled, refused.
func TestFootprint(t *testing.T) {
	step := func(ops ...Op) Step { return Step{Action: &Action{Play: ops}} }
	op := func(name string, a Args) Op { return Op{Name: name, Args: a} }
	tests := []struct {
		name  string
		steps []Step
		want  Footprint
	}{
		{"the sample alone", nil, Footprint{Echoes: 1, Pods: 2}},
		{"one more Echo, then deleted", []Step{
			step(op("create_echo", Args{"name": "world", "replicas": 2})),
			step(op("delete_echo", Args{"name": "world"})),
			step(op("create_echo", Args{"name": "again", "replicas": 1})),
		}, Footprint{Echoes: 2, Pods: 4}},
		{"refused", []Step{step(op("set_replicas", Args{"name": "hello", "replicas": 9, "expect_error": "invalid"}))}, Footprint{Echoes: 1, Pods: 2}},
		{"scaled", []Step{step(op("set_replicas", Args{"name": "hello", "replicas": 5}), op("set_replicas", Args{"name": "hello", "replicas": 2}))}, Footprint{Echoes: 1, Pods: 5}},
		{"a Deployment scaled by hand, for a while", []Step{
			step(op("scale_deployment", Args{"name": "hello", "replicas": 4})),
			step(op("create_echo", Args{"name": "x", "replicas": 1})),
		}, Footprint{Echoes: 2, Pods: 4}},
		{"a set, default replicas, then deleted", []Step{
			step(op("create_echoes", Args{"prefix": "load", "count": 100})),
			step(op("set_replicas", Args{"name": "load-050", "replicas": 2})),
			step(op("delete_echoes", Args{"prefix": "load"})),
			step(op("create_echo", Args{"name": "loader", "replicas": 1})),
		}, Footprint{Echoes: 101, Pods: 103}},
		{"a set scaled to zero, one scaled up (lesson 11)", []Step{
			step(op("create_echoes", Args{"prefix": "load", "count": 100, "replicas": 0})),
			step(op("set_replicas", Args{"name": "load-050", "replicas": 2})),
			step(op("delete_echoes", Args{"prefix": "load"})),
		}, Footprint{Echoes: 101, Pods: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &Lesson{Steps: tt.steps}
			if got := l.Footprint(); got != tt.want {
				t.Errorf("Footprint = %+v, want %+v", got, tt.want)
			}
		})
	}
}
