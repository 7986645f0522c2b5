package engine

// KillResource stops the run's resource the hard way, as if its process had
// died: its listener and every open connection to it are closed at once, so
// the next request is refused. Reconnect starts a new one. For tests only.
func KillResource(r *Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.be.(*live); ok {
		l.host.mu.Lock()
		defer l.host.mu.Unlock()
		if l.host.svc != nil {
			l.host.svc.Kill()
		}
	}
}

// FaultsBuilt says whether this test binary was built with the
// leaserace_faults tag.
const FaultsBuilt = faultsBuilt

// ResourceSchema is the schema that holds a live run's state at the
// resource ("" for a replay), for tests that send its statements raw.
func ResourceSchema(r *Run) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.be.(*live); ok {
		return l.resourceRun()
	}
	return ""
}
