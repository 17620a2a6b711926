package reboundriver

import (
	"context"

	"github.com/riverqueue/river/rivertype"
)

// InsertMany sets the max_attempts of every job being inserted to the
// attempts cap of its kind's rule, replacing whatever the insert options or
// the client's MaxAttempts said, so River's own bookkeeping (the job row,
// the UI, the rescuer) agrees with the rule. Caps above 32767, the most the
// PostgreSQL column holds, are stored as 32767, and such a job gives up
// after 32767 runs (see [Retrier.Work]).
func (r *Retrier) InsertMany(ctx context.Context, manyParams []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, p := range manyParams {
		if p == nil {
			continue
		}
		kind := p.Kind
		if kind == "" && p.Args != nil {
			kind = p.Args.Kind()
		}
		p.MaxAttempts = attemptsCap(r.RuleFor(kind))
	}
	return doInner(ctx)
}
