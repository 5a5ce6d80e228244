package classroom

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/cluster"
)

// Need is what one lesson allowed on a shared cluster holds at most in
// each of a student's namespaces (lessons.Footprint), for the quota and the
// capacity plan.
type Need struct {
	Lesson int
	Title  string
	Echoes int // Echoes, and as many Deployments
	Pods   int
}

// Quota is what each of a student's namespaces may hold: ResourceQuota
// QuotaName, and LimitRange QuotaName giving every container the default
// requests the quota's CPU and memory are counted in.
type Quota struct {
	Echoes, Deployments, ConfigMaps, Pods int
	// The default request and limit of an Echo pod's container (the Echo
	// Deployments set none), and the namespace's total requests: Pods of
	// them.
	PodCPU, PodMemory, LimitCPU, LimitMemory resource.Quantity
}

// QuotaName names the ResourceQuota and the LimitRange prepare makes in
// each student namespace.
const QuotaName = "rlab-student"

// Per pod, what an Echo pod's container requests by default, and may use:
// the echo server answers one HTTP page, and the class's Nodes are shared
// by every student's.
var (
	podCPU      = resource.MustParse("10m")
	podMemory   = resource.MustParse("16Mi")
	limitCPU    = resource.MustParse("100m")
	limitMemory = resource.MustParse("64Mi")
)

// headroomEchoes are Echoes a student may make beyond what the lessons
// make, to try things; configMaps are a namespace's: kube-root-ca.crt,
// echo-defaults and echo-registry (lessons 9, 18, 20), lesson 18's
// unrelated one, and a few of the student's.
const (
	headroomEchoes = 5
	configMaps     = 10
)

// QuotaFor sizes the quota from the lessons' needs: the most Echoes any
// lesson holds, plus headroomEchoes; twice the most pods, since a
// Deployment rolling out holds its old pods and its new ones at once (and a
// pod being deleted still counts while it terminates).
func QuotaFor(needs []Need) Quota {
	q := Quota{ConfigMaps: configMaps, PodCPU: podCPU, PodMemory: podMemory, LimitCPU: limitCPU, LimitMemory: limitMemory}
	for _, n := range needs {
		q.Echoes = max(q.Echoes, n.Echoes+headroomEchoes)
		q.Pods = max(q.Pods, 2*n.Pods)
	}
	q.Deployments = q.Echoes
	return q
}

// Requests are the namespace's total CPU and memory requests: Pods pods
// at the default request.
func (q Quota) Requests() (cpu, memory resource.Quantity) {
	cpu = *resource.NewMilliQuantity(q.PodCPU.MilliValue()*int64(q.Pods), resource.DecimalSI)
	memory = *resource.NewQuantity(q.PodMemory.Value()*int64(q.Pods), resource.BinarySI)
	return cpu, memory
}

// Node is one Node's allocatable room; Fake for kwok's (nothing runs on
// them: their CPU and memory are numbers, their pods cost no machine).
type Node struct {
	Name        string
	Fake        bool
	Pods        int64
	CPU, Memory resource.Quantity
}

// Capacity is a cluster's room for a class: its Nodes, and what the pods
// already there take of it.
type Capacity struct {
	Nodes []Node
	// Pods not finished, and their requests, already on the cluster.
	UsedPods            int64
	UsedCPU, UsedMemory resource.Quantity
}

// ReadCapacity reads the cluster's Nodes (schedulable, Ready) and the pods
// already on them.
func ReadCapacity(ctx context.Context, kube kubernetes.Interface) (Capacity, error) {
	var c Capacity
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return c, fmt.Errorf("nodes: %w", err)
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable || !nodeReady(n) {
			continue
		}
		a := n.Status.Allocatable
		c.Nodes = append(c.Nodes, Node{Name: n.Name, Fake: n.Annotations[cluster.FakeNodeAnnotation] == "fake",
			Pods: a.Pods().Value(), CPU: *a.Cpu(), Memory: *a.Memory()})
	}
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return c, fmt.Errorf("pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.Spec.NodeName == "" {
			continue
		}
		c.UsedPods++
		for _, ct := range p.Spec.Containers {
			c.UsedCPU.Add(*ct.Resources.Requests.Cpu())
			c.UsedMemory.Add(*ct.Resources.Requests.Memory())
		}
	}
	return c, nil
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Plan is whether a class fits a cluster, lesson by lesson.
type Plan struct {
	Students int
	Free     Room // what the Nodes have left
	Lessons  []LessonFit
	// Real: some Node runs pods for real, so CPU and memory count too.
	Real bool
}

// Room is pods, CPU and memory.
type Room struct {
	Pods        int64
	CPU, Memory resource.Quantity
}

// LessonFit is one lesson: what a student's three namespaces hold at most
// during it, the class's total, and how many students fit at once.
type LessonFit struct {
	Need
	PerStudent Room
	Class      Room
	MaxAtOnce  int // students on this lesson at once that fit
}

// Fits: every lesson fits the whole class at once.
func (p Plan) Fits() bool {
	for _, l := range p.Lessons {
		if l.MaxAtOnce < p.Students {
			return false
		}
	}
	return true
}

// NewPlan says whether students students fit cap, each lesson of needs
// taken by all of them at once, each pod at the quota's default request.
func NewPlan(cap Capacity, needs []Need, q Quota, students int) Plan {
	p := Plan{Students: students}
	for _, n := range cap.Nodes {
		p.Free.Pods += n.Pods
		p.Free.CPU.Add(n.CPU)
		p.Free.Memory.Add(n.Memory)
		p.Real = p.Real || !n.Fake
	}
	p.Free.Pods -= cap.UsedPods
	p.Free.CPU.Sub(cap.UsedCPU)
	p.Free.Memory.Sub(cap.UsedMemory)
	styles := int64(len(style.All()))
	for _, n := range needs {
		pods := styles * int64(n.Pods)
		f := LessonFit{Need: n, PerStudent: Room{Pods: pods,
			CPU:    *resource.NewMilliQuantity(pods*q.PodCPU.MilliValue(), resource.DecimalSI),
			Memory: *resource.NewQuantity(pods*q.PodMemory.Value(), resource.BinarySI)}}
		f.Class = Room{Pods: pods * int64(students),
			CPU:    *resource.NewMilliQuantity(f.PerStudent.CPU.MilliValue()*int64(students), resource.DecimalSI),
			Memory: *resource.NewQuantity(f.PerStudent.Memory.Value()*int64(students), resource.BinarySI)}
		f.MaxAtOnce = fitting(p.Free.Pods, pods)
		if p.Real {
			f.MaxAtOnce = min(f.MaxAtOnce, fitting(p.Free.CPU.MilliValue(), f.PerStudent.CPU.MilliValue()),
				fitting(p.Free.Memory.Value(), f.PerStudent.Memory.Value()))
		}
		p.Lessons = append(p.Lessons, f)
	}
	return p
}

// fitting is how many of each fit in free (all of them if each is none).
func fitting(free, each int64) int {
	switch {
	case each <= 0:
		return int(^uint(0) >> 1)
	case free <= 0:
		return 0
	}
	return int(free / each)
}

// Write prints the plan: the cluster's room, a line a lesson, and what to
// change where the class does not fit.
func (p Plan) Write(w io.Writer, cap Capacity) error {
	fake := 0
	for _, n := range cap.Nodes {
		if n.Fake {
			fake++
		}
	}
	kinds := fmt.Sprintf("%d Nodes", len(cap.Nodes))
	switch {
	case fake == len(cap.Nodes) && fake > 0:
		kinds += ", all kwok's (pods cost no machine: only their number counts)"
	case fake > 0:
		kinds += fmt.Sprintf(", %d of them kwok's", fake)
	}
	fmt.Fprintf(w, "cluster: %s; free: %d pods", kinds, p.Free.Pods)
	if p.Real {
		fmt.Fprintf(w, ", %s CPU, %s memory", p.Free.CPU.String(), p.Free.Memory.String())
	}
	fmt.Fprintf(w, " (after the %d pods already there)\n", cap.UsedPods)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "LESSON\tPODS A STUDENT\tFOR %d\tFITS AT ONCE\n"
	fmt.Fprintf(tw, head, p.Students)
	for _, l := range p.Lessons {
		verdict := "all"
		if l.MaxAtOnce < p.Students {
			verdict = fmt.Sprintf("%d: NO", l.MaxAtOnce)
		}
		fmt.Fprintf(tw, "%d %s\t%d\t%d\t%s\n", l.Lesson, l.Title, l.PerStudent.Pods, l.Class.Pods, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Fits() {
		_, err := fmt.Fprintf(w, "%d %s, every lesson taken by all of them at once.\n", p.Students, plural(p.Students, "student fits", "students fit"))
		return err
	}
	var short []string
	for _, l := range p.Lessons {
		if l.MaxAtOnce < p.Students {
			short = append(short, fmt.Sprintf("lesson %d (%d at once)", l.Lesson, l.MaxAtOnce))
		}
	}
	fmt.Fprintf(w, "%d %s: %s. Have fewer students on %s at once, or give the cluster %s.\n",
		p.Students, plural(p.Students, "student does not fit", "students do not fit"), strings.Join(short, ", "), plural(len(short), "that lesson", "those lessons"), p.more(cap))
	return nil
}

// more says what Nodes the cluster lacks for the class, in Nodes like its
// biggest: enough for the lesson that needs the most.
func (p Plan) more(cap Capacity) string {
	if len(cap.Nodes) == 0 {
		return "Nodes: it has none ready"
	}
	big := cap.Nodes[0]
	for _, n := range cap.Nodes {
		if n.Pods > big.Pods {
			big = n
		}
	}
	// Nodes like big that hold what lacks of each, rounded up.
	nodes := func(lack, each int64) int64 {
		if lack <= 0 || each <= 0 {
			return 0
		}
		return (lack + each - 1) / each
	}
	var need int64
	for _, l := range p.Lessons {
		need = max(need, nodes(l.Class.Pods-p.Free.Pods, big.Pods))
		if p.Real {
			need = max(need, nodes(l.Class.CPU.MilliValue()-p.Free.CPU.MilliValue(), big.CPU.MilliValue()),
				nodes(l.Class.Memory.Value()-p.Free.Memory.Value(), big.Memory.Value()))
		}
	}
	return fmt.Sprintf("%d more Node%s like %s (%d pods, %s CPU, %s memory each)", need, plural(int(need), "", "s"),
		big.Name, big.Pods, big.CPU.String(), big.Memory.String())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// plan prints whether the class fits the cluster, and the quota each
// student namespace gets; it refuses a class that does not fit, unless
// o.Force.
func (c *clients) plan(ctx context.Context, o Options) error {
	if len(o.Needs) == 0 {
		return nil
	}
	cap, err := ReadCapacity(ctx, c.kube)
	if err != nil {
		return fmt.Errorf("capacity plan: %w", err)
	}
	q := QuotaFor(o.Needs)
	p := NewPlan(cap, o.Needs, q, o.Students)
	w := o.Log
	if w == nil {
		w = io.Discard
	}
	if err := p.Write(w, cap); err != nil {
		return err
	}
	cpu, mem := q.Requests()
	fmt.Fprintf(w, "quota %s in each of a student's %d namespaces: %d Echoes, %d Deployments, %d ConfigMaps, %d pods, %s CPU and %s memory requested (a container requests %s and %s by default, and may use %s and %s)\n",
		QuotaName, len(style.All()), q.Echoes, q.Deployments, q.ConfigMaps, q.Pods, cpu.String(), mem.String(),
		q.PodCPU.String(), q.PodMemory.String(), q.LimitCPU.String(), q.LimitMemory.String())
	if !p.Fits() && !o.Force && !o.DryRun {
		return fmt.Errorf("%d students do not fit this cluster (the plan above): prepare fewer, give it more Nodes, or --force to prepare them anyway and keep them off those lessons at once", o.Students)
	}
	return nil
}

// quota makes (or resizes) ResourceQuota and LimitRange QuotaName in
// student's namespace ns. Another quota there, not prepare's, is refused:
// it would cut the lessons short where this plan says they fit.
func (c *clients) quota(ctx context.Context, ns, student string, q Quota) error {
	quotas := c.kube.CoreV1().ResourceQuotas(ns)
	list, err := quotas.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("resource quotas in %s: %w", ns, err)
	}
	for _, got := range list.Items {
		if got.Labels[LabelClassroom] == "" {
			return fmt.Errorf("namespace %s holds ResourceQuota %s, which prepare did not make: it would refuse what the lessons need where %s's does not; delete it (kubectl -n %s delete resourcequota %s) and prepare again",
				ns, got.Name, QuotaName, ns, got.Name)
		}
	}
	cpu, mem := q.Requests()
	labels := map[string]string{LabelClassroom: student}
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: ns, Labels: labels},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"count/echoes." + echov1.Group: *resource.NewQuantity(int64(q.Echoes), resource.DecimalSI),
			"count/deployments.apps":       *resource.NewQuantity(int64(q.Deployments), resource.DecimalSI),
			corev1.ResourceConfigMaps:      *resource.NewQuantity(int64(q.ConfigMaps), resource.DecimalSI),
			corev1.ResourcePods:            *resource.NewQuantity(int64(q.Pods), resource.DecimalSI),
			corev1.ResourceRequestsCPU:     cpu,
			corev1.ResourceRequestsMemory:  mem,
		}}}
	if got, err := quotas.Get(ctx, QuotaName, metav1.GetOptions{}); err == nil {
		got.Spec = rq.Spec
		_, err = quotas.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("resource quota %s/%s: %w", ns, QuotaName, err)
		}
	} else if _, err := quotas.Create(ctx, rq, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("resource quota %s/%s: %w", ns, QuotaName, err)
	}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: ns, Labels: labels},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: q.PodCPU, corev1.ResourceMemory: q.PodMemory},
			Default:        corev1.ResourceList{corev1.ResourceCPU: q.LimitCPU, corev1.ResourceMemory: q.LimitMemory},
		}}}}
	ranges := c.kube.CoreV1().LimitRanges(ns)
	if got, err := ranges.Get(ctx, QuotaName, metav1.GetOptions{}); err == nil {
		got.Spec = lr.Spec
		if _, err := ranges.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("limit range %s/%s: %w", ns, QuotaName, err)
		}
	} else if _, err := ranges.Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("limit range %s/%s: %w", ns, QuotaName, err)
	}
	return nil
}

// quotasCounted waits until a controller has counted every quota prepare
// made (want of them): until then the apiserver refuses every create a
// quota covers ("status unknown for quota"). On a cluster where none
// counts them, it removes them again and says why.
func (c *clients) quotasCounted(ctx context.Context, want int) error {
	sel := metav1.ListOptions{LabelSelector: LabelClassroom}
	var waiting []string
	err := cluster.Poll(ctx, time.Minute, "the students' ResourceQuotas counted", func(ctx context.Context) (bool, error) {
		list, err := c.kube.CoreV1().ResourceQuotas("").List(ctx, sel)
		if err != nil {
			return false, err
		}
		waiting = waiting[:0]
		for _, q := range list.Items {
			if q.Name == QuotaName && len(q.Status.Hard) == 0 {
				waiting = append(waiting, q.Namespace)
			}
		}
		return len(list.Items) >= want && len(waiting) == 0, nil
	})
	if err == nil {
		return nil
	}
	for _, ns := range waiting {
		_ = c.kube.CoreV1().ResourceQuotas(ns).Delete(ctx, QuotaName, metav1.DeleteOptions{})
	}
	return fmt.Errorf("%w: no controller counts ResourceQuotas on this cluster (kube-controller-manager's resourcequota), and until one does the apiserver refuses every create a quota covers; removed the %d not counted again", err, len(waiting))
}
