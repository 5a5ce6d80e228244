package lessons

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
)

// TestEveryLessonSaysWhatItIsFor: every lesson of the course has its time,
// objectives and notes for the instructor, and its time is at least what
// reading it takes (200 words a minute, a fast reader) plus a minute for
// each step that asks something of the student.
func TestEveryLessonSaysWhatItIsFor(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	words := regexp.MustCompile(`\S+`)
	for _, l := range all {
		n := len(words.FindAllString(l.README, -1))
		acts := 0
		for _, s := range l.Steps {
			n += len(words.FindAllString(s.Text, -1))
			if s.Action != nil {
				acts++
			}
		}
		if floor := int(math.Ceil(float64(n)/200)) + acts; l.Minutes < floor {
			t.Errorf("lesson %d: %d minutes, less than reading %d words and doing %d steps take (%d)", l.Number, l.Minutes, n, acts, floor)
		}
		if len(l.Objectives) < 2 || len(l.Objectives) > 3 {
			t.Errorf("lesson %d: %d objectives, want 2 or 3", l.Number, len(l.Objectives))
		}
		for _, o := range l.Objectives {
			if !strings.HasPrefix(o, "You can ") || !strings.HasSuffix(o, ".") {
				t.Errorf("lesson %d: objective %q: want a sentence beginning \"You can\", which a student checks themselves against", l.Number, o)
			}
		}
		for _, p := range []string{"Point at:", "Waits:", "Mistakes:"} {
			if !strings.Contains(l.Instructor, p) {
				t.Errorf("lesson %d: the instructor's notes have no %q line", l.Number, p)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(l.Instructor), "\n") {
			if !strings.HasPrefix(line, "Point at:") && !strings.HasPrefix(line, "Waits:") && !strings.HasPrefix(line, "Mistakes:") {
				t.Errorf("lesson %d: instructor line %q: want Point at:, Waits: or Mistakes:", l.Number, line)
			}
		}
	}
}

// TestMarkdownHandout: a lesson's handout holds what it is for, its prose
// under its own headings, and every step's command, question and check;
// the instructor's notes only when asked for.
func TestMarkdownHandout(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, instructor := range []bool{false, true} {
		for _, l := range all {
			var b bytes.Buffer
			if err := Markdown(&b, []*Lesson{l}, HandoutOptions{Instructor: instructor}); err != nil {
				t.Fatal(err)
			}
			md := b.String()
			want := []string{fmt.Sprintf("# %d. %s", l.Number, mdText(l.Title)), mdText(l.Summary), mdText(l.Meta()), "## Objectives", "## Reading", "## Steps"}
			for _, o := range l.Objectives {
				want = append(want, mdText(o))
			}
			for _, s := range l.Steps {
				want = append(want, mdText(s.Title))
				if s.Action != nil && s.Action.Kubectl != "" {
					want = append(want, "```sh\n"+strings.TrimRight(s.Action.Kubectl, "\n")+"\n```")
				}
				if s.Predict != nil {
					want = append(want, mdText(s.Predict.Question))
				}
				if s.Check != nil {
					for _, line := range strings.Split(s.Check.Describe(), "\n") {
						want = append(want, mdText(line))
					}
				}
			}
			for _, w := range want {
				if !strings.Contains(md, w) {
					t.Errorf("lesson %d handout: no %q", l.Number, w)
				}
			}
			if strings.Contains(md, "## For the instructor") != instructor {
				t.Errorf("lesson %d handout: instructor's notes %v, want %v", l.Number, !instructor, instructor)
			}
			// The README's own title is the handout's; its sections sit
			// under Reading, one level down.
			if strings.Count(md, "\n# ") > 0 || !strings.HasPrefix(md, "# ") {
				t.Errorf("lesson %d handout: more than one top-level heading", l.Number)
			}
		}
	}
}

// TestMdText: plain text reads the same once Markdown renders it: nothing
// becomes a tag, an emphasis, a heading or a list.
func TestMdText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Deployment echo-<name>", `Deployment echo-\<name>`},
		{"status.ready is <ready>/<replicas>", `status.ready is \<ready>/\<replicas>`},
		{"a * and a_b and [x]", `a \* and a\_b and \[x\]`},
		{"# not a heading\n- not a list\n3. not a number\n> no quote", "\\# not a heading\n\\- not a list\n3\\. not a number\n\\> no quote"},
		{"back\\slash and `tick`", "back\\\\slash and \\`tick\\`"},
	}
	for _, tc := range tests {
		if got := mdText(tc.in); got != tc.want {
			t.Errorf("mdText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestInstructorLabels: a handout in another language says the
// instructor's labels in it; the English keeps them.
func TestInstructorLabels(t *testing.T) {
	tests := []struct {
		lang string
		want []string
		not  string
	}{
		{"en", []string{"- Point at: ", "- Waits: ", "- Mistakes: "}, ""},
		{"vi", []string{"- Chỉ cho lớp thấy: ", "- Thời gian chờ: ", "- Lỗi thường gặp: "}, "Point at:"},
		{"zh", []string{"- 讲解要点：第", "- 等待：", "- 常见错误："}, "Point at:"},
		{"ru", []string{"- Обратите внимание: ", "- Ожидание: ", "- Типичные ошибки: "}, "Mistakes:"},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			ls, err := LoadLang(tt.lang)
			if err != nil {
				t.Fatal(err)
			}
			l, err := Find(ls, 23)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Markdown(&b, []*Lesson{l}, HandoutOptions{Instructor: true}); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in the handout", w)
				}
			}
			if tt.not != "" && strings.Contains(b.String(), tt.not) {
				t.Errorf("%q left in English", tt.not)
			}
		})
	}
}
