package reboundriver

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// WorkEnd implements rivertype.HookWorkEnd (when the Retrier is installed
// in river.Config's Plugins): River calls it as the worker returns, with the
// attempt's context, which carries River's JobTimeout or the worker's
// Timeout. A worker that returns nil after that deadline has outlived its
// timeout: WorkEnd turns the nil into context.DeadlineExceeded, so the
// attempt is one failed attempt, decided by the rule, as it is on every
// rebound adapter (River on its own would record a success). Any other
// result passes through unchanged.
//
// The deadline is read, not only ctx.Err: the context ends on a timer whose
// cancel runs on a goroutine of its own, which a busy machine may not have
// run yet when the worker returns past the deadline.
func (r *Retrier) WorkEnd(ctx context.Context, _ *rivertype.JobRow, err error) error {
	if err != nil {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}
