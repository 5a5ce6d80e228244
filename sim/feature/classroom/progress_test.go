package classroom_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kkloud/rlab/sim/feature/classroom"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/tenancy"
)

// at is the board's clock in these tests.
var at = time.Date(2026, 11, 27, 10, 30, 0, 0, time.UTC)

// TestProgress: on a prepared classroom, two students' rlabs report
// different steps; the instructor reads both (the status table, the
// board); neither student may read, list, watch or write the other's
// progress; a reset request reaches only its student, and their report
// says it was done; a stopped rlab says so.
func TestProgress(t *testing.T) {
	simtest.NeedsControlPlane(t)
	dir := t.TempDir()
	var out bytes.Buffer
	if _, err := classroom.Prepare(t.Context(), shared.cfg, classroom.Options{Students: 2, Dir: dir, Log: &out}); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	t.Cleanup(func() {
		if err := classroom.Teardown(context.Background(), shared.cfg, &out); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	cfgOf := func(s string) *rest.Config {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, s+".kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	s1, err := classroom.NewReporter(t.Context(), cfgOf("s1"), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := classroom.NewReporter(t.Context(), cfgOf("s2"), "s2", nil)
	if err != nil {
		t.Fatal(err)
	}
	right := true
	s1.Set(&classroom.Position{Lesson: 6, Title: "The workqueue", Step: 4, Steps: 7, StepTitle: "Backoff",
		Since: at.Add(-5 * time.Minute), Waits: "clientgo: a reconcile requeued 3 times\nruntime: the same",
		Reason: "clientgo: requeued 1 of 3"},
		[]classroom.LessonRecord{
			{Number: 1, Steps: 3, Next: 3, Done: true, How: []string{"hand", "hand", "hand"}},
			{Number: 2, Steps: 4, Next: 4, Done: true, How: []string{"hand", "played", "hand", "skipped"},
				Predictions: map[int]classroom.Prediction{2: {Choice: 1, Right: &right, Measured: "3 ready"}}},
			{Number: 6, Steps: 7, Next: 3},
		})
	s2.Set(&classroom.Position{Lesson: 2, Title: "Desired vs actual", Step: 1, Steps: 4, StepTitle: "Scale it",
		Since: at.Add(-40 * time.Second), Passed: true, Reason: "5 ready"},
		[]classroom.LessonRecord{{Number: 1, Steps: 3, Next: 3, Done: true, How: []string{"hand", "skipped", "hand"}}, {Number: 2, Steps: 4}})

	var reps []classroom.Report
	simtest.Eventually(t, 30*time.Second, "both reports read back", func(ctx context.Context) (bool, error) {
		reps, err = classroom.Reports(ctx, shared.cfg)
		return len(reps) == 2 && reps[0].Now != nil && reps[1].Now != nil, err
	})
	if r := reps[0]; r.Student != "s1" || !r.Running || r.Now.Step != 4 || r.Now.Reason != "clientgo: requeued 1 of 3" ||
		len(r.Lessons) != 3 || r.Lessons[1].Predictions[2].Right == nil || !*r.Lessons[1].Predictions[2].Right {
		t.Errorf("s1's report read back: %+v", r)
	}
	var table bytes.Buffer
	if err := classroom.ProgressTable(&table, reps, columns(6)); err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, table.Bytes())

	// Isolation: a student's Role names their own ConfigMap only.
	k2 := kubernetes.NewForConfigOrDie(cfgOf("s2"))
	cms := k2.CoreV1().ConfigMaps(tenancy.ClassroomNamespace)
	if _, err := cms.Get(t.Context(), classroom.ProgressName("s2"), metav1.GetOptions{}); err != nil {
		t.Errorf("s2 reads their own progress: %v", err)
	}
	tries := []struct {
		what string
		call func(context.Context) error
	}{
		{"get s1's", func(ctx context.Context) error {
			_, err := cms.Get(ctx, classroom.ProgressName("s1"), metav1.GetOptions{})
			return err
		}},
		{"list the classroom's", func(ctx context.Context) error {
			_, err := cms.List(ctx, metav1.ListOptions{})
			return err
		}},
		{"watch s1's", func(ctx context.Context) error {
			w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + classroom.ProgressName("s1")})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"patch s1's", func(ctx context.Context) error {
			_, err := cms.Patch(ctx, classroom.ProgressName("s1"), types.MergePatchType, []byte(`{"data":{"report.json":"{}"}}`), metav1.PatchOptions{})
			return err
		}},
		{"request a reset of s1", func(ctx context.Context) error {
			_, err := classroom.RequestReset(ctx, cfgOf("s2"), "s1", 3)
			return err
		}},
	}
	for _, tr := range tries {
		if err := tr.call(t.Context()); !apierrors.IsForbidden(err) {
			t.Errorf("s2 may %s progress: %v, want Forbidden", tr.what, err)
		}
	}

	// A reset reaches s1's rlab alone, once; done, the report says so.
	id, err := classroom.RequestReset(t.Context(), shared.cfg, "s1", 3)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case req := <-s1.Resets():
		if req.ID != id || req.Lesson != 3 {
			t.Errorf("s1 got reset %+v, want %s to lesson 3", req, id)
		}
		// While it runs the student's reports keep updating the
		// ConfigMap: the request is not handed on again.
		s1.Set(&classroom.Position{Lesson: 3, Step: 1, Steps: 4, Since: at}, nil)
		simtest.Eventually(t, 30*time.Second, "s1's report on lesson 3", func(ctx context.Context) (bool, error) {
			reps, err = classroom.Reports(ctx, shared.cfg)
			return len(reps) == 2 && reps[0].Now.Lesson == 3, err
		})
		select {
		case again := <-s1.Resets():
			t.Errorf("s1 got the same reset again while carrying it out: %+v", again)
		case <-time.After(3 * time.Second):
		}
		s1.ResetDone(req.ID)
	case <-time.After(30 * time.Second):
		t.Fatal("s1's rlab got no reset request within 30s")
	}
	simtest.Eventually(t, 30*time.Second, "s1's report says the reset was done", func(ctx context.Context) (bool, error) {
		reps, err = classroom.Reports(ctx, shared.cfg)
		return len(reps) == 2 && reps[0].ResetDone == id, err
	})
	select {
	case req := <-s2.Resets():
		t.Errorf("s2 got s1's reset: %+v", req)
	default:
	}
	if _, err := classroom.RequestReset(t.Context(), shared.cfg, "s9", 3); err == nil || !strings.Contains(err.Error(), "no student s9") {
		t.Errorf("reset of a student not in the classroom: %v", err)
	}

	s2.Close()
	simtest.Eventually(t, 30*time.Second, "s2's report says rlab stopped", func(ctx context.Context) (bool, error) {
		reps, err = classroom.Reports(ctx, shared.cfg)
		return len(reps) == 2 && !reps[1].Running, err
	})
	s1.Close()
	// A new run of s1 does not carry out the reset it did already.
	again, err := classroom.NewReporter(t.Context(), cfgOf("s1"), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	select {
	case req := <-again.Resets():
		t.Errorf("s1's next run got the reset it did already: %+v", req)
	case <-time.After(3 * time.Second): // the watch's first list has come and gone
	}
}

// columns are the first n lessons of a course with 4 steps each but 3 in
// lesson 1 and 7 in lesson 6.
func columns(n int) []classroom.Column {
	var out []classroom.Column
	for i := 1; i <= n; i++ {
		steps := map[int]int{1: 3, 6: 7}[i]
		if steps == 0 {
			steps = 4
		}
		out = append(out, classroom.Column{Number: i, Steps: steps})
	}
	return out
}

// TestBoard: the projector's screen with students in every state, those
// who need help first.
func TestBoard(t *testing.T) {
	reps := []classroom.Report{
		{Student: "s1", Running: true, Updated: at, Now: &classroom.Position{Lesson: 6, Step: 2, Steps: 7, StepTitle: "Watch it retry",
			Since: at.Add(-90 * time.Second), Reason: "clientgo: 0 of 3 requeues"}},
		{Student: "s2", Running: true, Updated: at, Now: &classroom.Position{Lesson: 8, Step: 3, Steps: 6, StepTitle: "Kill the leader",
			Since: at.Add(-7 * time.Minute), Waits: "clientgo: a new leader within 20s", Reason: "clientgo: clientgo-a-1 still holds the Lease"}},
		{Student: "s3", Running: true, Updated: at, Now: &classroom.Position{Lesson: 5, Step: 4, Steps: 5, StepTitle: "Stale cache",
			Since: at.Add(-2 * time.Minute), Error: "the takeover came too soon: b tries the step again"}},
		{Student: "s4", Running: true, Updated: at, Now: &classroom.Position{Lesson: 4, Step: 2, Steps: 5, StepTitle: "Break it",
			Since: at.Add(-30 * time.Second), Passed: true, Reason: "3 ready"}},
		{Student: "s5", Running: false, Updated: at, Now: &classroom.Position{Lesson: 3, Step: 1, Steps: 4, StepTitle: "Owners"}},
		{Student: "s6", Running: true, Updated: at, Now: &classroom.Position{Lesson: 2, Step: 4, Steps: 4, Done: true, Passed: true}},
		{Student: "s7"},
		{Student: "s9", Running: true, Updated: at},
		{Student: "s8", Running: true, Updated: at, Now: &classroom.Position{Lesson: 9, Step: 1, Steps: 5, StepTitle: "A finalizer",
			Since: at.Add(-4 * time.Minute), Waits: "Echo hello gone\nits Deployment gone"}},
	}
	for _, width := range []int{100, 60} {
		t.Run(strings.Repeat("w", width/20), func(t *testing.T) {
			got := classroom.Board(reps, at, width)
			for _, line := range strings.Split(got, "\n") {
				if n := len([]rune(line)); n > width {
					t.Errorf("line of %d columns, wider than %d: %q", n, width, line)
				}
			}
			golden.RequireEqual(t, []byte(got))
		})
	}
}
