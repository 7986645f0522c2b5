package transcript

// Recording is a transcript a replay can show and where it was read from.
type Recording struct {
	Transcript Transcript
	// Origin names where the transcript came from, for a person: a file
	// path, or OriginShipped for the recordings inside leaserace.
	Origin string
}

// OriginShipped is the Origin of the transcripts embedded in leaserace
// (assets/transcripts).
const OriginShipped = "shipped"
