package common

import (
	"fmt"
	"time"
)

// Dur says a duration the way the panes do: 812ms, 4.1s, 41s, 2m05s.
func Dur(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 100*time.Microsecond:
		return fmt.Sprintf("%dµs", d/time.Microsecond)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Ago says how long ago in whole seconds ("now", "4s", "2m05s"): what
// changes only once a second needs a redraw only once a second.
func Ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds ago", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm ago", int(d.Hours()), int(d.Minutes())%60)
}

// MS says a duration given in milliseconds.
func MS(ms float64) string { return Dur(time.Duration(ms * float64(time.Millisecond))) }

// Clock is an elapsed time as mm:ss (h:mm:ss past an hour).
func Clock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d.Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// Plural is "1 transition", "2 transitions".
func Plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
