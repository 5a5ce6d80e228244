package classroom

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// Column is one lesson of the course, as the instructor's tables show it.
type Column struct {
	Number, Steps int
}

// StuckAfter is how long on one step, its check not passing, before the
// board puts a student among those who need help.
const StuckAfter = 3 * time.Minute

// ProgressTable writes one row per student and one column per lesson:
// where each student is and how each lesson went.
func ProgressTable(w io.Writer, reps []Report, course []Column) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	head := []string{"STUDENT", "NOW"}
	for _, c := range course {
		head = append(head, fmt.Sprint(c.Number))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range reps {
		row := []string{r.Student, nowCell(r)}
		for _, c := range course {
			row = append(row, lessonCell(r.record(c.Number), c.Steps))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("progress table: %w", err)
	}
	_, err := fmt.Fprintln(w, "✓ done, every step by hand · ✓* done, some steps played (a) or skipped (n) · 3/7 on step 3 of 7 · - not started")
	return err
}

// record is lesson n's record, nil if the student never started it.
func (r Report) record(n int) *LessonRecord {
	for i := range r.Lessons {
		if r.Lessons[i].Number == n {
			return &r.Lessons[i]
		}
	}
	return nil
}

func nowCell(r Report) string {
	switch {
	case r.Updated.IsZero() && r.Now == nil:
		return "no report yet"
	case !r.Running:
		return "rlab stopped"
	case r.Now == nil:
		return "no lesson open"
	case r.Now.Done:
		return fmt.Sprintf("lesson %d done", r.Now.Lesson)
	}
	return fmt.Sprintf("lesson %d step %d/%d", r.Now.Lesson, r.Now.Step, r.Now.Steps)
}

func lessonCell(l *LessonRecord, steps int) string {
	switch {
	case l == nil:
		return "-"
	case !l.Done:
		return fmt.Sprintf("%d/%d", min(l.Next, steps-1)+1, steps)
	}
	for _, h := range l.How {
		if h != "hand" {
			return "✓*"
		}
	}
	return "✓"
}

// need is how much a student needs help, lower first.
type need int

const (
	needError   need = iota // a step that cannot pass, or a play that failed
	needStuck               // on a step longer than StuckAfter, its check not passing
	needWorking             // on a step, its check not passing yet
	needPassed              // the step passed; the student has not moved on
	needDone                // the lesson is done, or none is open
	needAway                // rlab stopped
	needUnknown             // never reported
)

func needOf(r Report, now time.Time) need {
	switch {
	case r.Updated.IsZero() && r.Now == nil:
		return needUnknown
	case !r.Running:
		return needAway
	case r.Now == nil || r.Now.Done:
		return needDone
	case r.Now.Error != "":
		return needError
	case r.Now.Passed:
		return needPassed
	case now.Sub(r.Now.Since) >= StuckAfter:
		return needStuck
	}
	return needWorking
}

var needWord = map[need]string{
	needError: "ERROR", needStuck: "STUCK", needWorking: "working", needPassed: "passed",
	needDone: "done", needAway: "away", needUnknown: "-",
}

// Board is the projector's screen at now, width columns wide: one row per
// student, those who need help first (an error, then the longest on a step
// whose check is not passing), with the step they are on, the minutes on
// it, and what its check waits for or why it fails.
func Board(reps []Report, now time.Time, width int) string {
	rows := append([]Report(nil), reps...)
	sort.SliceStable(rows, func(i, j int) bool {
		ni, nj := needOf(rows[i], now), needOf(rows[j], now)
		if ni != nj {
			return ni < nj
		}
		if ni <= needPassed { // the longest on their step first
			return rows[i].Now.Since.Before(rows[j].Now.Since)
		}
		return false // student order, as given
	})
	counts := map[need]int{}
	for _, r := range rows {
		counts[needOf(r, now)]++
	}
	var b strings.Builder
	line := func(s string) {
		b.WriteString(strings.TrimRight(ansi.Truncate(s, width, "…"), " "))
		b.WriteByte('\n')
	}
	line(fmt.Sprintf("rlab classroom · %s · %d students · %d need help (%d error, %d stuck over %s)",
		now.Format("15:04:05"), len(rows), counts[needError]+counts[needStuck], counts[needError], counts[needStuck],
		fmtMinutes(StuckAfter)))
	line("")
	var tb strings.Builder
	tw := tabwriter.NewWriter(&tb, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STUDENT\tSTATE\tLESSON · STEP\tON IT\tLAST REASON · CHECK")
	for _, r := range rows {
		n := needOf(r, now)
		where, on, why := "", "", ""
		if p := r.Now; p != nil && n <= needDone {
			where = fmt.Sprintf("%d · %d/%d %s", p.Lesson, p.Step, p.Steps, p.StepTitle)
			if p.Done {
				where = fmt.Sprintf("%d · done", p.Lesson)
			} else {
				on = fmtMinutes(now.Sub(p.Since))
			}
			why = reasonOf(p)
		}
		if n == needAway && r.Now != nil {
			where = fmt.Sprintf("%d · %d/%d (left at)", r.Now.Lesson, r.Now.Step, r.Now.Steps)
		}
		state := needWord[n]
		if n == needDone && r.Now == nil {
			state = "idle" // rlab runs with no lesson open (rlab up, a verify)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Student, state, clip(where, 36), on, oneLine(why))
	}
	_ = tw.Flush()
	for _, l := range strings.Split(strings.TrimRight(tb.String(), "\n"), "\n") {
		line(l)
	}
	line("")
	// The legend wraps between its items rather than losing its end.
	legend := []string{"ERROR: the step cannot pass or its play failed", "STUCK: over " + fmtMinutes(StuckAfter) + " on a step not passing",
		"idle: no lesson open", "away: their rlab stopped", "-: no report yet"}
	cur := ""
	for _, item := range legend {
		if cur != "" && ansi.StringWidth(cur+" · "+item) > width {
			line(cur)
			cur = ""
		}
		if cur != "" {
			cur += " · "
		}
		cur += item
	}
	line(cur)
	return b.String()
}

// reasonOf is what a student's row says of their check: its last reason,
// then what it waits for (its first condition), so that the instructor
// sees why first and which check as well; a narrow board cuts the check.
func reasonOf(p *Position) string {
	check := strings.SplitN(p.Waits, "\n", 2)[0]
	switch {
	case p.Error != "":
		return p.Error
	case p.Done:
		return ""
	case p.Passed:
		return "passed: " + p.Reason
	case p.Reason != "" && check != "" && !strings.Contains(p.Reason, check):
		return p.Reason + " · " + check
	case p.Reason != "":
		return p.Reason
	case check != "":
		return "waiting for " + check
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string { return ansi.Truncate(s, n, "…") }

// fmtMinutes is a time on a step as a projector shows it: "45s", "7m".
func fmtMinutes(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	}
	return fmt.Sprintf("%dm", int(d.Minutes()))
}
