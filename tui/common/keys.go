package common

import (
	"fmt"

	"charm.land/bubbles/v2/key"

	"github.com/kkloud/rlab/lessons/lessonview"
)

// KeyMap is every key of the main screen. `?` help is generated from it.
type KeyMap struct {
	More, Less, Edit, DeleteDeployment, Scale, DeleteEcho, CreateEcho key.Binding
	Kill, Stop, Fault                                                 key.Binding
	Next, Prev, Focus, Full, Verbs, Log, LogReplica                   key.Binding
	Filter, Kinds, Pause, Up, Down, PageUp, PageDown, Top, Bottom     key.Binding
	Help, Quit                                                        key.Binding
	// Lesson keys: disabled (never matched, not in the help) until Lesson
	// enables them.
	LessonNext, LessonBack, LessonPlay, Lessons key.Binding
	// LessonPredict opens the prompt that answers a step's question: y,
	// since p pauses the timeline, ? is help and the digits focus panes.
	LessonPredict key.Binding
	// Keys of the lesson list.
	Open, Close key.Binding
}

// DefaultKeyMap are the keys of DESIGN §4.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return KeyMap{
		More:             b([]string{"+", "="}, "+", "more replicas"),
		Less:             b([]string{"-", "_"}, "-", "fewer replicas"),
		Edit:             b([]string{"e"}, "e", "edit message"),
		DeleteDeployment: b([]string{"d"}, "d", "delete Deployment (drift)"),
		Scale:            b([]string{"s"}, "s", "scale Deployment by hand"),
		DeleteEcho:       b([]string{"x"}, "x", "delete Echo"),
		CreateEcho:       b([]string{"n"}, "n", "create Echo again"),
		Kill:             b([]string{"k"}, "k", "kill leader (crash)"),
		Stop:             b([]string{"g"}, "g", "stop leader gracefully"),
		Fault:            b([]string{"F"}, "F", "fault (focused style)"),
		Next:             b([]string{"tab"}, "tab", "next pane"),
		Prev:             b([]string{"shift+tab"}, "shift+tab", "previous pane"),
		Focus:            b([]string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, "1-3", "focus pane"),
		Full:             b([]string{"f"}, "f", "full-width pane"),
		Verbs:            b([]string{"v"}, "v", "API requests by verb"),
		Log:              b([]string{"o"}, "o", "operator log (focused pane)"),
		LogReplica:       b([]string{"O"}, "O", "log: next replica"),
		Filter:           b([]string{"t"}, "t", "timeline: filter style"),
		Kinds:            b([]string{"T"}, "T", "timeline: filter kind"),
		Pause:            b([]string{"p"}, "p", "timeline: pause"),
		Up:               b([]string{"up"}, "↑", "timeline: scroll up"),
		Down:             b([]string{"down"}, "↓", "timeline: scroll down"),
		PageUp:           b([]string{"pgup"}, "pgup", "timeline: page up"),
		PageDown:         b([]string{"pgdown"}, "pgdn", "timeline: page down"),
		Top:              b([]string{"home"}, "home", "timeline: oldest"),
		Bottom:           b([]string{"end"}, "end", "timeline: follow"),
		Help:             b([]string{"?"}, "?", "help"),
		Quit:             b([]string{"q", "ctrl+c"}, "q", "quit"),
		LessonNext:       off(b([]string{"n"}, "n", "next step")),
		LessonBack:       off(b([]string{"b"}, "b", "back")),
		LessonPlay:       off(b([]string{"a"}, "a", "play step")),
		Lessons:          off(b([]string{"l"}, "l", "lessons")),
		LessonPredict:    off(b([]string{"y"}, "y", "predict")),
		Open:             b([]string{"enter"}, "enter", "open"),
		Close:            b([]string{"esc", "l", "q"}, "esc", "close"),
	}
}

// In is the keymap with its help in words' language.
func (k KeyMap) In(w lessonview.Words) KeyMap {
	if w == nil {
		return k
	}
	for _, b := range []*key.Binding{&k.More, &k.Less, &k.Edit, &k.DeleteDeployment, &k.Scale, &k.DeleteEcho, &k.CreateEcho,
		&k.Kill, &k.Stop, &k.Fault, &k.Next, &k.Prev, &k.Focus, &k.Full, &k.Verbs, &k.Log, &k.LogReplica,
		&k.Filter, &k.Kinds, &k.Pause, &k.Up, &k.Down, &k.PageUp, &k.PageDown, &k.Top, &k.Bottom,
		&k.Help, &k.Quit, &k.LessonNext, &k.LessonBack, &k.LessonPlay, &k.Lessons, &k.LessonPredict, &k.Open, &k.Close} {
		b.SetHelp(b.Help().Key, w.T(b.Help().Desc))
	}
	return k
}

// Panes is the keymap for n panes: the focus keys' help says 1-n.
func (k KeyMap) Panes(n int) KeyMap {
	k.Focus.SetHelp(fmt.Sprintf("1-%d", max(n, 1)), k.Focus.Help().Desc)
	return k
}

func off(b key.Binding) key.Binding {
	b.SetEnabled(false)
	return b
}

// Lesson is the keymap while a lesson is followed: n, b, a and l drive the
// lesson, y answers a step's question, and creating the Echo again moves
// from n to c.
func (k KeyMap) Lesson() KeyMap {
	for _, b := range []*key.Binding{&k.LessonNext, &k.LessonBack, &k.LessonPlay, &k.Lessons, &k.LessonPredict} {
		b.SetEnabled(true)
	}
	k.CreateEcho = key.NewBinding(key.WithKeys("c"), key.WithHelp("c", k.CreateEcho.Help().Desc))
	return k
}

// LessonKeys are the lesson keys, for the lesson line.
func (k KeyMap) LessonKeys() []key.Binding {
	return []key.Binding{k.LessonNext, k.LessonBack, k.LessonPlay, k.Lessons}
}

// ShortHelp is the one-line help under the screen (help.KeyMap).
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.LessonNext, k.LessonBack, k.LessonPlay, k.Lessons,
		k.More, k.Less, k.Edit, k.DeleteDeployment, k.Scale, k.DeleteEcho, k.CreateEcho, k.Kill, k.Help, k.Quit}
}

// FullHelp is the `?` help, in columns (help.KeyMap).
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		append(k.LessonKeys(), k.LessonPredict), // shown only in a lesson
		{k.More, k.Less, k.Edit, k.DeleteEcho, k.CreateEcho},
		{k.DeleteDeployment, k.Scale, k.Kill, k.Stop, k.Fault},
		{k.Next, k.Prev, k.Focus, k.Full, k.Verbs, k.Log, k.LogReplica},
		{k.Filter, k.Kinds, k.Pause, k.Up, k.Down},
		{k.PageUp, k.PageDown, k.Top, k.Bottom, k.Help, k.Quit},
	}
}
