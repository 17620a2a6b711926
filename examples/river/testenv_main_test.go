package main

import (
	"testing"

	"github.com/rebound-go/rebound/internal/testenv"
)

// TestMain ends the run with one line of what was skipped for want of a
// server, and why.
func TestMain(m *testing.M) { testenv.Main(m) }
