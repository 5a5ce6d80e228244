package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kkloud/rlab/sim/feature/classroom"
)

// TestCoursePlan: the course as it is, planned for 30 students on a cluster
// of 3 real Nodes (110 pods, 4 CPU, 16Gi each) as docs/instructor.md says:
// no lesson holds more than lesson 21's 15 pods a student (lesson 11's
// hundred Echoes are scaled to zero), so the class is refused only for the
// pods every lesson needs, with how many fit at once.
func TestCoursePlan(t *testing.T) {
	needs, err := sharedNeeds()
	if err != nil {
		t.Fatal(err)
	}
	// ReadCapacity's reading of Nodes and pods is TestPlan's; this is what
	// it reads of 3 Nodes with 2 pods of 100m already there.
	cap := classroom.Capacity{UsedPods: 2, UsedCPU: resource.MustParse("200m")}
	for i := 1; i <= 3; i++ {
		cap.Nodes = append(cap.Nodes, classroom.Node{Name: fmt.Sprintf("n%d", i), Pods: 110,
			CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi")})
	}
	p := classroom.NewPlan(cap, needs, classroom.QuotaFor(needs), 30)
	var out bytes.Buffer
	if err := p.Write(&out, cap); err != nil {
		t.Fatal(err)
	}
	t.Logf("rlab classroom prepare --students 30 on 3 Nodes of 110 pods, 4 CPU, 16Gi:\n%s", &out)
	for _, n := range needs {
		if pods := 3 * n.Pods; pods > 15 {
			t.Errorf("lesson %d holds %d pods a student, want at most 15 (lesson 21's)", n.Lesson, pods)
		}
	}
	for _, w := range []string{
		"11 What a hundred Echoes cost             12              360     27: NO",
		"21 Chaos                                  15              450     21: NO",
		"30 students do not fit: lesson 1 (27 at once)",
		"give the cluster 2 more Nodes like n1",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("no %q in\n%s", w, &out)
		}
	}
}
