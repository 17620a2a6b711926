package contention_test

import (
	"fmt"

	"github.com/rebound-go/rebound/bench/contention"
)

// Fifty clients race to update one row; each strategy is scored by the
// writes the server had to refuse.
func Example() {
	pts, err := contention.Sweep(contention.StudyStrategies(), contention.Config{
		Clients: []int{50}, Runs: 20, Seed: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ranked := contention.Ranked(pts, 50, func(p contention.Point) float64 { return p.Calls })
	fmt.Println("least work:", ranked[0].Strategy)
	fmt.Println("most work: ", ranked[len(ranked)-1].Strategy)
	// Output:
	// least work: full jitter
	// most work:  no jitter
}
