package bench

import (
	"context"
	"errors"
	"time"
)

// KwokctlStartStop times kwokctl's bare cluster (placeholder until the
// kwokctl peer lands).
func KwokctlStartStop(ctx context.Context, kwokctl, assets, workdir string) (start, stop time.Duration, err error) {
	return 0, 0, errors.New("kwokctl peer not built yet")
}
