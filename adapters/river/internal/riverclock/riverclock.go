// Package riverclock lets reboundrivertest run a Retrier on the clock a
// test controls, without an option in reboundriver's API that only tests
// would use.
package riverclock

import "time"

// Set makes r, which must be a *reboundriver.Retrier, read the time from
// now. reboundriver installs it when the package is initialised.
var Set func(r any, now func() time.Time)
