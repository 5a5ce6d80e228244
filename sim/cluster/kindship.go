package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
)

// An operator shipped into a kind cluster (sim/ship) runs as a pod: its
// image is loaded into the node, it reaches the apiserver at the node's
// address, and its requests are read from the apiserver's audit log.

// auditNodeDir is where the node keeps the audit policy (mounted from this
// machine) and the log; the apiserver's static pod mounts it.
const auditNodeDir = "/etc/kubernetes/rlab-audit"

// AuditLogPath is the apiserver's audit log inside the node.
const AuditLogPath = auditNodeDir + "/log/audit.log"

// auditPolicy logs, once each as it completes, the requests of every
// ServiceAccount but kube-system's (the controllers'): those of an operator
// running in a pod. Metadata is enough to count them (verb, resource,
// object, code, the pod's address); no object bodies are written.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: None
  userGroups: ["system:serviceaccounts:kube-system"]
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`

// auditPatch turns the audit log on (kubeadm v1beta4, which kind merges
// with its own extraArgs).
const auditPatch = `kind: ClusterConfiguration
apiServer:
  extraArgs:
  - name: audit-policy-file
    value: ` + auditNodeDir + `/policy.yaml
  - name: audit-log-path
    value: ` + AuditLogPath + `
  - name: audit-log-maxsize
    value: "200"
  extraVolumes:
  - name: rlab-audit
    hostPath: ` + auditNodeDir + `
    mountPath: ` + auditNodeDir + `
    pathType: DirectoryOrCreate
`

// LoadImage loads an image archive (docker save's format) into the
// containerd of every node, as `kind load image-archive` does.
func (k *Kind) LoadImage(archive func() (io.ReadCloser, error)) error {
	nodes, err := k.provider.ListInternalNodes(k.name)
	if err != nil {
		return fmt.Errorf("nodes of %s: %w", k.name, err)
	}
	if len(nodes) == 0 {
		return fmt.Errorf("kind cluster %s has no node", k.name)
	}
	for _, n := range nodes {
		r, err := archive()
		if err != nil {
			return err
		}
		err = nodeutils.LoadImageArchive(n, r)
		r.Close()
		if err != nil {
			return fmt.Errorf("load the image into node %s: %w", n.String(), err)
		}
	}
	return nil
}

// AuditLog follows the apiserver's audit log from its first line until ctx
// ends or it is closed: JSON lines, one per request (auditPolicy). Close
// ends the tail inside the node too, which outlives a killed docker exec.
func (k *Kind) AuditLog(ctx context.Context) (io.ReadCloser, error) {
	nodes, err := k.provider.ListInternalNodes(k.name)
	if err != nil {
		return nil, fmt.Errorf("nodes of %s: %w", k.name, err)
	}
	for _, n := range nodes {
		role, err := n.Role()
		if err != nil || role != "control-plane" {
			continue
		}
		pr, pw := io.Pipe()
		// The shell says its pid, which tail then takes over (exec).
		cmd := n.CommandContext(ctx, "sh", "-c", "echo $$; exec tail -n +1 -F "+AuditLogPath).SetStdout(pw)
		go func() { pw.CloseWithError(cmd.Run()) }()
		br := bufio.NewReader(pr)
		pid, err := br.ReadString('\n')
		if err != nil {
			pr.Close()
			return nil, fmt.Errorf("follow the audit log in node %s: %w", n.String(), err)
		}
		return &nodeTail{Reader: br, pipe: pr, node: n, pid: strings.TrimSpace(pid)}, nil
	}
	return nil, errors.New("kind cluster " + k.name + " has no control-plane node")
}

// nodeTail is a tail running inside a node, read through docker exec.
type nodeTail struct {
	io.Reader
	pipe *io.PipeReader
	node nodes.Node
	pid  string
}

// Close kills the tail in the node and stops reading.
func (t *nodeTail) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := t.node.CommandContext(ctx, "kill", t.pid).Run()
	t.pipe.Close()
	if err != nil {
		return fmt.Errorf("stop the audit log's tail (pid %s) in node %s: %w", t.pid, t.node.String(), err)
	}
	return nil
}

// APIServerHost is the apiserver's address as a pod reaches it: the
// control-plane node's, on kind's network. The offline node has no
// kube-proxy, so the kubernetes Service's ClusterIP leads nowhere; the
// apiserver's certificate names the node's address too.
func (k *Kind) APIServerHost() (string, error) {
	nodes, err := k.provider.ListInternalNodes(k.name)
	if err != nil {
		return "", fmt.Errorf("nodes of %s: %w", k.name, err)
	}
	for _, n := range nodes {
		role, err := n.Role()
		if err != nil || role != "control-plane" {
			continue
		}
		v4, _, err := n.IP()
		if err != nil {
			return "", fmt.Errorf("address of node %s: %w", n.String(), err)
		}
		if net.ParseIP(v4) == nil {
			return "", fmt.Errorf("node %s has no IPv4 address (%q)", n.String(), v4)
		}
		return v4, nil
	}
	return "", errors.New("kind cluster " + k.name + " has no control-plane node")
}
