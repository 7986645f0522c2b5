//go:build !race

package screen

// underRace is set when the race detector is on (CI's race line); see
// sizes.
const underRace = false
