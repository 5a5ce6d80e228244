package lessonview

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
)

// The screen's own words (its keys' help, the lesson panel, the lesson
// list, the panes) in the course's languages: words/LANG.json maps each English
// format of Formats to the language's, with the same fmt verbs.

//go:embed words/*.json
var wordFiles embed.FS

// Words are one language's screen words, by English format; nil is
// English.
type Words map[string]string

// WordsFor are lang's screen words: nil for English or a language with no
// file.
func WordsFor(lang string) Words {
	b, err := wordFiles.ReadFile(path.Join("words", lang+".json"))
	if err != nil {
		return nil
	}
	var w Words
	if err := json.Unmarshal(b, &w); err != nil {
		return nil // TestWords holds every file to parse
	}
	return w
}

// T is s in the language, or s.
func (w Words) T(s string) string {
	if t := w[s]; t != "" {
		return t
	}
	return s
}

// F is fmt.Sprintf of format in the language.
func (w Words) F(format string, a ...any) string { return fmt.Sprintf(w.T(format), a...) }

// Formats are every English format the screen prints through Words; each
// language's file translates every one (TestWords).
var Formats = []string{
	// The keys' help (tui/common.KeyMap).
	"more replicas", "fewer replicas", "edit message", "delete Deployment (drift)", "scale Deployment by hand",
	"delete Echo", "create Echo again", "kill leader (crash)", "stop leader gracefully", "fault (focused style)",
	"next pane", "previous pane", "focus pane", "full-width pane", "API requests by verb", "operator log (focused pane)",
	"log: next replica", "timeline: filter style", "timeline: filter kind", "timeline: pause", "timeline: scroll up",
	"timeline: scroll down", "timeline: page up", "timeline: page down", "timeline: oldest", "timeline: follow",
	"help", "quit", "next step", "back", "play step", "lessons", "predict", "open", "close",
	// The help box.
	"Edits apply to the Echo of the same name in all three namespaces at once, so the styles race fairly.",
	"Edits apply to the Echo of the same name in all %d namespaces at once, so the styles race fairly.",
	"? or esc closes this help.",
	// The lesson panel and the lesson line.
	"lesson %d/%d · %s", "lesson %d/%d", "done", "step %d of %d", "… %d more lines (a taller terminal shows them)",
	`in another terminal (after eval "$(rlab env)")`, "press %s on this screen, or %s:", "press %s on this screen",
	"(y: your prediction, before you act)", "you said: %s (y changes it)",
	"playing… autoplay performs this step's action", "lesson done — l for the next lesson",
	"nothing to check in this step: n goes on", "passed — n for the next step: ", "waiting for: ", "hint: ",
	"you said: %s · measured: %s", "right", "not quite: the answer is %s",
	// What the session says of itself.
	"the sandbox to start: every style's Echo %s ready, the Go styles led", "starting: ",
	"the sandbox is still starting", "nothing to play in this step", "saving progress: ",
	// The status line while the start-up goes on behind the screen (tui),
	// with sim/sandbox's Next* words.
	"start-up failed: ", "%s quits", "%s starting", "replica %s starting",
	"the operators; the apiserver's post-start hooks, then kube-controller-manager (no pods before it)",
	"the apiserver's post-start hooks, then kube-controller-manager (no pods before it)",
	"the Nodes untainted, the controllers healthy", "the operators",
	"resetting the sandbox for lesson %d",
	// The text guide (rlab lesson start N --text).
	"Lesson %d: %s",
	"Commands: %s next · %s back (on the first step: again) · %s play it for me · %s start again from a clean sandbox · %s quit (then Enter)",
	"Waiting for the sandbox: every style's sample Echo ready, the Go styles led…",
	"Lesson %d done. The sandbox stays up: %s (or end of input) leaves and stops it.",
	"── step %d of %d: %s", `In another terminal (after eval "$(rlab env)"):`, "(Enter to go on)", "waiting for:",
	"%s tries the step again, %s skips it", "(Enter for the next step)", "hint:", "passed already: Enter for the next step",
	"played; checking", "%s next · %s back · %s play · %s start again · %s quit", "Predict before you act: %s",
	"(type the number of your answer, then Enter)", "you said: %s (another number changes it until the check passes)",
	"answer with a number from 1 to %d", "passed already: a prediction comes before the act",
	// The screen's action prompts and what they did (tui/controls.go).
	"message: ", "scale Deployment %s by hand (all styles) to: ", "deleted Deployment %s by hand (all styles)", "deleted Echo/%s (all styles; GC removes its Deployment)", "created Echo/%s ×%d %q (all styles)", "fault at %s (stale:2s, conflict, crash, … or off): ", "Echo/%s replicas → %d (all styles)", "%s is your own operator: rlab cannot tell its leader; kill a replica by hand (its pid is in its pane)", "the shell loop has no leader: one replica, no election (focus a Go style with tab)", "stopped (SIGTERM) the leader of %s", "stopped (SIGTERM) leader %s of %s", "killed (SIGKILL) the leader of %s", "killed (SIGKILL) leader %s of %s", "no cluster in a replay: actions are off", "enter applies · esc cancels",
	// The timeline's title and the filters not named after a trace kind
	// (tui/timeline).
	"timeline · %s · %s", "all styles", " · paused (+%d new)", "no api", "all kinds", "rlab acts",
	// The screen's prediction prompt (tui/lesson.go).
	"this step asks no question", "the step passed already: a prediction comes before the act",
	"✓ you said: %s — now act, and see what the check measures", "your prediction, 1 to %d: ",
	"Bringing the sandbox back to where lesson %d starts…", "progress kept: rlab lesson start %d resumes here",
	// rlab lesson list.
	"after %s", "~%d min", "%s only", "rlab lesson start N begins (or resumes) lesson N; rlab lesson show N prints it.",
	// The lesson list.
	"open lesson: ", "choose", "number", "%d steps", "1 step", "← now", "lessons · %d", " · %d-%d shown",
	// The panes. (tui/pane, then the pane strip and the top bar in tui.)
	"now", "%s ago", "1 transition", "%d transitions", "Echoes …", "Echoes ", "%d ready", "pods %d/%d ready",
	"%d Echoes converged in %s", "queue ", " depth %d", " · adds %d · retries %d", "waiting for the first poll",
	"next poll in ", "polling now", " · every %s", " req", "  … %d more", "a new kubectl per call: no shared limiter",
	"client limit ", "none", " (server APF only)", "reconciles ", "running …", "%d running …", "error: ", "cause: ",
	"leader: ", " (%d replicas, no election: all act)", " (1 replica, no election)", "%s frozen",
	"%s ✝ holds a dead lease", "%s down", "%s waiting", "no Lease yet", "released", "%.1fs left", "expired %s ago",
	"replica %s pid %d frozen", "replica %s pid %d · restarts %d", "replica %s down", "drift: none yet", "drift: %s",
	" · not repaired, since %s", "drift repaired in ", "%s changed owners %d×", " (last %s → %s)", "%s not found",
	"no Deployment yet", "no Deployment", " stale: status of gen %d, spec gen %d", "deleting", " · waits for %s",
	"creating", " waiting for pods %d/%d", " pods ready", ", status not written yet", " converged in ", " · edit ",
	" · created in ", "✕ %d more collected by GC", "✕ %s collected by GC", "orphan", " · %d old RS", "%d starting",
	"%d terminating", "no trace of its own: seen from its proxy and the cluster",
	"no trace of its own: seen from outside", "no own trace: seen from outside", "watches", "polls: no watch",
	"no request yet", "  … %d more resources", "watch events ", "  none delivered", "unreadable", "  last ", "writes ",
	" · denied %d", "denied %d (403)", ": not in its Role", "replica %s: not started yet",
	"Lease: none (no election seen)", "no Lease: %d replicas, all act", "expired", "tab/1-%d switch · f full width",
	"not found (%s creates it)", "not seen yet",
	// The start-up view (tui/startup, its title from cmd/rlab/up.go).
	"starting the sandbox · %s · state in %s", "lesson %d: %s", "start-up failed after %s", "press any key to exit",
	"interrupted: stopping what was started …", "starting",
	"building the control plane (first run only; about 5 minutes on 2 cores)",
	"Echo hello → 2/2 in every style (the shell loop polls)", "total %s", "control-plane build output",
	"%s stops and cleans up",
	// The start-up phases it shows: sim/cluster's steps, the launch's and
	// sim/sandbox's, the last two with their varying part
	// (startup.PhaseFormats). "apiserver+etcd" is names only: kept.
	"control plane installed", "connect", "echo crd", "crds", "gc watches echo", "nodes ready", "node ready",
	"apiserver healthy", "controllers", "nodes untainted", "healthy", "container engine", "node image", "kind cluster",
	"operators started", "namespaces %s*", "sample echo %s",
	// A terminal too small for the screen (tui/view.go).
	"rlab needs a terminal of at least %dx%d; this one is %dx%d.", "Enlarge the terminal (or make the font smaller).",
	"%s quits.",
}
