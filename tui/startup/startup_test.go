package startup

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/tui/common"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// TestTUIStartupGolden renders the start-up view's states, ANSI stripped.
func TestTUIStartupGolden(t *testing.T) {
	phases := []Phase{{"apiserver+etcd", 3450 * time.Millisecond}, {"echo crd", 40 * time.Millisecond},
		{"controllers", 10 * time.Millisecond}, {"node ready", 510 * time.Millisecond}}
	tests := []struct {
		name string
		do   func(m *Model)
		at   time.Duration
	}{
		{"first-phase", func(*Model) {}, 1200 * time.Millisecond},
		{"phases", func(m *Model) {
			for _, p := range phases {
				m.AddPhase(p)
			}
			m.AddPhase(Phase{"operators started", 40 * time.Millisecond})
		}, 6 * time.Second},
		{"cold-build", func(m *Model) {
			m.AddBuildLine("control plane v1.36.3 not built yet (kube-apiserver, etcd missing); building it now into /root/.cache/rlab/controlplane/v1.36.3")
			for i := range 20 {
				m.AddBuildLine(fmt.Sprintf("go: downloading k8s.io/module%d v0.36.3", i))
			}
		}, 95 * time.Second},
		{"failed", func(m *Model) {
			m.AddPhase(phases[0])
			m.Notes = append(m.Notes, "cleaned up etcd (pid 4242) left by a previous run")
			m.Fail(errors.New("start sandbox: install CRD: the server could not find the requested resource (post customresourcedefinitions.apiextensions.k8s.io)\n\nEverything started was stopped. Logs are in /home/student/.local/state/rlab/logs"), t0.Add(5*time.Second))
		}, 9 * time.Second},
		{"interrupted", func(m *Model) { m.AddPhase(phases[0]); m.Stopping = true }, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New("starting the sandbox · envtest v1.36.3 · state in /home/student/.local/state/rlab", t0)
			tt.do(m)
			out := m.Render(t0.Add(tt.at), 100, 30, common.NewTheme(true))
			golden.RequireEqual(t, ansi.Strip(out)+"\n")
		})
	}
}

// TestPhaseName: a phase's name through the words, whole or by the
// format it matches, its varying part kept; English and unknown names as
// they are.
func TestPhaseName(t *testing.T) {
	zh, ru := lessonview.WordsFor("zh"), lessonview.WordsFor("ru")
	tests := []struct {
		w          lessonview.Words
		name, want string
	}{
		{zh, "operators started", "各 operator 已启动"},
		{zh, "namespaces rlab-*", "命名空间 rlab-*"},
		{zh, "namespaces *", "命名空间 *"}, // no prefix
		{zh, "sample echo 2/2", "示例 Echo 2/2"},
		{ru, "sample echo 3/3", "пример Echo 3/3"},
		{ru, "control plane installed", "управляющий слой на месте"},
		{zh, "apiserver+etcd", "apiserver+etcd"},   // names only: kept
		{zh, "namespaces rlab", "namespaces rlab"}, // no "*": not the format
		{zh, "a phase to come", "a phase to come"},
		{nil, "namespaces rlab-*", "namespaces rlab-*"},
		{nil, "sample echo 2/2", "sample echo 2/2"},
	}
	for _, tt := range tests {
		if got := PhaseName(tt.w, tt.name); got != tt.want {
			t.Errorf("PhaseName(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	// Each format is one the languages translate (TestWords holds them to).
	for _, f := range PhaseFormats {
		if !slices.Contains(lessonview.Formats, f) {
			t.Errorf("PhaseFormats: %q is not in lessonview.Formats", f)
		}
	}
}

// TestTUIStartupInLanguage renders the start-up view's states in a
// lesson's language: its labels and its phases' names are translated, and
// none of its English labels is left.
func TestTUIStartupInLanguage(t *testing.T) {
	english := []string{"starting", "total", "stops and cleans up", "press any key", "start-up failed", "interrupted",
		"building the control plane", "control-plane build output", "in every style", "operators started",
		"namespaces", "sample echo", "controllers", "echo crd"}
	tests := []struct {
		name, lang string
		do         func(m *Model)
		at         time.Duration
		want       []string
	}{
		{"first-phase", "zh", func(*Model) {}, 1200 * time.Millisecond,
			[]string{"正在启动沙箱 · envtest v1.36.3", "正在启动 … 1.2s", "总计 1.2s", "q 停止并清理"}},
		{"phases", "zh", func(m *Model) {
			for _, n := range []string{"apiserver+etcd", "echo crd", "controllers", "nodes ready", "namespaces rlab-*", "operators started"} {
				m.AddPhase(Phase{n, 40 * time.Millisecond})
			}
		}, 6 * time.Second, []string{"✓ apiserver+etcd", "✓ Echo CRD", "✓ 各 controller", "✓ 各 Node 就绪", "✓ 命名空间 rlab-*",
			"✓ 各 operator 已启动", "每种风格的 Echo hello → 2/2（shell 循环靠轮询）"}},
		{"sample", "zh", func(m *Model) { m.AddPhase(Phase{"sample echo 2/2", time.Second}) }, 6 * time.Second,
			[]string{"✓ 示例 Echo 2/2"}},
		{"cold-build", "zh", func(m *Model) { m.AddBuildLine("go: downloading k8s.io/module1 v0.36.3") }, 95 * time.Second,
			[]string{"正在构建控制平面（仅首次运行；2 核约需 5 分钟）", "控制平面构建输出", "go: downloading k8s.io/module1"}},
		{"failed", "zh", func(m *Model) {
			m.AddPhase(Phase{"control plane installed", time.Second})
			m.Fail(errors.New("start sandbox: boom"), t0.Add(5*time.Second))
		}, 9 * time.Second, []string{"✓ 控制平面已安装", "✗ 启动失败，用时 5.0s", "start sandbox: boom", "按任意键退出"}},
		{"interrupted", "zh", func(m *Model) { m.Stopping = true }, 4 * time.Second, []string{"已中断：正在停止已启动的部分 …"}},
		{"phases", "ru", func(m *Model) {
			m.AddPhase(Phase{"controllers", 10 * time.Millisecond})
			m.AddPhase(Phase{"operators started", 40 * time.Millisecond})
		}, 6 * time.Second, []string{"запуск песочницы · envtest", "✓ контроллеры", "✓ операторы запущены",
			"Echo hello → 2/2 во всех стилях", "всего 6.0s", "q — остановить и прибрать"}},
	}
	for _, tt := range tests {
		t.Run(tt.lang+"/"+tt.name, func(t *testing.T) {
			w := lessonview.WordsFor(tt.lang)
			m := New(w.F("starting the sandbox · %s · state in %s", "envtest v1.36.3", "/home/student/.local/state/rlab"), t0)
			m.Words = w
			tt.do(m)
			out := ansi.Strip(m.Render(t0.Add(tt.at), 100, 30, common.NewTheme(true)))
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("no %q on the view:\n%s", s, out)
				}
			}
			for _, s := range english {
				if strings.Contains(out, s) {
					t.Errorf("English %q left on the view:\n%s", s, out)
				}
			}
		})
	}
}
