package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/poll"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/ship"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// A custom operator is shipped into the cluster (Ship) the way a team
// ships one: its image built here and loaded into the kind node, its RBAC
// granted to its ServiceAccount, and a Deployment in its namespace. Its
// replicas on this machine stop; from then on its replicas are the
// Deployment's pods (ship.Pods), and its requests are read from the
// apiserver's audit log.

// APIServerPort is the port kube-apiserver listens on in a kind node.
const APIServerPort = 6443

// shipRunTimeout bounds the wait for a shipped operator's pods to run;
// removeWait the wait for its replicas here to stop.
const (
	shipRunTimeout = 2 * time.Minute
	removeWait     = 5 * time.Second
)

// ShipOptions say what to ship.
type ShipOptions struct {
	// Dir is the operator's Go module (its main package in ./cmd).
	Dir string
	// Replicas of the Deployment (1 if 0); Args the manager's flags.
	Replicas int32
	Args     []string
	// RBAC, if set, is granted to its ServiceAccount instead of the
	// course's Role (the project's config/rbac).
	RBAC *rbac.Grant
	// Built, if set, is an image already built (rlab check builds before
	// the sandbox starts); else Ship builds Dir's.
	Built *ship.Image
	// Progress, if set, is told each stage as it ends ("image built ...").
	Progress func(string)
}

// Shipment is a custom operator running in the cluster.
type Shipment struct {
	Image *ship.Image
	Pods  *ship.Pods
	RBAC  *rbac.Grant // what its ServiceAccount was granted; nil: the course's Role
	stop  context.CancelFunc
	// specs are its replicas here as they ran, for Unship; unbound says
	// Ship deleted the course's RoleBinding.
	specs   []supervisor.Spec
	unbound bool
}

// shipments are the sandbox's shipped operators, by style.
type shipments struct {
	mu sync.Mutex
	by map[style.Style]*Shipment
}

// Shipped is style st's Shipment, if it was shipped.
func (s *Sandbox) Shipped(st style.Style) (*Shipment, bool) {
	s.shipped.mu.Lock()
	defer s.shipped.mu.Unlock()
	sh, ok := s.shipped.by[st]
	return sh, ok
}

// Ship puts custom operator st into the cluster: it builds o.Dir's image
// (unless o.Built), loads it into the node, grants the operator's
// ServiceAccount o.RBAC or the course's Role, stops its replicas on this
// machine, deploys it and waits for its pods to run. Only on kind, once
// per operator.
func (s *Sandbox) Ship(ctx context.Context, st style.Style, o ShipOptions) (*Shipment, error) {
	if _, ok := s.customs.Custom(st); !ok {
		return nil, fmt.Errorf("%s is not your own operator: only a custom operator is shipped", st)
	}
	if _, ok := s.Shipped(st); ok {
		return nil, fmt.Errorf("%s runs in the cluster already", st)
	}
	sh, ok := s.cluster.Shipper()
	if !ok {
		return nil, fmt.Errorf("shipping needs the kind backend (this sandbox runs on %s): rlab loads the image into the node of the kind cluster it made, with no registry, and reads that apiserver's audit log", s.cluster.Type().Name)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	img := o.Built
	if img == nil {
		dir, err := os.MkdirTemp(s.cluster.tmp, "ship-")
		if err != nil {
			return nil, fmt.Errorf("image dir: %w", err)
		}
		defer os.RemoveAll(dir)
		if img, err = ship.BuildImage(ctx, ship.ImageOptions{Dir: o.Dir, Repository: "rlab.local/" + st.Operator(), Out: filepath.Join(dir, "image.tar")}); err != nil {
			return nil, err
		}
		progress(fmt.Sprintf("image %s built: go build %.1fs, image %.2fs, %.1f MB", img.Ref, img.Build.Seconds(), img.Pack.Seconds(), float64(img.Size)/1e6))
	}
	if err := sh.LoadImage(func() (io.ReadCloser, error) { return os.Open(img.Archive) }); err != nil {
		return nil, err
	}
	progress("image loaded into the node")
	host, err := sh.APIServerHost()
	if err != nil {
		return nil, err
	}
	ns, kube := s.sc.namespace(st), s.admin.Kube()
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccount(st), Namespace: ns}
	unbound := false
	if o.RBAC != nil {
		if err := s.cluster.grantRBAC(ctx, ns, subject, o.RBAC, true); err != nil {
			return nil, err
		}
		// What it declares alone, as in a real deployment.
		err := kube.RbacV1().RoleBindings(ns).Delete(ctx, RoleName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("unbind the course's Role in %s: %w", ns, err)
		}
		unbound = err == nil
	}
	// Its replicas here stop before its pods start: two leaders' worth of
	// writers would be one operator writing twice.
	var specs []supervisor.Spec
	for _, r := range s.ops.plan.of(st) {
		spec, err := s.ops.super.Spec(st.Source(r))
		if err != nil {
			continue // not started (rlab check --ship starts none)
		}
		if err := s.ops.super.Remove(st.Source(r), removeWait); err != nil {
			return nil, fmt.Errorf("stop %s on this machine: %w", st.Source(r), err)
		}
		specs = append(specs, spec)
	}
	fctx, stop := context.WithCancel(context.Background())
	pods, err := ship.FollowPods(fctx, kube, ns, st.Operator(), st, int(o.Replicas), filepath.Join(s.opts.State.Logs(), "shipped"), s.opts.Log)
	if err != nil {
		stop()
		return nil, err
	}
	shipment := &Shipment{Image: img, Pods: pods, RBAC: o.RBAC, stop: func() { stop(); pods.Close() }, specs: specs, unbound: unbound}
	audit, err := sh.AuditLog(fctx)
	if err != nil {
		shipment.stop()
		return nil, fmt.Errorf("audit log: %w", err)
	}
	shipment.stop = func() {
		stop()
		if err := audit.Close(); err != nil {
			s.opts.Log.Warn("ship", "err", err)
		}
		pods.Close()
	}
	user := serviceaccount.MakeUsername(ns, ServiceAccount(st))
	go func() { _ = pods.FollowAudit(audit, user, s.bus.Publish) }()
	s.shipped.mu.Lock()
	if s.shipped.by == nil {
		s.shipped.by = map[style.Style]*Shipment{}
	}
	s.shipped.by[st] = shipment
	s.shipped.mu.Unlock()
	if _, err := ship.Deploy(ctx, kube, ship.DeployOptions{
		Namespace: ns, Name: st.Operator(), ServiceAccount: ServiceAccount(st), Image: img.Ref,
		Replicas: o.Replicas, Args: o.Args, EchoImage: s.cluster.Image(),
		APIServerHost: host, APIServerPort: APIServerPort,
		Labels: map[string]string{world.LabelShipped: string(st)},
	}); err != nil {
		return shipment, err
	}
	if err := pods.WaitRunning(ctx, shipRunTimeout); err != nil {
		return shipment, err
	}
	progress(fmt.Sprintf("deployment %s/%s: %d pod(s) running", ns, st.Operator(), o.Replicas))
	return shipment, nil
}

// Unship brings shipped operator st back to this machine, as it ran
// before Ship: its Deployment deleted and its pods gone, the course's
// RoleBinding made again if Ship deleted it, its replicas here started
// again. What Ship granted stays bound (a ClusterRole of rlab's, deleted
// at Stop). Not shipped, it does nothing.
func (s *Sandbox) Unship(ctx context.Context, st style.Style) error {
	sh, ok := s.Shipped(st)
	if !ok {
		return nil
	}
	ns, kube := s.sc.namespace(st), s.admin.Kube()
	fg := metav1.DeletePropagationForeground
	err := kube.AppsV1().Deployments(ns).Delete(ctx, st.Operator(), metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete deployment %s/%s: %w", ns, st.Operator(), err)
	}
	if err := poll.Until(ctx, 200*time.Millisecond, shipRunTimeout, "the shipped operator's pods to go", func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: world.LabelShipped + "=" + string(st)})
		return err == nil && len(pods.Items) == 0, err
	}); err != nil {
		return err
	}
	sh.stop()
	s.shipped.mu.Lock()
	delete(s.shipped.by, st)
	s.shipped.mu.Unlock()
	if sh.unbound {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: RoleName, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccount(st), Namespace: ns}},
		}
		if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bind the course's Role in %s again: %w", ns, err)
		}
	}
	for _, spec := range sh.specs {
		if err := s.ops.super.Add(spec); err != nil {
			return fmt.Errorf("start %s again: %w", st.Source(spec.Replica), err)
		}
	}
	return nil
}

// stopShipments stops following every shipped operator (its Deployment
// goes with the cluster or the namespace).
func (s *Sandbox) stopShipments() error {
	s.shipped.mu.Lock()
	defer s.shipped.mu.Unlock()
	for _, sh := range s.shipped.by {
		sh.stop()
	}
	return nil
}
