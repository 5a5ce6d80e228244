package classroom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kkloud/rlab/sim/tenancy"
)

// A student's progress lives in one ConfigMap of the classroom namespace,
// progress-sN, that prepare makes and that only student sN (by a Role
// limited to that name) and the instructor may read or write: not in the
// student's own namespaces, where the operators watch ConfigMaps and a
// lesson's clean-up deletes the ones it does not know.

// LabelProgress marks a progress ConfigMap, with the student's name.
const LabelProgress = "rlab.kkloud.io/progress"

// Keys of a progress ConfigMap: the student's report, and the instructor's
// last reset request.
const (
	ReportKey = "report.json"
	ResetKey  = "reset.json"
)

// ProgressName is student's progress ConfigMap in tenancy.ClassroomNamespace.
func ProgressName(student string) string { return "progress-" + student }

// StudentOf is the classroom student a Kubernetes user is
// ("system:serviceaccount:rlab-classroom:s1" is s1), if any.
func StudentOf(k8sUser string) (string, bool) {
	s, ok := strings.CutPrefix(k8sUser, "system:serviceaccount:"+tenancy.ClassroomNamespace+":")
	return s, ok && s != ""
}

// progressRules let a student read and patch their own progress ConfigMap
// and nothing else in the classroom namespace: get at start, list and watch
// for the instructor's resets (naming the object by a metadata.name field
// selector, which RBAC matches against resourceNames), patch to report.
func progressRules(student string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"},
		ResourceNames: []string{ProgressName(student)},
		Verbs:         []string{"get", "list", "watch", "patch"},
	}}
}

// progressConfigMap makes student's progress ConfigMap, empty, unless it is
// there: prepared again, a classroom keeps what its students did.
func (c *clients) progressConfigMap(ctx context.Context, student string, subject rbacv1.Subject) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: ProgressName(student), Namespace: tenancy.ClassroomNamespace,
		Labels: map[string]string{LabelClassroom: student, LabelProgress: student},
	}}
	if _, err := c.kube.CoreV1().ConfigMaps(tenancy.ClassroomNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("progress configmap: %w", err)
	}
	return c.role(ctx, tenancy.ClassroomNamespace, ProgressName(student), progressRules(student), subject)
}

// Report is what a student's rlab tells the instructor, written to their
// progress ConfigMap whenever it changes.
type Report struct {
	Student string    `json:"student"`
	Updated time.Time `json:"updated"`
	// Running is false once the student's rlab stopped (or never ran).
	Running bool `json:"running"`
	// Now is the step on the student's screen, if a lesson is open.
	Now *Position `json:"now,omitempty"`
	// Lessons are every lesson the student started, by number.
	Lessons []LessonRecord `json:"lessons,omitempty"`
	// ResetDone is the ID of the last reset request the student's rlab
	// carried out.
	ResetDone string `json:"resetDone,omitempty"`
}

// Position is the step a student is on.
type Position struct {
	Lesson    int       `json:"lesson"`
	Title     string    `json:"title"`
	Step      int       `json:"step"` // from 1
	Steps     int       `json:"steps"`
	StepTitle string    `json:"stepTitle"`
	Since     time.Time `json:"since"` // on this step since
	Passed    bool      `json:"passed"`
	Done      bool      `json:"done"` // past the lesson's last step
	// Waits is what the step's check waits for, one line per condition.
	Waits string `json:"waits,omitempty"`
	// Reason is the check's last detail while it has not passed.
	Reason string `json:"reason,omitempty"`
	// Error is why the step cannot pass or its play failed.
	Error string `json:"error,omitempty"`
}

// LessonRecord is how a lesson went: each step's outcome ("hand",
// "played", "skipped", "" not yet) and the student's predictions.
type LessonRecord struct {
	Number      int                `json:"number"`
	Steps       int                `json:"steps"`
	Next        int                `json:"next"` // the next step to do, from 0
	Done        bool               `json:"done"`
	How         []string           `json:"how,omitempty"`
	Predictions map[int]Prediction `json:"predictions,omitempty"`
}

// Prediction is a student's answer to step Step's question (from 1), and,
// once the step passed, whether it was right and what was measured.
type Prediction struct {
	Choice   int    `json:"choice"`
	Right    *bool  `json:"right,omitempty"`
	Measured string `json:"measured,omitempty"`
}

// Reset is the instructor's request that a student start lesson Lesson
// again from its baseline.
type Reset struct {
	ID     string `json:"id"`
	Lesson int    `json:"lesson"`
}

// Reporter writes one student's Report to their progress ConfigMap: every
// change, at most once an interval, the latest one winning; and hands on
// the instructor's reset requests. Its writes never block a lesson.
type Reporter struct {
	cms interface {
		Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error)
	}
	kube    kubernetes.Interface
	student string
	log     *slog.Logger
	every   time.Duration

	mu      sync.Mutex
	latest  Report
	dirty   bool
	wake    chan struct{}
	resets  chan Reset
	stop    context.CancelFunc
	done    chan struct{}
	lastErr string
	handed  string // the last reset request handed on
}

// ReportEvery is the shortest time between two writes of a report.
const ReportEvery = 2 * time.Second

// NewReporter starts the reporter of student, whose credentials cfg
// carries. It fails, with what to do, when the student's progress
// ConfigMap is missing (a classroom prepared by an older rlab).
func NewReporter(ctx context.Context, cfg *rest.Config, student string, log *slog.Logger) (*Reporter, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	cms := kube.CoreV1().ConfigMaps(tenancy.ClassroomNamespace)
	cm, err := cms.Get(ctx, ProgressName(student), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("no progress ConfigMap %s/%s for student %s (a classroom prepared by an older rlab?): the instructor runs rlab classroom prepare again: %w",
			tenancy.ClassroomNamespace, ProgressName(student), student, err)
	}
	if err != nil {
		return nil, fmt.Errorf("progress configmap: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reporter{cms: cms, kube: kube, student: student, log: log, every: ReportEvery,
		wake: make(chan struct{}, 1), resets: make(chan Reset, 1), done: make(chan struct{})}
	// What was done before this run: a reset request carried out then is
	// not one to carry out again.
	if prev, err := decodeReport(cm); err == nil {
		r.latest.ResetDone = prev.ResetDone
		r.latest.Lessons = prev.Lessons
	}
	r.latest.Student, r.latest.Running = student, true
	r.dirty = true
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = cancel
	go r.loop(rctx)
	go r.watchResets(rctx)
	r.kick()
	return r, nil
}

// Set replaces where the student is (now nil: no lesson open) and how
// their lessons went; it returns at once.
func (r *Reporter) Set(now *Position, lessons []LessonRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest.Now, r.latest.Lessons = now, lessons
	r.dirty = true
	r.kick()
}

// ResetDone records that reset request id was carried out.
func (r *Reporter) ResetDone(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest.ResetDone = id
	r.dirty = true
	r.kick()
}

// Resets are the instructor's reset requests not carried out yet, the
// latest one only.
func (r *Reporter) Resets() <-chan Reset { return r.resets }

// Err is the last write's error, "" when it succeeded.
func (r *Reporter) Err() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// kick wakes the writer. Called with the lock held.
func (r *Reporter) kick() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Close writes a last report saying the student's rlab stopped, within a
// few seconds, and stops.
func (r *Reporter) Close() {
	r.stop()
	<-r.done
	r.mu.Lock()
	r.latest.Running = false
	rep := r.latest
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.write(ctx, rep); err != nil {
		r.log.Warn("last progress report", "err", err)
	}
}

// loop writes the latest report after each change, no sooner than every
// after the previous write.
func (r *Reporter) loop(ctx context.Context) {
	defer close(r.done)
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		if wait := r.every - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		r.mu.Lock()
		rep, dirty := r.latest, r.dirty
		r.dirty = false
		r.mu.Unlock()
		if !dirty {
			continue
		}
		last = time.Now()
		err := r.write(ctx, rep)
		r.mu.Lock()
		r.lastErr = ""
		if err != nil {
			r.lastErr = err.Error()
			r.dirty = true // the next change, or Close, tries again
		}
		r.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			r.log.Warn("progress report", "err", err)
		}
	}
}

// write patches the report into the ConfigMap: one request, no read.
func (r *Reporter) write(ctx context.Context, rep Report) error {
	rep.Updated = time.Now().UTC()
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("progress report: %w", err)
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{ReportKey: string(b)}})
	if err != nil {
		return fmt.Errorf("progress report: %w", err)
	}
	if _, err := r.cms.Patch(ctx, ProgressName(r.student), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("write progress %s/%s: %w", tenancy.ClassroomNamespace, ProgressName(r.student), err)
	}
	return nil
}

// watchResets watches the student's own ConfigMap (by name: all their Role
// allows) and hands on a reset request that was not carried out yet.
func (r *Reporter) watchResets(ctx context.Context) {
	f := informers.NewSharedInformerFactoryWithOptions(r.kube, 0,
		informers.WithNamespace(tenancy.ClassroomNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ProgressName(r.student)).String()
		}))
	inf := f.Core().V1().ConfigMaps().Informer()
	seen := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		req, err := decodeReset(cm)
		if err != nil || req.ID == "" {
			return
		}
		// Once: the student's own reports update this ConfigMap too, and a
		// reset under way must not start again (nor one that failed: the
		// instructor asks again).
		r.mu.Lock()
		seen := req.ID == r.latest.ResetDone || req.ID == r.handed
		r.handed = req.ID
		r.mu.Unlock()
		if seen {
			return
		}
		select { // the latest request wins
		case <-r.resets:
		default:
		}
		r.resets <- req
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	})
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
}

func decodeReport(cm *corev1.ConfigMap) (Report, error) {
	var rep Report
	s := cm.Data[ReportKey]
	if s == "" {
		return rep, errNoReport
	}
	if err := json.Unmarshal([]byte(s), &rep); err != nil {
		return rep, fmt.Errorf("progress of %s: %w", cm.Name, err)
	}
	return rep, nil
}

var errNoReport = errors.New("no report yet")

func decodeReset(cm *corev1.ConfigMap) (Reset, error) {
	var req Reset
	s := cm.Data[ResetKey]
	if s == "" {
		return req, nil
	}
	if err := json.Unmarshal([]byte(s), &req); err != nil {
		return req, fmt.Errorf("reset request in %s: %w", cm.Name, err)
	}
	return req, nil
}

// Reports are every student's progress, by student number; a student
// whose rlab never reported has a Report with only their name.
func Reports(ctx context.Context, cfg *rest.Config) ([]Report, error) {
	c, err := newClients(cfg)
	if err != nil {
		return nil, err
	}
	list, err := c.kube.CoreV1().ConfigMaps(tenancy.ClassroomNamespace).List(ctx, metav1.ListOptions{LabelSelector: LabelProgress})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("progress: %w", err)
	}
	var cms []*corev1.ConfigMap
	if list != nil {
		for i := range list.Items {
			cms = append(cms, &list.Items[i])
		}
	}
	return reportsOf(cms), nil
}

// reportsOf reads the reports of the progress ConfigMaps cms, in student
// order. A report that cannot be read says so in its Now.Error.
func reportsOf(cms []*corev1.ConfigMap) []Report {
	var out []Report
	for _, cm := range cms {
		student := cm.Labels[LabelProgress]
		rep, err := decodeReport(cm)
		switch {
		case errors.Is(err, errNoReport):
		case err != nil:
			rep = Report{Now: &Position{Error: err.Error()}}
		}
		rep.Student = student
		out = append(out, rep)
	}
	sortStudents(out, func(r Report) string { return r.Student })
	return out
}

// sortStudents orders s1, s2, ..., s10 by number.
func sortStudents[T any](s []T, name func(T) string) {
	num := func(n string) int {
		i, _ := strconv.Atoi(strings.TrimPrefix(n, "s"))
		return i
	}
	sort.SliceStable(s, func(i, j int) bool { return num(name(s[i])) < num(name(s[j])) })
}

// WatchReports calls f with every student's report now and after each
// change, until ctx ends: the instructor's live view, on one watch.
func WatchReports(ctx context.Context, cfg *rest.Config, f func([]Report)) error {
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
	fac := informers.NewSharedInformerFactoryWithOptions(c.kube, 0,
		informers.WithNamespace(tenancy.ClassroomNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelProgress }))
	inf := fac.Core().V1().ConfigMaps()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	})
	fac.Start(ctx.Done())
	defer fac.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return fmt.Errorf("watch progress: %w", ctx.Err())
	}
	for {
		list, err := inf.Lister().ConfigMaps(tenancy.ClassroomNamespace).List(labels.Everything())
		if err != nil {
			return fmt.Errorf("progress: %w", err)
		}
		f(reportsOf(list))
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// RequestReset asks student's rlab to bring their namespaces back to the
// state lesson starts from and open it at step 1: now, if it runs, or at
// its next start. It returns the request's ID.
func RequestReset(ctx context.Context, cfg *rest.Config, student string, lesson int) (string, error) {
	c, err := newClients(cfg)
	if err != nil {
		return "", err
	}
	cms := c.kube.CoreV1().ConfigMaps(tenancy.ClassroomNamespace)
	if _, err := cms.Get(ctx, ProgressName(student), metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return "", fmt.Errorf("no student %s in this classroom (no ConfigMap %s/%s): rlab classroom status lists them", student, tenancy.ClassroomNamespace, ProgressName(student))
	} else if err != nil {
		return "", fmt.Errorf("progress of %s: %w", student, err)
	}
	req := Reset{ID: time.Now().UTC().Format(time.RFC3339Nano), Lesson: lesson}
	b, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("reset request: %w", err)
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{ResetKey: string(b)}})
	if err != nil {
		return "", fmt.Errorf("reset request: %w", err)
	}
	if _, err := cms.Patch(ctx, ProgressName(student), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("reset request for %s: %w", student, err)
	}
	return req.ID, nil
}
