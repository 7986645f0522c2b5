//go:build !race

package pgserver_test

// underRace is set when the race detector is on (CI's race line); see
// TestEmbeddedDownloadsOnceThenRunsOffline.
const underRace = false
