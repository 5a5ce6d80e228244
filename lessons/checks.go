package lessons

import (
	"fmt"
	"strings"

	"github.com/kkloud/rlab/operators/echo"
)

// who names the styles a condition is about, for a sentence.
func who(a Args) string {
	switch st := a.Str("style"); st {
	case StyleAll:
		return "every style"
	case StyleGo:
		return "both Go styles"
	default:
		return st
	}
}

// condWords say what each condition waits for, in a sentence a student
// reads on the lesson panel.
var condWords = map[string]func(a Args) string{
	"echo_status": func(a Args) string {
		return fmt.Sprintf("%s: Echo %s reports ready %s", who(a), a.Str("name"), a.Str("ready"))
	},
	"echo_absent": func(a Args) string { return fmt.Sprintf("%s: Echo %s is gone", who(a), a.Str("name")) },
	"deployment_replicas": func(a Args) string {
		n, _ := a.Int("replicas")
		s := fmt.Sprintf("%s: Deployment %s asks for %d replicas", who(a), echo.DeploymentName(a.Str("name")), n)
		if a.Bool("ready") {
			s += ", all ready"
		}
		return s
	},
	"deployment_absent": func(a Args) string {
		return fmt.Sprintf("%s: Deployment %s is gone", who(a), echo.DeploymentName(a.Str("name")))
	},
	"owned": func(a Args) string {
		return fmt.Sprintf("%s: Deployment %s is controlled by Echo %s", who(a), echo.DeploymentName(a.Str("name")), a.Str("name"))
	},
	"orphaned": func(a Args) string {
		return fmt.Sprintf("%s: Deployment %s is left running with no owner", who(a), echo.DeploymentName(a.Str("name")))
	},
	"converged": func(a Args) string {
		return fmt.Sprintf("%s: the Deployment and status of Echo %s catch up with its spec", who(a), a.Str("name"))
	},
	"noticed": func(a Args) string {
		return fmt.Sprintf("%s: a reconcile of Echo %s after the edit", who(a), a.Str("name"))
	},
	"drift_repaired": func(a Args) string {
		what := a.Str("what")
		if what == "" {
			what = "drift"
		}
		return fmt.Sprintf("%s: the operator repairs the %s of Deployment %s", who(a), what, echo.DeploymentName(a.Str("name")))
	},
	"gc_collected": func(a Args) string {
		return fmt.Sprintf("%s: the garbage collector removes Deployment %s", who(a), echo.DeploymentName(a.Str("name")))
	},
	"new_leader": func(a Args) string {
		s := fmt.Sprintf("%s: another replica takes the Lease", who(a))
		if d := a.Dur("min"); d > 0 {
			s += fmt.Sprintf(", not before %s", d)
		}
		if d := a.Dur("max"); d > 0 {
			s += fmt.Sprintf(", within %s", d)
		}
		return s
	},
	"leader_lost":      func(a Args) string { return fmt.Sprintf("%s: the leader loses the Lease", who(a)) },
	"replicas_running": func(a Args) string { return fmt.Sprintf("%s: every replica runs", who(a)) },
	"replicas_paused":  func(a Args) string { return fmt.Sprintf("%s: every replica is frozen", who(a)) },
	"restarted": func(a Args) string {
		return fmt.Sprintf("%s: every replica restarted and the leader reconciled", who(a))
	},
	"api_requests": func(a Args) string {
		what := "API requests"
		if v := a.List("verbs"); len(v) > 0 {
			what = strings.Join(v, "/") + " requests"
		}
		if r := a.Str("resource"); r != "" {
			what += " on " + r
		}
		if c, ok := a.Int("code"); ok {
			what += fmt.Sprintf(" answered %d", c)
		}
		_, want := bounds(a, 0)
		if d := a.Dur("over"); d > 0 {
			what += fmt.Sprintf(" over %s", d)
		}
		return fmt.Sprintf("%s: %s%s", who(a), what, want)
	},
	"reconciles_after_edit": func(a Args) string {
		_, want := bounds(a, 0)
		return fmt.Sprintf("%s: reconciles of Echo %s%s", who(a), a.Str("name"), want)
	},
	"coalesced": func(a Args) string {
		return fmt.Sprintf("%s: one reconcile answers several queued events for Echo %s", who(a), a.Str("name"))
	},
	"retries": func(a Args) string {
		n, _ := a.Int("min")
		return fmt.Sprintf("%s: at least %d retries of Echo %s, each after a longer backoff", who(a), n, a.Str("name"))
	},
	"flapping": func(a Args) string {
		n, _ := a.Int("min")
		return fmt.Sprintf("%s: the message of Deployment %s changed and put back at least %d times", who(a), echo.DeploymentName(a.Str("name")), n)
	},
	"deployment_message": func(a Args) string {
		return fmt.Sprintf("%s: Deployment %s carries Echo %s's message", who(a), echo.DeploymentName(a.Str("name")), a.Str("name"))
	},
	"has_finalizer": func(a Args) string {
		return fmt.Sprintf("%s: Echo %s carries the finalizer %s", who(a), a.Str("name"), echo.Finalizer)
	},
	"registered": func(a Args) string {
		return fmt.Sprintf("%s: ConfigMap %s lists Echo %s", who(a), echo.RegistryName, a.Str("name"))
	},
	"unregistered": func(a Args) string {
		return fmt.Sprintf("%s: ConfigMap %s no longer lists Echo %s", who(a), echo.RegistryName, a.Str("name"))
	},
	"echo_deleting": func(a Args) string {
		return fmt.Sprintf("%s: Echo %s is being deleted, held by a finalizer", who(a), a.Str("name"))
	},
	"finalized": func(a Args) string {
		return fmt.Sprintf("%s: the operator cleans up after Echo %s and it goes", who(a), a.Str("name"))
	},
}
