package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/trace"
)

// num prints n as kubectl's jsonpath prints an integer field: nothing when
// it is missing, and Go's JSON (omitempty) leaves a 0 out.
func num[N int32 | int64](n N) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(int64(n), 10)
}

// getAnswer is what step 1's GET of Echo e prints, one line per field of
// the script's ECHO_FIELDS: uid, replicas, generation, status.ready,
// status.observedGeneration, resourceVersion, deletionTimestamp, finalizers,
// the Ready and the Progressing condition (tab-separated: status, reason,
// observedGeneration, lastTransitionTime, message), then the message.
// TestAgainstControlPlane runs the real kubectl on the same jsonpath.
func getAnswer(e *echov1.Echo) string {
	cond := func(typ string) string {
		c := meta.FindStatusCondition(e.Status.Conditions, typ)
		if c == nil {
			return ""
		}
		return strings.Join([]string{string(c.Status), c.Reason, num(c.ObservedGeneration),
			c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message}, "\t")
	}
	return strings.Join([]string{string(e.UID), num(*e.Spec.Replicas), num(e.Generation), e.Status.Ready,
		num(e.Status.ObservedGeneration), "7", "", "", cond(echo.ConditionReady), cond(echo.ConditionProgressing),
		e.Spec.Message}, "\n")
}

// applyAnswer is what step 4's apply prints of Deployment d, stored as
// uid-d at resourceVersion 8: comma-separated, a missing field empty.
func applyAnswer(d *appsv1.Deployment) string {
	s := d.Status
	return strings.Join([]string{"uid-d", "8", num(d.Generation), num(s.ObservedGeneration),
		num(s.Replicas), num(s.UpdatedReplicas), num(s.ReadyReplicas)}, ",")
}

// reconcileCall is one reconcile_echo call in a script's trace: when it
// started, the verbs of its kubectl calls in order, and whether it ended.
type reconcileCall struct {
	start time.Time
	verbs []string
	ended bool
}

// reconciles splits a script's trace into its reconcile calls: the script
// writes a call's events between its reconcile.start and reconcile.end.
func reconciles(evs []trace.Event) []reconcileCall {
	var calls []reconcileCall
	in := false
	for _, e := range evs {
		switch {
		case e.Kind == trace.ReconcileStart:
			calls = append(calls, reconcileCall{start: e.Time})
			in = true
		case in && e.Kind == trace.Kubectl:
			calls[len(calls)-1].verbs = append(calls[len(calls)-1].verbs, e.Verb())
		case in && e.Kind == trace.ReconcileEnd:
			calls[len(calls)-1].ended = true
			in = false
		}
	}
	return calls
}

// statusDiff says how got differs from the status echo.Status computes for
// Echo e (its conditions the ones before the write) and Deployment d: the
// script writes Ready then Progressing, each with the lastTransitionTime e
// had for it if its status did not change, else the time of the write,
// between from and to. got equal to e.Status is a fixed point: the status
// an operator has nothing left to write to.
func statusDiff(got echov1.EchoStatus, e *echov1.Echo, d *appsv1.Deployment, from, to time.Time) error {
	want := echo.Status(e, d, e.Status.Conditions, from)
	if len(got.Conditions) != 2 || got.Conditions[0].Type != echo.ConditionReady || got.Conditions[1].Type != echo.ConditionProgressing {
		return fmt.Errorf("conditions %+v, want Ready then Progressing", got.Conditions)
	}
	// First all but the times, in the script's order.
	var g, w echov1.EchoStatus
	got.DeepCopyInto(&g)
	want.DeepCopyInto(&w)
	w.Conditions = nil
	for i, typ := range []string{echo.ConditionReady, echo.ConditionProgressing} {
		c := meta.FindStatusCondition(want.Conditions, typ)
		if c == nil {
			return fmt.Errorf("echo.Status wrote no %s condition", typ)
		}
		w.Conditions = append(w.Conditions, *c)
		g.Conditions[i].LastTransitionTime, w.Conditions[i].LastTransitionTime = metav1.Time{}, metav1.Time{}
	}
	if !equality.Semantic.DeepEqual(g, w) {
		gj, _ := json.MarshalIndent(g, "", "  ")
		wj, _ := json.MarshalIndent(w, "", "  ")
		return fmt.Errorf("status (lastTransitionTimes left out)\n%s\nwant, as echo.Status computes it,\n%s", gj, wj)
	}
	for _, c := range got.Conditions {
		at := c.LastTransitionTime.Time
		if prev := meta.FindStatusCondition(e.Status.Conditions, c.Type); prev != nil && prev.Status == c.Status {
			if !at.Equal(prev.LastTransitionTime.Time) {
				return fmt.Errorf("%s stayed %s, but its lastTransitionTime moved from %s to %s", c.Type, c.Status, prev.LastTransitionTime.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
			}
		} else if at.Before(from.Truncate(time.Second)) || at.After(to) {
			return fmt.Errorf("%s became %s with lastTransitionTime %s, want the time of the write, between %s and %s", c.Type, c.Status, at.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

// wholeSecond is how a lastTransitionTime reads: RFC 3339, UTC, whole seconds.
var wholeSecond = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$`)

// checkTimes says which lastTransitionTime in status (JSON, as written or as
// stored: the apiserver keeps the string it was sent) is not a whole-second
// RFC 3339 time in UTC. metav1.Time would parse fractions without a word.
func checkTimes(status []byte) error {
	var s struct {
		Conditions []struct {
			Type               string `json:"type"`
			LastTransitionTime string `json:"lastTransitionTime"`
		} `json:"conditions"`
	}
	if err := json.Unmarshal(status, &s); err != nil {
		return err
	}
	var errs []error
	for _, c := range s.Conditions {
		if !wholeSecond.MatchString(c.LastTransitionTime) {
			errs = append(errs, fmt.Errorf("%s lastTransitionTime %q, want RFC 3339 in UTC, whole seconds", c.Type, c.LastTransitionTime))
		}
	}
	return errors.Join(errs...)
}

// TestWritesStatus: after one reconcile the script has written the status
// echo.Status computes for the Echo and Deployment it read, in one merge
// patch of the status subresource, or, when the Echo already had that status,
// no patch at all; and it made no kubectl call beyond the three a reconcile
// needs (and the patch).
func TestWritesStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	deploy := func(gen, observed int64, replicas, updated, ready int32) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Generation = gen
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: ready}
		return d
	}
	upToDate := deploy(1, 1, 2, 2, 2)
	newEcho := func(gen int64, replicas int32) *echov1.Echo {
		e := echov1.NewEcho("demo", "hello", "hi", replicas)
		e.UID, e.Generation = "uid-1", gen
		return e
	}
	// What an operator wrote at t0 for generation 3, two replicas ready.
	settled := echo.Status(newEcho(3, 2), upToDate, nil, t0)
	edit := func(f func(s *echov1.EchoStatus)) echov1.EchoStatus {
		var s echov1.EchoStatus
		settled.DeepCopyInto(&s)
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name     string
		gen      int64
		replicas int32
		status   echov1.EchoStatus // the Echo's, before the reconcile
		d        *appsv1.Deployment
		patch    bool
	}{
		{"a new Echo, its Deployment just created", 1, 2, echov1.EchoStatus{}, deploy(1, 0, 0, 0, 0), true},
		{"settled, nothing changed", 3, 2, settled, upToDate, false},
		{"a new spec the Deployment's controller has not seen", 4, 2, settled, deploy(2, 1, 2, 2, 2), true},
		{"scaled up, the new pod not there yet", 4, 3, settled, deploy(2, 2, 2, 2, 2), true},
		{"one pod not ready", 3, 2, settled, deploy(1, 1, 2, 2, 1), true},
		{"one pod not updated", 3, 2, settled, deploy(1, 1, 2, 1, 2), true},
		{"an old pod not gone", 3, 2, settled, deploy(1, 1, 3, 2, 2), true},
		{"status.ready stale", 3, 2, edit(func(s *echov1.EchoStatus) { s.Ready = "1/2" }), upToDate, true},
		{"observedGeneration stale", 3, 2, edit(func(s *echov1.EchoStatus) { s.ObservedGeneration = 2 }), upToDate, true},
		{"no conditions yet", 3, 2, edit(func(s *echov1.EchoStatus) { s.Conditions = nil }), upToDate, true},
		{"no Progressing condition", 3, 2, edit(func(s *echov1.EchoStatus) { s.Conditions = s.Conditions[:1] }), upToDate, true},
		{"only Progressing, first", 3, 2, edit(func(s *echov1.EchoStatus) { s.Conditions = s.Conditions[1:] }), upToDate, true},
		{"a reason stale", 3, 2, edit(func(s *echov1.EchoStatus) { s.Conditions[0].Reason = "Other" }), upToDate, true},
		{"a message stale", 3, 2, edit(func(s *echov1.EchoStatus) { s.Conditions[1].Message = "Deployment echo-hello is rolling out" }), upToDate, true},
		{"a condition's observedGeneration stale", 3, 2, edit(func(s *echov1.EchoStatus) { s.Conditions[1].ObservedGeneration = 2 }), upToDate, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e := newEcho(tc.gen, tc.replicas)
			e.Status = tc.status
			for file, content := range map[string]string{"echo": getAnswer(e), "deployment": applyAnswer(tc.d)} {
				if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// No Deployment before the apply; every patch is kept, one a line.
			fake := filepath.Join(dir, "kubectl")
			if err := os.WriteFile(fake, []byte(`#!/usr/bin/env bash
case " $* " in
  *" get echoes "*) echo hello ;;
  *" get echo "*) cat "$FAKE_DIR/echo" ;;
  *" get deployment "*) ;;
  *" apply "*) cat >/dev/null; cat "$FAKE_DIR/deployment" ;;
  *" patch echo hello --subresource=status --type=merge -p "*) printf '%s\n' "${@: -1}" >>"$FAKE_DIR/patches" ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac
`), 0o700); err != nil {
				t.Fatal(err)
			}
			from := time.Now()
			s := startScript(t, []string{"FAKE_DIR=" + dir, "RLAB_TRACE=1"}, "--namespace", "demo", "--interval", "60", "--kubectl", fake)
			var calls []reconcileCall
			eventually(t, s, 20*time.Second, "a reconcile", func(context.Context) (bool, error) {
				calls = reconciles(s.events(t))
				return len(calls) > 0 && calls[0].ended, nil
			})
			to := time.Now()
			s.terminate(t)

			verbs := []string{"get echoes", "get deployments", "apply deployments"}
			if tc.patch {
				verbs = append(verbs, "patch echoes/status")
			}
			if !slices.Equal(calls[0].verbs, verbs) {
				t.Errorf("kubectl calls %q, want %q", calls[0].verbs, verbs)
			}
			if count(s.events(t), trace.ReconcileEnd, "result", "ok") != 1 {
				t.Errorf("the reconcile failed:\n%s", s.stderr.String())
			}
			patches, err := os.ReadFile(filepath.Join(dir, "patches"))
			if !tc.patch {
				if err == nil {
					t.Errorf("status patched, though the Echo had it already:\n%s", patches)
				}
				return
			}
			lines := completeLines(string(patches))
			if len(lines) != 1 {
				t.Fatalf("%d status patches, want 1:\n%s", len(lines), patches)
			}
			var patch struct {
				Status json.RawMessage `json:"status"`
			}
			var got echov1.EchoStatus
			dec := json.NewDecoder(strings.NewReader(lines[0]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&patch); err != nil {
				t.Fatalf("patch %s: %v", lines[0], err)
			}
			dec = json.NewDecoder(strings.NewReader(string(patch.Status)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("patch %s: %v", lines[0], err)
			}
			if err := checkTimes(patch.Status); err != nil {
				t.Error(err)
			}
			if err := statusDiff(got, e, tc.d, from, to); err != nil {
				t.Errorf("patch %s:\n%v", lines[0], err)
			}
		})
	}
}
