package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
)

// sandboxFlags are what the commands that run a whole sandbox until told
// to stop (up, run) share: the shell loop's interval, the cluster, the
// operators, and rlab's own CPU profile.
type sandboxFlags struct {
	ShellInterval time.Duration
	CPUProfile    string // rlab's own CPU profile, to find what a sandbox (or the screen) costs at rest
	clusterFlags
	operatorFlags
}

func (f *sandboxFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	fs.StringVar(&f.CPUProfile, "cpuprofile", "", "write rlab's CPU profile to `FILE` (go tool pprof)")
	_ = fs.MarkHidden("cpuprofile")
	f.clusterFlags.register(fs)
	f.operatorFlags.register(fs)
}

// apply sets what the flags say in o.
func (f sandboxFlags) apply(o *launch.Options) error {
	o.ShellInterval = f.ShellInterval
	if err := f.clusterFlags.apply(o); err != nil {
		return err
	}
	return f.operatorFlags.apply(o)
}

// open claims the state dir and starts the CPU profile; closing stops the
// profile, then releases the launcher.
func (f sandboxFlags) open() (l *launch.Launcher, closeAll func(), err error) {
	l, err = launch.New()
	if err != nil {
		return nil, nil, err
	}
	stopProfile, err := startProfile(f.CPUProfile)
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, func() { stopProfile(); l.Close() }, nil
}
