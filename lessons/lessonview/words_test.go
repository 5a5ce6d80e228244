package lessonview

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// fmtVerb is one fmt verb with its flags, width, precision and argument
// index; "%%" is matched too, and is no verb.
var fmtVerb = regexp.MustCompile(`%[-+# 0]*(?:\[\d+\])?(?:\*|\d+)?(?:\.(?:\[\d+\])?(?:\*|\d+)?)?(?:\[\d+\])?([a-zA-Z%])`)

// verbs are the fmt verbs of format in order, as letters: "%[2]v" is "v".
func verbs(format string) []string {
	var out []string
	for _, m := range fmtVerb.FindAllStringSubmatch(format, -1) {
		if m[1] != "%" {
			out = append(out, m[1])
		}
	}
	return out
}

// wordless: format is only symbols, digits, spaces and fmt verbs, which a
// translation may keep as they are.
func wordless(format string) bool {
	return !strings.ContainsFunc(fmtVerb.ReplaceAllString(format, ""), unicode.IsLetter)
}

// edgeSpace is the white space format begins and ends with, which the
// screen joins other text to.
func edgeSpace(format string) (lead, trail string) {
	lead = format[:len(format)-len(strings.TrimLeftFunc(format, unicode.IsSpace))]
	trail = format[len(strings.TrimRightFunc(format, unicode.IsSpace)):]
	return lead, trail
}

// TestWords: each language's file parses and translates every format of
// Formats, and nothing else, with the same fmt verbs in the same order.
func TestWords(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Formats {
		if seen[f] {
			t.Errorf("Formats: %q is listed twice", f)
		}
		seen[f] = true
	}
	for _, lang := range []string{"vi", "zh", "ru"} {
		t.Run(lang, func(t *testing.T) {
			w := WordsFor(lang)
			if w == nil {
				t.Fatalf("%s: WordsFor(%q) is nil: words/%s.json is missing, empty or does not parse", lang, lang, lang)
			}
			for _, f := range Formats {
				tr, ok := w[f]
				switch {
				case !ok:
					t.Errorf("%s: no translation of %q", lang, f)
					continue
				case tr == "":
					t.Errorf("%s: the translation of %q is empty", lang, f)
					continue
				case tr == f && !wordless(f):
					t.Errorf("%s: %q is not translated (the value is the key)", lang, f)
				}
				if want, got := verbs(f), verbs(tr); !slices.Equal(want, got) {
					t.Errorf("%s: %q has fmt verbs %v, its translation %q has %v", lang, f, want, tr, got)
				}
				lead, trail := edgeSpace(f)
				if l, tl := edgeSpace(tr); l != lead || tl != trail {
					t.Errorf("%s: %q begins with %q and ends with %q, its translation %q with %q and %q", lang, f, lead, trail, tr, l, tl)
				}
			}
			var extra []string
			for k := range w {
				if !seen[k] {
					extra = append(extra, k)
				}
			}
			slices.Sort(extra)
			for _, k := range extra {
				t.Errorf("%s: %q is not in Formats (a stale or mistyped key)", lang, k)
			}
		})
	}
}

// TestVerbs: the verbs the test compares.
func TestVerbs(t *testing.T) {
	for _, c := range []struct {
		format string
		want   []string
	}{
		{"lesson %d/%d · %s", []string{"d", "d", "s"}},
		{"%[2]v then %-5.2f and %x", []string{"v", "f", "x"}},
		{"100%% done", nil},
		{"no verbs", nil},
	} {
		if got := verbs(c.format); !slices.Equal(got, c.want) {
			t.Errorf("verbs(%q) = %v, want %v", c.format, got, c.want)
		}
	}
	for format, want := range map[string]bool{"%d-%d": true, " · %d-%d": true, "← now": false, "%d steps": false} {
		if got := wordless(format); got != want {
			t.Errorf("wordless(%q) = %v, want %v", format, got, want)
		}
	}
}
