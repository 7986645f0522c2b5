// Package assets embeds what leaserace ships: the SQL it runs, the built-in
// scenarios and the transcripts recorded from them.
package assets

import "embed"

// FS holds sql/, scenarios/ and transcripts/. It is read-only.
//
//go:embed sql scenarios transcripts
var FS embed.FS
