package runner

import (
	"strings"
	"testing"

	"github.com/kkloud/rlab/lessons"
)

// TestSessionPredict: the screen's answer is kept on the state (a new
// version) until the step plays or passes; then it is refused.
func TestSessionPredict(t *testing.T) {
	l, err := lessons.Parse("l.yaml", []byte(lesson(predictStep("[none, one, two]", "")+strings.Replace(okStep, "title: a", "title: plain", 1))))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		st     SessionState
		choice int
		err    string
	}{
		{name: "answered", choice: 2},
		{name: "out of range", choice: 4, err: "answer with a number from 1 to 3"},
		{name: "playing", st: SessionState{Playing: true}, choice: 1, err: "the step is playing: a prediction comes before the act"},
		{name: "passed", st: SessionState{Passed: true}, choice: 1, err: "the step passed already: a prediction comes before the act"},
		{name: "no question", st: SessionState{Step: 1}, choice: 1, err: "this step asks no question"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{l: l, st: tt.st}
			err := s.Predict(tt.choice)
			st := s.State()
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Predict(%d) = %v, want %q", tt.choice, err, tt.err)
				}
				if st.Version != 0 || st.Predicted != (lessons.Prediction{}) {
					t.Errorf("refused, yet the state changed: %+v", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Version != 1 || st.Predicted != (lessons.Prediction{Choice: tt.choice}) {
				t.Errorf("state = %+v", st)
			}
		})
	}
}

// TestSessionOpened: a step is open once the sandbox started and the
// student is on it, passed or not; the last step stays open when its check
// passed as it opened and so ended the lesson (the by-hand run waited for
// it until it gave up).
func TestSessionOpened(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready bool
		st    SessionState
		i     int
		want  bool
	}{
		{"still starting", false, SessionState{Step: 0}, 0, false},
		{"on it", true, SessionState{Step: 2}, 2, true},
		{"another step", true, SessionState{Step: 1}, 2, false},
		{"passed", true, SessionState{Step: 2, Passed: true}, 2, true},
		{"last step passed at once, the lesson done", true, SessionState{Step: 4, Passed: true, Done: true}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{ready: tc.ready, st: tc.st}
			if got := s.opened(tc.i); got != tc.want {
				t.Errorf("opened(%d) = %v, want %v", tc.i, got, tc.want)
			}
		})
	}
}
