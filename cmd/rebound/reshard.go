package main

import (
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/rebound-go/rebound/adapters/native"
)

// The reshard command: a live change of a native queue's count of shards
// (native.Reshard, Queue.FinishReshard).

const reshardDoc = `
reshard changes the count of shards of a native queue in use, live:
nothing is moved, no job is lost or run twice. Without -yes it prints what
the change would do (a dry run); with -yes it writes the new layout, and
from then on every shard refuses a producer holding the old one (which
reads the layout again and sends its job where the new one puts it), while
workers start serving the new shards within seconds and keep serving the
old ones. A change that grows the queue keeps every shard; one that shrinks
it keeps the first shards and drains the others. -status prints where the
change stands; -finish ends it once the shards it drops hold no waiting,
active, delayed or failed job (it deletes their completed jobs, as
retention would), and the workers stop serving them. Every process of the
queue must open it with OpenQueue or NewShardedQueue (docs/native.md,
"Changing N").`

// reshardFlags are reshard's own flags.
type reshardFlags struct {
	shards         int
	status, finish bool
}

func (f *reshardFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.shards, "shards", 0, fmt.Sprintf("the new count of shards, `N` in 1..%d", native.MaxShards))
	fs.BoolVar(&f.status, "status", false, "print where the queue's count of shards stands")
	fs.BoolVar(&f.finish, "finish", false, "end the change once the shards it drops are drained")
}

func (c *queueCall) checkReshard() string {
	f := c.rs
	switch {
	case f.status && f.finish:
		return "give -status or -finish, not both"
	case (f.status || f.finish) && (f.shards != 0 || c.yes):
		return "-status and -finish act on the change written: give them without -shards or -yes"
	case !f.status && !f.finish && f.shards == 0:
		return fmt.Sprintf("missing -shards N, the new count of shards (1..%d), or -status or -finish", native.MaxShards)
	case !f.status && !f.finish && (f.shards < 1 || f.shards > native.MaxShards):
		return fmt.Sprintf("-shards %d is out of range, want the new count of shards, 1..%d", f.shards, native.MaxShards)
	}
	return ""
}

// reshard runs the reshard command.
func (c *queueCall) reshard() error {
	switch {
	case c.rs.status:
		st, err := c.q.ReshardStatus(c.ctx)
		if err != nil {
			return err
		}
		return c.printReshard(st, "")
	case c.rs.finish:
		st, err := c.q.FinishReshard(c.ctx)
		if errors.Is(err, native.ErrReshardDraining) {
			_ = c.printReshard(st, "not finished: the shards it drops still hold unfinished jobs")
			return err
		}
		if err != nil {
			return err
		}
		return c.printReshard(st, "finished")
	}
	st, err := c.q.ReshardStatus(c.ctx)
	if err != nil {
		return err
	}
	if !c.yes {
		note := fmt.Sprintf("dry run: would change %d shards to %d; give -yes to write the new layout", st.Shards, c.rs.shards)
		switch {
		case !st.Done():
			note = fmt.Sprintf("dry run: a change from %d to %d shards is not finished; -finish it first", st.From, st.Shards)
		case st.Shards == c.rs.shards:
			note = fmt.Sprintf("dry run: the queue has %d shards already; nothing to change", st.Shards)
		}
		return c.printReshard(st, note)
	}
	st, err = native.Reshard(c.ctx, c.rdb, c.q.Name(), c.rs.shards, native.WithPrefix(c.o.prefix))
	if err != nil {
		return err
	}
	note := "written: new jobs go to the new layout; workers serve both until -finish"
	if st.Done() {
		note = "nothing to change"
	}
	return c.printReshard(st, note)
}

// reshardOut is reshard's answer in JSON.
type reshardOut struct {
	Queue    string          `json:"queue"`
	Epoch    int64           `json:"epoch"`
	Shards   int             `json:"shards"`
	From     int             `json:"from,omitempty"`
	Draining []drainingShard `json:"draining,omitempty"`
	Note     string          `json:"note,omitempty"`
}

type drainingShard struct {
	Tag       string `json:"tag"`
	Waiting   int64  `json:"waiting"`
	Active    int64  `json:"active"`
	Delayed   int64  `json:"delayed"`
	Completed int64  `json:"completed"`
	Failed    int64  `json:"failed"`
}

func (c *queueCall) printReshard(st native.ReshardStatus, note string) error {
	if c.o.json {
		out := reshardOut{Queue: st.Queue, Epoch: st.Epoch, Shards: st.Shards, From: st.From, Note: note}
		for _, d := range st.Draining {
			k := d.Counts
			out.Draining = append(out.Draining, drainingShard{Tag: d.Tag, Waiting: k.Waiting, Active: k.Active, Delayed: k.Delayed, Completed: k.Completed, Failed: k.Failed})
		}
		return c.out(out)
	}
	switch {
	case st.Done():
		fmt.Fprintf(c.stdout, "queue %q: %d shards (layout epoch %d), no change draining\n", st.Queue, st.Shards, st.Epoch)
	case len(st.Draining) == 0:
		fmt.Fprintf(c.stdout, "queue %q: changing %d shards to %d (layout epoch %d); it drops no shard, so -finish ends it at once\n", st.Queue, st.From, st.Shards, st.Epoch)
	default:
		fmt.Fprintf(c.stdout, "queue %q: changing %d shards to %d (layout epoch %d); %d unfinished jobs on the %d shards it drops\n",
			st.Queue, st.From, st.Shards, st.Epoch, st.Unfinished(), len(st.Draining))
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "DRAINING SHARD\tWAITING\tACTIVE\tDELAYED\tCOMPLETED\tFAILED")
		for _, d := range st.Draining {
			k := d.Counts
			fmt.Fprintf(tw, "%q\t%d\t%d\t%d\t%d\t%d\n", d.Tag, k.Waiting, k.Active, k.Delayed, k.Completed, k.Failed)
		}
		_ = tw.Flush()
	}
	if note != "" {
		fmt.Fprintln(c.stdout, note)
	}
	return nil
}
