package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/lessons"
)

func newLessonShowCmd() *cobra.Command {
	var (
		o    lessons.HandoutOptions
		lang langFlag
	)
	cmd := &cobra.Command{
		Use:   "show N",
		Short: "Print a lesson as text: what it is for, its prose, and each step with its command and what its check waits for",
		Example: `  rlab lesson show 7
  rlab lesson show 7 --instructor | less`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, chosen, err := chooseLessons(args, false, lang)
			if err != nil {
				return err
			}
			return lessons.Markdown(cmd.OutOrStdout(), chosen, o)
		},
	}
	cmd.Flags().BoolVar(&o.Instructor, "instructor", false, "add the notes for the instructor (what to point at, the waits, the usual mistakes)")
	lang.register(cmd.Flags())
	return cmd
}

// handoutFormats are export's formats, by the extension of their files.
var handoutFormats = map[string]string{"markdown": ".md", "html": ".html"}

func newLessonExportCmd() *cobra.Command {
	var (
		o      lessons.HandoutOptions
		lang   langFlag
		format string
		out    string
		course bool
	)
	cmd := &cobra.Command{
		Use:   "export [N...]",
		Short: "Write lessons as handouts, Markdown or HTML (printable): one file per lesson, or one for the course",
		Long: `Write a handout of each lesson given (every lesson when none is) into the
folder --out: NN-slug.md or NN-slug.html, with the lesson's objectives,
time and prerequisites, its prose, and each step with its command, its
question and what its check waits for. With --course, one file instead,
rlab-course.md or rlab-course.html. The HTML prints on A4, a lesson a page
on; it needs nothing from the network. Files that exist are not overwritten.`,
		Example: `  rlab lesson export --format html --out handouts
  rlab lesson export --format markdown --course 1 2 3
  rlab lesson export --format html --instructor 21`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ext, ok := handoutFormats[format]
			if !ok {
				return fmt.Errorf("--format %q: want markdown or html", format)
			}
			_, chosen, err := chooseLessons(args, len(args) == 0, lang)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			write := func(name, title string, ls []*lessons.Lesson) error {
				var b bytes.Buffer
				var err error
				if format == "html" {
					err = lessons.HTML(&b, title, ls, o)
				} else {
					err = lessons.Markdown(&b, ls, o)
				}
				if err != nil {
					return err
				}
				p := filepath.Join(out, name+ext)
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if errors.Is(err, os.ErrExist) {
					return fmt.Errorf("%s exists already; remove it or choose another --out", p)
				}
				if err != nil {
					return err
				}
				if _, err := f.Write(b.Bytes()); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes)\n", p, b.Len())
				return nil
			}
			// Beside the English ones: NN-slug.vi.html.
			suffix := ""
			if l := chosen[0].Lang; l != "" && l != lessons.English {
				suffix = "." + l
			}
			if course {
				return write("rlab-course"+suffix, "Reconcile Lab: the course", chosen)
			}
			for _, l := range chosen {
				if err := write(l.Dir+suffix, fmt.Sprintf("Reconcile Lab %d. %s", l.Number, l.Title), []*lessons.Lesson{l}); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "html", "the handouts' `FORMAT`: html or markdown")
	cmd.Flags().StringVarP(&out, "out", "o", ".", "the `DIR` to write the handouts into (made if missing)")
	cmd.Flags().BoolVar(&course, "course", false, "write one file for all the lessons given, rlab-course.EXT")
	cmd.Flags().BoolVar(&o.Instructor, "instructor", false, "add the notes for the instructor")
	lang.register(cmd.Flags())
	return cmd
}
