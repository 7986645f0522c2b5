// Package memo keeps values worked out once and asked for by many: the
// cell widths of lines a room's sessions draw alike, the digests and help
// lines frames share. Finding a value takes far less than working it out.
package memo

import "sync"

// Memo is a bounded map, safe for concurrent use. When full it starts
// again empty: the values of the moment come back at once.
type Memo[K comparable, V any] struct {
	max int
	mu  sync.RWMutex
	m   map[K]V
}

// New keeps up to size values.
func New[K comparable, V any](size int) *Memo[K, V] {
	size = max(size, 1)
	return &Memo[K, V]{max: size, m: make(map[K]V, min(size, 4096))}
}

// Get is the value kept for k.
func (c *Memo[K, V]) Get(k K) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[k]
	return v, ok
}

// Put keeps v for k.
func (c *Memo[K, V]) Put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = v
}

// Of is the value kept for k, worked out by f(k) and kept when there is
// none. Two callers may both work out a missing value; both get it.
func (c *Memo[K, V]) Of(k K, f func(K) V) V {
	if v, ok := c.Get(k); ok {
		return v
	}
	v := f(k)
	c.Put(k, v)
	return v
}

// Len is how many values are kept now.
func (c *Memo[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
