package main

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kkloud/rlab/lessons"
)

// layoutProbe is added to a copy of the handout for the test alone: laid out
// by the browser, it lists what runs past the right edge of the page (an
// element's box, or the content of a block that wraps text) and puts the
// page's text where --dump-dom prints it.
const layoutProbe = `<script>
(function () {
  const W = document.documentElement.clientWidth, over = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect(), tag = el.tagName.toLowerCase();
    const block = ['pre', 'td', 'th', 'p', 'li', 'table', 'section'].includes(tag);
    if (r.width > 0 && (r.right > W + 1 || (block && el.scrollWidth > el.clientWidth + 1))) {
      over.push(tag + ': ' + el.textContent.slice(0, 60));
    }
  }
  if (document.documentElement.scrollWidth > W + 1) over.push('page: ' + document.documentElement.scrollWidth + 'px wide');
  const out = document.createElement('pre');
  out.id = 'rlab-check';
  out.textContent = JSON.stringify({width: W, over: over, text: document.body.innerText});
  document.body.appendChild(out);
})();
</script>
</body>`

// a4Text is the width of an A4 page's text in CSS pixels (210 mm less the
// handout's 16 mm margins, at 96 px to the inch).
const a4Text = "673"

// TestLessonExport writes the course's handouts with rlab lesson export and
// reads the HTML in a real headless browser (Debian's chromium, which
// .ci/run installs), in every language of the course: at the width of a
// printed page nothing runs past the edge and every step's command is on
// the page; a screenshot and a PDF print are made of it.
func TestLessonExport(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the handout test reads the HTML in chromium: apt-get install chromium (.ci/run does): %v", err)
	}
	if out, err := exec.Command("fc-list", ":lang=zh").Output(); err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("the Chinese handout needs a font with Chinese glyphs: apt-get install fonts-wqy-microhei (.ci/run does): %v", err)
	}
	dir := t.TempDir()
	rlab := func(args ...string) (string, error) {
		out, err := exec.CommandContext(t.Context(), rlabBin, append([]string{"lesson"}, args...)...).CombinedOutput()
		return string(out), err
	}
	en, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"export", "--format", "markdown", "--out", dir},
		{"export", "--format", "html", "--out", dir, "21"},
	} {
		if out, err := rlab(args...); err != nil {
			t.Fatalf("rlab lesson %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, l := range en {
		if _, err := os.Stat(filepath.Join(dir, l.Dir+".md")); err != nil {
			t.Errorf("lesson %d: no Markdown handout: %v", l.Number, err)
		}
	}
	// Nothing is lost: a handout that exists stays as it is.
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"export", "--format", "html", "--out", dir, "21"}, "21-chaos.html exists already"},
		{[]string{"export", "--format", "pdf", "--out", dir}, `--format "pdf": want markdown or html`},
		{[]string{"export", "--lang", "de", "--out", dir}, `--lang "de": the course is in en, vi, zh, ru`},
	} {
		if out, err := rlab(tc.args...); err == nil || !strings.Contains(out, tc.err) {
			t.Errorf("rlab lesson %s: %v, %q; want an error saying %q", strings.Join(tc.args, " "), err, out, tc.err)
		}
	}
	for _, lang := range lessons.Languages {
		t.Run(lang, func(t *testing.T) {
			all, err := lessons.LoadLang(lang)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(dir, lang)
			if out, err := rlab("export", "--lang", lang, "--format", "html", "--course", "--instructor", "--out", dir); err != nil {
				t.Fatalf("rlab lesson export --lang %s: %v\n%s", lang, err, out)
			}
			name := "rlab-course.html"
			if lang != lessons.English {
				name = "rlab-course." + lang + ".html"
			}
			readHandout(t, browser, filepath.Join(dir, name), lang, all)
		})
	}
}

// readHandout reads the course's handout in lang in chromium: laid out at
// the width of a printed page, printed, and a screenshot taken.
func readHandout(t *testing.T, browser, course, lang string, all []*lessons.Lesson) {
	page, err := os.ReadFile(course)
	if err != nil {
		t.Fatal(err)
	}
	if want := `<html lang="` + lang + `">`; !bytes.Contains(page, []byte(want)) {
		t.Errorf("the page does not say %s", want)
	}
	dir := filepath.Dir(course)
	probe := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probe, bytes.Replace(page, []byte("</body>"), []byte(layoutProbe), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	chrome := func(args ...string) []byte {
		t.Helper()
		args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
			"--window-size=" + a4Text + ",1000"}, args...)
		cmd := exec.CommandContext(t.Context(), browser, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	dom := chrome("--virtual-time-budget=5000", "--dump-dom", "file://"+probe)
	m := regexp.MustCompile(`(?s)<pre id="rlab-check">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the measuring script left no result in the page (%d bytes of DOM)", len(dom))
	}
	var got struct {
		Width int
		Over  []string
		Text  string
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
		t.Fatal(err)
	}
	if got.Width < 600 || got.Width > 700 {
		t.Errorf("laid out %dpx wide, want about %spx", got.Width, a4Text)
	}
	for _, o := range got.Over {
		t.Errorf("runs past the edge of a %dpx page: %s", got.Width, o)
	}
	space := regexp.MustCompile(`\s+`)
	text := space.ReplaceAllString(got.Text, " ")
	commands := 0
	for _, l := range all {
		for _, want := range append([]string{l.Title, l.Meta()}, l.Objectives...) {
			if !strings.Contains(text, space.ReplaceAllString(want, " ")) {
				t.Errorf("lesson %d: %q is not on the page", l.Number, want)
			}
		}
		for i, s := range l.Steps {
			if s.Check != nil {
				for _, line := range strings.Split(l.Waits(i), "\n") {
					if !strings.Contains(text, space.ReplaceAllString(line, " ")) {
						t.Errorf("lesson %d step %d: what the check waits for, %q, is not on the page", l.Number, i+1, line)
					}
				}
			}
			if s.Action == nil || s.Action.Kubectl == "" {
				continue
			}
			for _, line := range strings.Split(s.Action.Kubectl, "\n") {
				if line = strings.TrimSpace(line); line != "" && !strings.Contains(text, space.ReplaceAllString(line, " ")) {
					t.Errorf("lesson %d step %d: command line %q is not on the page", l.Number, i+1, line)
				}
			}
			commands++
		}
	}

	shot := filepath.Join(dir, "course.png")
	chrome("--screenshot="+shot, "file://"+course)
	if png, err := os.ReadFile(shot); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 20000 {
		t.Errorf("screenshot %s: %d bytes, %v; want a PNG of the first page", shot, len(png), err)
	}
	pdf := filepath.Join(dir, "course.pdf")
	chrome("--no-pdf-header-footer", "--print-to-pdf="+pdf, "file://"+course)
	doc, err := os.ReadFile(pdf)
	if err != nil || !bytes.HasPrefix(doc, []byte("%PDF")) {
		t.Fatalf("print to PDF: %v", err)
	}
	pages := len(regexp.MustCompile(`/Type\s*/Page[^s]`).FindAll(doc, -1))
	if pages < len(all) {
		t.Errorf("the course printed on %d pages, want at least one a lesson (%d)", pages, len(all))
	}
	if keep := os.Getenv("RLAB_HANDOUT_DIR"); keep != "" { // to look at them
		for _, f := range []string{shot, pdf, course} {
			if b, err := os.ReadFile(f); err == nil {
				_ = os.WriteFile(filepath.Join(keep, lang+"-"+filepath.Base(f)), b, 0o644)
			}
		}
	}
	t.Logf("%s course handout: %d bytes of HTML, %d lessons, %d commands on the page, printed on %d A4 pages (%d bytes of PDF)",
		lang, len(page), len(all), commands, pages, len(doc))
}
