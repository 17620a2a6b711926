package reboundasynq

import (
	"maps"

	"github.com/hibiken/asynq"
)

// HeaderTask is the header [Retrier.NewTask] sets on every task it builds,
// to a random token naming the task's next delivery, which RetryDelay
// replaces before asynq stores each retry. asynq keeps a task's headers
// only when it has at least one, and precise mode ([WithPrecise]) and an
// observer's links from one attempt to the next travel in them; the token
// is how RetryDelay, which asynq hands the task's type, payload and
// headers but not its ID, tells a run apart from the runs of tasks that
// look the same (see the package docs). Leave it alone.
const HeaderTask = "rebound-task"

// NewTask returns a task of the given type and payload ready for rebound,
// to pass to asynq's Client.Enqueue as is: it has headers (so precise
// mode and attempt-to-attempt trace links work) and the MaxRetry of its
// type's rule ([Retrier.MaxRetryFor]). opts are asynq's task options; a
// MaxRetry among them replaces the rule's.
func (r *Retrier) NewTask(typename string, payload []byte, opts ...asynq.Option) *asynq.Task {
	return r.NewTaskWithHeaders(typename, payload, nil, opts...)
}

// NewTaskWithHeaders is [Retrier.NewTask] for a task with headers of its
// own, such as a producer's trace context; they are copied, and
// [HeaderTask] is added.
func (r *Retrier) NewTaskWithHeaders(typename string, payload []byte, headers map[string]string, opts ...asynq.Option) *asynq.Task {
	h := maps.Clone(headers)
	if h == nil {
		h = make(map[string]string, 1)
	}
	h[HeaderTask] = newToken()
	return asynq.NewTaskWithHeaders(typename, payload, h, append([]asynq.Option{r.MaxRetryFor(typename)}, opts...)...)
}
