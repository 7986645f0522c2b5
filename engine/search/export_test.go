package search

// ReplayStates makes o put the server into each state it expands by
// replaying the state's path from the start, instead of restoring the
// state with SQL: the other way, for measuring. For tests only.
func ReplayStates(o *Searcher) { o.replay = true }
