package main

import "testing"

// TestLoopCost: the inclusive cost is read from the loop function's own
// line of callgrind_annotate's listing, not from the lines of code inlined
// into it (which name another file) nor from its callers.
func TestLoopCost(t *testing.T) {
	listing := `--------------------------------------------------------------------------------
Ir                  file:function
--------------------------------------------------------------------------------
7,195,482 (100.0%)  /usr/local/go/src/runtime/proc.go:runtime.main [/x/instr]
6,802,495 (95.07%)  /src/bench/cmd/instructions/main.go:main.loopRebound [/x/instr]
5,002,476 (69.91%)  /src/backoff/policy.go:main.loopRebound
`
	if v, ok := loopCost(listing); !ok || v != 6802495 {
		t.Errorf("loopCost = %d, %v; want 6802495, true", v, ok)
	}
	if v, ok := loopCost("   20,007 ( 4.04%)  bench/cmd/instructions/main.go:main.loopBareRebound [/x/instr]\n"); !ok || v != 20007 {
		t.Errorf("loopCost of a padded percentage = %d, %v; want 20007, true", v, ok)
	}
	if _, ok := loopCost("1,000 (100.0%)  /a/proc.go:runtime.main [/x]\n"); ok {
		t.Error("loopCost found a loop in a listing without one")
	}
}

// TestCasesNamedOnce: every case, bare loops included, has a name of its
// own, which is how the child finds it.
func TestCasesNamedOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range append(cases, bares...) {
		name := c.policy + "/" + c.lib
		if seen[name] {
			t.Errorf("two cases named %s", name)
		}
		seen[name] = true
	}
}
