package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
)

type mode int

const (
	modeNormal mode = iota
	modeMessage
	modeScale
	modePredict // the answer to a lesson step's question
	modeFault   // a fault for the focused style, as rlab do fault takes it
)

// actionMsg is the result of an action Cmd.
type actionMsg struct {
	what string // "replicas → 3"
	err  error
	mode mode // the input mode the action came from
}

type status struct {
	text string
	err  bool
}

// target is what the action keys act on, as the screen shows it now.
type target struct {
	focused  style.Style
	echo     *world.EchoView // the Echo shown; nil if not seen
	replicas int             // desired replicas of its Deployment in the focused style, or -1
}

// controls turn keys into the sandbox's actions: the action keys, the
// input prompts (message, scale) and the status line that says how the
// last action went. Actions run as Cmds; Update never waits for one.
type controls struct {
	actions Actions // nil: no cluster (a replay)
	ctx     context.Context
	now     func() time.Time
	name    string // the Echo acted on
	// words say the prompts and what was done in a lesson's language
	// (nil: English).
	words lessonview.Words

	mode    mode
	input   textinput.Model
	inputEr string
	busy    string
	status  status

	// wantReplicas is the last replicas asked for, so that `+ + +` adds up
	// before the world shows the first.
	wantReplicas int
	wantAt       time.Time
	// last known spec, to create the Echo again after `x`.
	lastMessage  string
	lastFault    string      // what the fault prompt had last
	faultStyle   style.Style // the style the fault prompt is for
	lastReplicas int

	inflight atomic.Int64 // actions running

	// predict gives the lesson the number typed at the predict prompt; it
	// says what to put on the status line.
	predict func(choice int) (string, error)
}

func newControls(o Options) *controls {
	ti := textinput.New()
	ti.CharLimit = 256
	return &controls{actions: o.Actions, ctx: o.Context, now: o.Now, name: o.Echo,
		input: ti, lastMessage: DefaultMessage, lastReplicas: 2, lastFault: "stale:2s"}
}

func (c *controls) setDark(dark bool) { c.input.SetStyles(textinput.DefaultStyles(dark)) }

// inputOpen says whether a prompt takes the keys.
func (c *controls) inputOpen() bool { return c.mode != modeNormal }

// remember keeps the Echo's spec, to create it again as it was.
func (c *controls) remember(ev *world.EchoView) {
	if ev != nil {
		c.lastMessage, c.lastReplicas = ev.Message, int(ev.Replicas)
	}
}

// clearStatus forgets the last action's result (esc).
func (c *controls) clearStatus() { c.status = status{} }

// say puts text on the status line, as an error if err.
func (c *controls) say(text string, err bool) { c.status = status{text: text, err: err} }

// onKey handles the action keys; ok is false for any other key.
func (c *controls) onKey(msg tea.KeyPressMsg, k *common.KeyMap, at target) (ok bool, cmd tea.Cmd) {
	name := c.name
	switch {
	case key.Matches(msg, k.More), key.Matches(msg, k.Less):
		return true, c.addReplicas(key.Matches(msg, k.More), at.echo)
	case key.Matches(msg, k.Edit):
		return true, c.open(modeMessage, c.words.T("message: "), c.lastMessage)
	case key.Matches(msg, k.Scale):
		n := at.replicas
		if n < 0 {
			n = c.lastReplicas
		}
		prompt := c.words.F("scale Deployment %s by hand (all styles) to: ", echo.DeploymentName(name))
		return true, c.open(modeScale, prompt, strconv.Itoa(n+1))
	case key.Matches(msg, k.DeleteDeployment):
		return true, c.run(c.words.F("deleted Deployment %s by hand (all styles)", echo.DeploymentName(name)), modeNormal, func(ctx context.Context) (string, error) {
			return "", c.actions.DeleteDeployment(ctx, "", name)
		})
	case key.Matches(msg, k.DeleteEcho):
		return true, c.run(c.words.F("deleted Echo/%s (all styles; GC removes its Deployment)", name), modeNormal, func(ctx context.Context) (string, error) {
			return "", c.actions.DeleteEcho(ctx, name)
		})
	case key.Matches(msg, k.CreateEcho):
		text, n := c.lastMessage, c.lastReplicas
		return true, c.run(c.words.F("created Echo/%s ×%d %q (all styles)", name, n, text), modeNormal, func(ctx context.Context) (string, error) {
			return "", c.actions.CreateEcho(ctx, name, text, n)
		})
	case key.Matches(msg, k.Fault):
		c.faultStyle = at.focused
		return true, c.open(modeFault, c.words.F("fault at %s (stale:2s, conflict, crash, … or off): ", at.focused.Traits().Title), c.lastFault)
	case key.Matches(msg, k.Kill), key.Matches(msg, k.Stop):
		return true, c.signalLeader(at.focused, key.Matches(msg, k.Kill))
	}
	return false, nil
}

// addReplicas asks for one replica more or less than shown, or than last
// asked for if the world has not caught up yet.
func (c *controls) addReplicas(more bool, ev *world.EchoView) tea.Cmd {
	n := c.lastReplicas
	if ev != nil {
		n = int(ev.Replicas)
	}
	if !c.wantAt.IsZero() && c.now().Sub(c.wantAt) < 3*time.Second {
		n = c.wantReplicas
	}
	if more {
		n++
	} else {
		n--
	}
	c.wantReplicas, c.wantAt = n, c.now()
	name := c.name
	return c.run(c.words.F("Echo/%s replicas → %d (all styles)", name, n), modeNormal, func(ctx context.Context) (string, error) {
		return "", c.actions.SetReplicas(ctx, name, n)
	})
}

// signalLeader kills (SIGKILL) or stops (SIGTERM) the leader of a style.
func (c *controls) signalLeader(st style.Style, kill bool) tea.Cmd {
	if !st.Traits().Builtin {
		// Its Lease, if any, is named as it likes and held under an
		// identity rlab did not make: the leader is not known for sure.
		c.status = status{text: c.words.F("%s is your own operator: rlab cannot tell its leader; kill a replica by hand (its pid is in its pane)", st.Traits().Title), err: true}
		return nil
	}
	if !st.Traits().ElectsLeader {
		c.status = status{text: c.words.T("the shell loop has no leader: one replica, no election (focus a Go style with tab)"), err: true}
		return nil
	}
	asked, done := "stopped (SIGTERM) the leader of %s", "stopped (SIGTERM) leader %s of %s"
	if kill {
		asked, done = "killed (SIGKILL) the leader of %s", "killed (SIGKILL) leader %s of %s"
	}
	return c.run(c.words.F(asked, st.Traits().Title), modeNormal, func(ctx context.Context) (string, error) {
		var who string
		var err error
		if kill {
			who, err = c.actions.KillLeader(ctx, st)
		} else {
			who, err = c.actions.StopLeader(ctx, st)
		}
		return c.words.F(done, who, st.Traits().Title), err
	})
}

// open shows a prompt with value in it.
func (c *controls) open(m mode, prompt, value string) tea.Cmd {
	c.mode = m
	c.input.Prompt = prompt
	c.input.SetValue(value)
	c.input.CursorEnd()
	c.inputEr = ""
	return c.input.Focus()
}

func (c *controls) close() {
	c.mode = modeNormal
	c.inputEr = ""
	c.input.Blur()
}

// onInputKey: enter applies the prompt, esc closes it, the rest edits.
func (c *controls) onInputKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc", "ctrl+c":
		c.close()
		return nil
	case "enter":
		if c.busy != "" && c.mode != modePredict { // an answer is no sandbox action
			return nil
		}
		return c.apply(c.input.Value())
	}
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	return cmd
}

// apply runs the action of the open prompt with val.
func (c *controls) apply(val string) tea.Cmd {
	name := c.name
	c.inputEr = ""
	if c.mode == modePredict {
		return c.answer(val)
	}
	if c.mode == modeFault {
		st, spec := c.faultStyle, strings.TrimSpace(val)
		c.lastFault = spec
		return c.run("fault "+spec+" at "+st.Traits().Title, modeFault, func(ctx context.Context) (string, error) {
			return c.actions.ApplyFault(ctx, st, spec)
		})
	}
	if c.mode == modeScale {
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 0 {
			c.inputEr = fmt.Sprintf("%q is not a number of replicas", val)
			return nil
		}
		return c.run(fmt.Sprintf("scaled Deployment %s to %d by hand (all styles)", echo.DeploymentName(name), n), modeScale, func(ctx context.Context) (string, error) {
			return "", c.actions.ScaleDeployment(ctx, "", name, n)
		})
	}
	return c.run(fmt.Sprintf("Echo/%s message → %q (all styles)", name, val), modeMessage, func(ctx context.Context) (string, error) {
		return "", c.actions.SetMessage(ctx, name, val)
	})
}

// answer gives the lesson the number typed at the predict prompt; a
// refusal stays under the prompt, to be corrected.
func (c *controls) answer(val string) tea.Cmd {
	n, err := strconv.Atoi(strings.TrimSpace(val))
	if err != nil {
		c.inputEr = fmt.Sprintf("%q is not the number of a choice", val)
		return nil
	}
	said, err := c.predict(n)
	if err != nil {
		c.inputEr = err.Error()
		return nil
	}
	c.close()
	c.status = status{text: said}
	return nil
}

// paste goes to the open prompt.
func (c *controls) paste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	return cmd
}

// run starts an action as a Cmd: it never blocks Update.
func (c *controls) run(what string, from mode, fn func(ctx context.Context) (string, error)) tea.Cmd {
	if c.actions == nil {
		c.status = status{text: c.words.T("no cluster in a replay: actions are off"), err: true}
		return nil
	}
	c.busy = what + " …"
	ctx := c.ctx
	return func() tea.Msg {
		c.inflight.Add(1)
		defer c.inflight.Add(-1)
		ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
		done, err := fn(ctx)
		if done == "" {
			done = what
		}
		return actionMsg{what: done, err: err, mode: from}
	}
}

// done shows an action's result.
func (c *controls) done(msg actionMsg) {
	c.busy = ""
	fromHere := msg.mode != modeNormal && c.mode == msg.mode
	switch {
	case msg.err != nil && fromHere:
		// Shown inline, under the input, as the apiserver worded it; the
		// input stays open to correct it.
		c.inputEr = msg.err.Error()
	case msg.err != nil:
		c.status = status{text: msg.what + ": " + msg.err.Error(), err: true}
		c.wantAt = time.Time{}
	default:
		if fromHere {
			c.close()
		}
		c.status = status{text: "✓ " + msg.what}
	}
}

// wait waits up to d for the actions under way to return.
func (c *controls) wait(d time.Duration) {
	deadline := time.Now().Add(d)
	for c.inflight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// lines: the input (with its error), an action in flight, or the last
// action's result, wrapped to at most 3 lines; none if nothing to say but
// hint.
func (c *controls) lines(w int, s *common.Theme, hint string) []string {
	wrap := func(p common.Paint, text string) []string {
		var out []string
		for _, l := range strings.Split(ansi.Hardwrap(text, w-1, true), "\n") {
			out = append(out, p.S(common.Fit(" "+l, w)))
			if len(out) == 3 {
				break
			}
		}
		return out
	}
	if c.inputOpen() {
		in := common.Fit(" "+c.input.View(), w)
		if c.inputEr != "" {
			return append(wrap(s.Err, "✗ "+c.inputEr), in)
		}
		help := c.words.T("enter applies · esc cancels")
		if c.busy != "" {
			help = c.busy
		}
		return []string{s.Dim.S(common.Fit(" "+help, w)), in}
	}
	switch {
	case c.busy != "":
		return wrap(s.Accent, c.busy)
	case c.status.err:
		return wrap(s.Err, "✗ "+c.status.text)
	case c.status.text != "":
		return wrap(s.OK, c.status.text)
	case hint != "":
		return wrap(s.Dim, hint)
	}
	return nil
}

// cursor is where the terminal's cursor goes while a prompt is open: on the
// input, the bottom line of lines.
func (c *controls) cursor() *tea.Cursor {
	if !c.inputOpen() {
		return nil
	}
	return c.input.Cursor()
}
