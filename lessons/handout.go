package lessons

// Handouts: a lesson as something to read away from the screen (rlab
// lesson show, rlab lesson export): what it is for, its prose, and each
// step with its command, its question and what its check waits for.

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// HandoutOptions says what a handout holds besides the lesson.
type HandoutOptions struct {
	// Instructor adds each lesson's notes for the instructor.
	Instructor bool
}

// Meta is the line under a lesson's title: its time, what comes first,
// where it runs. "About 12 minutes · after lessons 5, 6".
func (l *Lesson) Meta() string {
	parts := []string{fmt.Sprintf(l.w(wordMinutes), l.Minutes)}
	switch len(l.Requires) {
	case 0:
	case 1:
		parts = append(parts, fmt.Sprintf(l.w(wordAfterOne), l.RequiresList()))
	default:
		parts = append(parts, fmt.Sprintf(l.w(wordAfter), l.RequiresList()))
	}
	if len(l.Backends) > 0 {
		parts = append(parts, fmt.Sprintf(l.w(wordOnly), strings.Join(l.Backends, " or "), l.Needs))
	}
	return strings.Join(parts, " · ")
}

// Waits is what step i's check waits for, a line per condition, in the
// lesson's language ("" for a step with no check).
func (l *Lesson) Waits(i int) string {
	if c := l.Steps[i].Check; c != nil {
		return c.DescribeIn(l.course)
	}
	return ""
}

// RequiresList is the lessons to do first, "5, 6" ("" for none).
func (l *Lesson) RequiresList() string {
	s := make([]string, len(l.Requires))
	for i, n := range l.Requires {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// headingRE is a Markdown ATX heading at the start of a line.
var headingRE = regexp.MustCompile(`(?m)^(#{1,5}) `)

// prose is the lesson's README without its own title, its headings one
// level down, to sit under the handout's.
func (l *Lesson) prose() string {
	body := l.README
	if strings.HasPrefix(body, "# ") {
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			body = body[i+1:]
		} else {
			body = ""
		}
	}
	// Not inside code blocks: a shell comment is not a heading.
	var out []string
	fenced := false
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced {
			line = headingRE.ReplaceAllString(line, "#$1 ")
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// mdEscaper keeps plain text plain in Markdown: what would start an
// emphasis, a code span, a link or an HTML tag ("echo-<name>") is escaped.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`)

// lineStartRE is what makes a line of plain text a heading, a list item or
// a quote.
var lineStartRE = regexp.MustCompile(`(?m)^(\s*)([#>+-]|[0-9]+[.)])`)

// mdText is plain text (a step's, a check's words) as Markdown that reads
// the same.
func mdText(s string) string {
	s = mdEscaper.Replace(strings.TrimSpace(s))
	return lineStartRE.ReplaceAllStringFunc(s, func(m string) string {
		i := len(m) - len(strings.TrimLeft(m, " \t"))
		if j := len(m) - 1; m[j] == '.' || m[j] == ')' {
			return m[:j] + `\` + m[j:]
		}
		return m[:i] + `\` + m[i:]
	})
}

// Markdown writes lessons as one Markdown handout, a top-level heading
// each.
func Markdown(w io.Writer, ls []*Lesson, o HandoutOptions) error {
	var b strings.Builder
	for i, l := range ls {
		if i > 0 {
			b.WriteString("\n---\n\n")
		}
		l.markdown(&b, o)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (l *Lesson) markdown(b *strings.Builder, o HandoutOptions) {
	fmt.Fprintf(b, "# %d. %s\n\n*%s*\n\n%s\n\n", l.Number, mdText(l.Title), mdText(l.Summary), mdText(l.Meta()))
	if len(l.Objectives) > 0 {
		fmt.Fprintf(b, "## %s\n\n", l.w(wordObjectives))
		for _, obj := range l.Objectives {
			fmt.Fprintf(b, "- %s\n", mdText(obj))
		}
		b.WriteString("\n")
	}
	if p := l.prose(); p != "" {
		fmt.Fprintf(b, "## %s\n\n%s\n\n", l.w(wordReading), p)
	}
	fmt.Fprintf(b, "## %s\n\n", l.w(wordSteps))
	for i, s := range l.Steps {
		fmt.Fprintf(b, "### "+l.w(wordStep)+"\n\n%s\n\n", i+1, mdText(s.Title), mdText(s.Text))
		if q := s.Predict; q != nil {
			fmt.Fprintf(b, "**%s** %s\n\n", l.w(wordPredict), mdText(q.Question))
			for j, c := range q.Choices {
				fmt.Fprintf(b, "%d. %s\n", j+1, mdText(c))
			}
			b.WriteString("\n")
		}
		if a := s.Action; a != nil {
			if a.Kubectl != "" {
				fmt.Fprintf(b, "**%s**\n\n```sh\n%s\n```\n\n", l.w(wordType), strings.TrimRight(a.Kubectl, "\n"))
			}
			if a.Key != "" {
				fmt.Fprintf(b, l.w(wordPress)+"\n\n", "`"+a.Key+"`")
			}
			if a.Note != "" {
				fmt.Fprintf(b, "**%s** %s\n\n", l.w(wordDo), mdText(a.Note))
			}
		}
		if c := s.Check; c != nil {
			within := c.Within
			if within == 0 {
				within = DefaultWithin
			}
			fmt.Fprintf(b, l.w(wordWaits)+"\n\n", within)
			for _, line := range strings.Split(l.Waits(i), "\n") {
				fmt.Fprintf(b, "- %s\n", mdText(line))
			}
			b.WriteString("\n")
		}
		if s.Hint != "" {
			fmt.Fprintf(b, "**%s** %s\n\n", l.w(wordIfNot), mdText(s.Hint))
		}
	}
	if o.Instructor && l.Instructor != "" {
		fmt.Fprintf(b, "## %s\n\n", l.w(wordInstructor))
		for _, line := range strings.Split(strings.TrimSpace(l.Instructor), "\n") {
			for _, label := range []string{wordPointAt, wordWaitsLabel, wordMistakes} {
				if rest, ok := strings.CutPrefix(line, label); ok {
					said := l.w(label)
					if strings.HasSuffix(said, "：") { // a full-width colon has its space
						rest = strings.TrimLeft(rest, " ")
					}
					line = said + rest
					break
				}
			}
			fmt.Fprintf(b, "- %s\n", mdText(line))
		}
		b.WriteString("\n")
	}
}

// HTML writes lessons as one HTML page, readable on a screen and printed:
// each lesson starts a page, and code and tables wrap instead of running
// past the margin.
func HTML(w io.Writer, title string, ls []*Lesson, o HandoutOptions) error {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM)) // tables; no raw HTML
	var body bytes.Buffer
	for _, l := range ls {
		var b strings.Builder
		l.markdown(&b, o)
		fmt.Fprintf(&body, "<section class=\"lesson\" id=\"lesson-%d\">\n", l.Number)
		if err := md.Convert([]byte(b.String()), &body); err != nil {
			return fmt.Errorf("lesson %d: %w", l.Number, err)
		}
		body.WriteString("</section>\n")
	}
	lang := English
	if len(ls) > 0 && ls[0].Lang != "" {
		lang = ls[0].Lang
	}
	_, err := fmt.Fprintf(w, htmlPage, lang, html.EscapeString(title), body.String())
	return err
}

const htmlPage = `<!DOCTYPE html>
<html lang="%s">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>
  body { font: 11pt/1.45 system-ui, sans-serif; max-width: 46rem; margin: 1.5rem auto; padding: 0 1rem; color: #111; }
  h1 { font-size: 1.6em; border-bottom: 2px solid #333; padding-bottom: .2em; }
  h2 { font-size: 1.25em; margin-top: 1.6em; }
  h3 { font-size: 1.08em; margin-top: 1.4em; }
  h1 + p em { color: #444; }
  pre, code { font: 9.5pt/1.35 ui-monospace, monospace; }
  pre { background: #f3f3f3; border: 1px solid #ccc; padding: .5em .7em; white-space: pre-wrap; overflow-wrap: anywhere; }
  code { overflow-wrap: anywhere; }
  table { border-collapse: collapse; width: 100%%; table-layout: fixed; }
  th, td { border: 1px solid #bbb; padding: .25em .4em; vertical-align: top; overflow-wrap: anywhere; }
  section.lesson + section.lesson { break-before: page; }
  h2, h3 { break-after: avoid; }
  pre, tr { break-inside: avoid; }
  @page { size: A4; margin: 18mm 16mm; }
  @media print { body { max-width: none; margin: 0; padding: 0; } a { color: inherit; } }
</style>
</head>
<body>
%s</body>
</html>
`
