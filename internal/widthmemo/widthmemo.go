// Package widthmemo keeps the cell widths of lines that many sessions draw
// alike. Measuring a styled line takes microseconds; finding it takes far
// less, and a room's attendees draw the same lines over and over.
package widthmemo

import "sync"

// Memo is a bounded map from a line to its width, safe for concurrent use.
// When full it starts again empty: the lines of the moment come back at
// once.
type Memo struct {
	max     int
	measure func(string) int
	mu      sync.RWMutex
	m       map[string]int
}

// New keeps up to size widths, measured by measure.
func New(size int, measure func(string) int) *Memo {
	return &Memo{max: max(size, 1), measure: measure, m: make(map[string]int, size)}
}

// Width is l's width in cells.
func (c *Memo) Width(l string) int {
	c.mu.RLock()
	n, ok := c.m[l]
	c.mu.RUnlock()
	if ok {
		return n
	}
	n = c.measure(l)
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[l] = n
	c.mu.Unlock()
	return n
}

// Len is how many widths are kept now.
func (c *Memo) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
