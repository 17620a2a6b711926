package native

import "testing"

func testHistoryReal(t *testing.T) { t.Skip("not yet") }
