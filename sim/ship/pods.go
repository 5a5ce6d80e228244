package ship

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/poll"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/supervisor"
)

// Pods follows the pods of a shipped operator's Deployment as the replicas
// rlab check knows: each pod takes a slot named as a replica on this
// machine is ("a", "b", ...), and the pod the ReplicaSet makes for one that
// was deleted takes the freed slot, as a restart of that replica. A slot's
// log is the pods' logs, one after the other.
type Pods struct {
	cs       kubernetes.Interface
	ns, app  string
	st       style.Style
	logDir   string
	log      *slog.Logger
	ctx      context.Context
	stop     context.CancelFunc
	informer cache.SharedIndexInformer

	mu    sync.Mutex
	slots []*slot
	byPod map[string]*slot  // every pod seen, current or gone
	byIP  map[string]string // pod IP → slot, kept after the pod is gone
	wg    sync.WaitGroup
}

type slot struct {
	name string
	pod  string // "" while free
	// earlier: restarts before the current pod (replacements and its
	// predecessors' container restarts); current: the pod's own.
	earlier, current int
	running, used    bool
	followed         map[string]int32 // pod → the container restart whose log is followed
}

// FollowPods starts following the pods labelled LabelApp=app in ns, with
// replicas slots to begin with, until Close. Logs go to logDir.
func FollowPods(ctx context.Context, cs kubernetes.Interface, ns, app string, st style.Style, replicas int, logDir string, log *slog.Logger) (*Pods, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	p := &Pods{cs: cs, ns: ns, app: app, st: st, logDir: logDir, log: log, ctx: ctx, stop: stop,
		byPod: map[string]*slot{}, byIP: map[string]string{}}
	for i := range max(replicas, 1) {
		p.slots = append(p.slots, &slot{name: string(rune('a' + i)), followed: map[string]int32{}})
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelApp + "=" + app }))
	p.informer = f.Core().V1().Pods().Informer()
	if _, err := p.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.update(o) },
		UpdateFunc: func(_, o any) { p.update(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if pod, ok := o.(*corev1.Pod); ok {
				p.gone(pod.Name)
			}
		},
	}); err != nil {
		stop()
		return nil, fmt.Errorf("pod informer: %w", err)
	}
	f.Start(ctx.Done())
	return p, nil
}

// Close stops following; the logs stay.
func (p *Pods) Close() {
	p.stop()
	p.wg.Wait()
}

// update places pod in a slot, notes its address and restarts, and follows
// its log once its container runs.
func (p *Pods) update(o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		p.gone(pod.Name)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.byPod[pod.Name]
	if s == nil {
		s = p.freeSlot()
		if s.used { // the slot held a pod before: this one replaces it
			s.earlier++
		}
		s.used = true
		s.pod, s.current, s.running = pod.Name, 0, false
		p.byPod[pod.Name] = s
	}
	if s.pod != pod.Name {
		return // a pod gone from its slot
	}
	if pod.Status.PodIP != "" {
		p.byIP[pod.Status.PodIP] = s.name
	}
	s.running = false
	for _, c := range pod.Status.ContainerStatuses {
		s.current = int(c.RestartCount)
		s.running = c.State.Running != nil
		if s.running {
			if n, seen := s.followed[pod.Name]; !seen || n < c.RestartCount+1 {
				s.followed[pod.Name] = c.RestartCount + 1
				p.wg.Add(1)
				go p.follow(pod.Name, c.Name, s.name)
			}
		}
	}
}

// freeSlot is the first slot no pod holds, or a new one.
func (p *Pods) freeSlot() *slot {
	for _, s := range p.slots {
		if s.pod == "" {
			return s
		}
	}
	s := &slot{name: string(rune('a' + len(p.slots))), followed: map[string]int32{}}
	p.slots = append(p.slots, s)
	return s
}

// gone frees the slot of a pod deleted or being deleted.
func (p *Pods) gone(pod string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.byPod[pod]; s != nil && s.pod == pod {
		s.earlier += s.current
		s.pod, s.current, s.running = "", 0, false
	}
}

// follow appends the log of the pod's running container to its slot's
// file until the container stops.
func (p *Pods) follow(pod, container, slotName string) {
	defer p.wg.Done()
	f, err := os.OpenFile(p.LogFile(slotName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		p.log.Warn("pod log", "pod", pod, "err", err)
		return
	}
	defer f.Close()
	rc, err := p.cs.CoreV1().Pods(p.ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(p.ctx)
	if err != nil {
		p.log.Warn("pod log", "pod", pod, "err", err)
		return
	}
	defer rc.Close()
	if _, err := io.Copy(f, rc); err != nil && p.ctx.Err() == nil {
		p.log.Warn("pod log", "pod", pod, "err", err)
	}
}

// LogFile is the file slot's pods' logs go to.
func (p *Pods) LogFile(slotName string) string {
	return filepath.Join(p.logDir, string(p.st)+"-"+slotName+".log")
}

// Replicas are the slots, "a" first.
func (p *Pods) Replicas() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, s := range p.slots {
		out = append(out, s.name)
	}
	return out
}

// Statuses are the slots as the supervisor's replicas: running while the
// pod's container runs; restarts counting pods that replaced a deleted one
// and the container's restarts; every one counted failed (a pod deleted
// was killed, a container restarted had exited).
func (p *Pods) Statuses() []supervisor.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []supervisor.Status
	for _, s := range p.slots {
		n := s.earlier + s.current
		out = append(out, supervisor.Status{Name: p.st.Source(s.name), Replica: s.name, Style: p.st,
			Running: s.running, Restarts: n, Failed: n})
	}
	return out
}

// Kill deletes the pod of slot slotName at once (no grace: a crash). A free
// slot is proc.ErrExited: its pod is on its way.
func (p *Pods) Kill(slotName string) error {
	p.mu.Lock()
	var pod string
	for _, s := range p.slots {
		if s.name == slotName {
			pod = s.pod
		}
	}
	p.mu.Unlock()
	if pod == "" {
		return proc.ErrExited
	}
	err := p.cs.CoreV1().Pods(p.ns).Delete(p.ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	if apierrors.IsNotFound(err) {
		return proc.ErrExited
	}
	if err != nil {
		return fmt.Errorf("delete pod %s: %w", pod, err)
	}
	p.gone(pod)
	return nil
}

// SlotOf is the slot of the pod at ip, asking the apiserver when the
// informer has not seen the address yet; "" if no pod of the Deployment
// has it.
func (p *Pods) SlotOf(ip string) string {
	p.mu.Lock()
	s, ok := p.byIP[ip]
	p.mu.Unlock()
	if ok {
		return s
	}
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	pods, err := p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelApp + "=" + p.app})
	if err != nil {
		return ""
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].CreationTimestamp.Before(&pods.Items[j].CreationTimestamp) })
	for i := range pods.Items {
		p.update(&pods.Items[i])
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byIP[ip]
}

// WaitRunning waits until every slot's container runs. If they do not
// within timeout, the error says why as the kubelet does (the container's
// waiting reason and message) and quotes the last line of its log.
func (p *Pods) WaitRunning(ctx context.Context, timeout time.Duration) error {
	err := poll.Until(ctx, 200*time.Millisecond, timeout, "", poll.True(func() bool {
		for _, s := range p.Statuses() {
			if !s.Running {
				return false
			}
		}
		return true
	}))
	if err == nil || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("the operator's pods did not run within %s: %s", timeout, p.why(ctx))
}

// why is what holds the first pod that does not run.
func (p *Pods) why(ctx context.Context) string {
	pods, err := p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelApp + "=" + p.app})
	if err != nil {
		return fmt.Sprintf("list its pods: %v", err)
	}
	for _, pod := range pods.Items {
		for _, c := range pod.Status.ContainerStatuses {
			if c.State.Running != nil {
				continue
			}
			why := "pod " + pod.Name + " is " + string(pod.Status.Phase)
			if w := c.State.Waiting; w != nil {
				why = fmt.Sprintf("pod %s: %s: %s", pod.Name, w.Reason, w.Message)
			}
			if t := c.LastTerminationState.Terminated; t != nil {
				why += fmt.Sprintf("; it exited %d", t.ExitCode)
			}
			if line := lastLine(p.LogFile(p.slotOfPod(pod.Name))); line != "" {
				why += "; its log ends: " + line
			}
			return why
		}
		if len(pod.Status.ContainerStatuses) == 0 {
			for _, c := range pod.Status.Conditions {
				if c.Status != corev1.ConditionTrue && c.Message != "" {
					return fmt.Sprintf("pod %s: %s: %s", pod.Name, c.Reason, c.Message)
				}
			}
			return "pod " + pod.Name + " is " + string(pod.Status.Phase)
		}
	}
	if len(pods.Items) == 0 {
		return "the Deployment made no pod (kubectl -n " + p.ns + " describe deployment " + p.app + ")"
	}
	return "they run now"
}

func (p *Pods) slotOfPod(pod string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.byPod[pod]; s != nil {
		return s.name
	}
	return ""
}

// lastLine is the last non-empty line of file, or "".
func lastLine(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
