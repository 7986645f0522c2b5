// Package batch runs many runs at once for the commands that are not the
// TUI: check (every scenario under every knob setting against its
// expectation, and the resource's fixture cases), evidence (record every setting
// and sum the transcripts up), explore (sweep a named time over a range,
// its result an engine/sweep.Result), stress (many holders racing on one
// lease, counted by verdict) and verify (replay a transcript on a server
// and compare). Each plays engine runs on real PostgreSQL and the real
// resource; none draws anything.
package batch
