// Package assets embeds what leaserace ships: the SQL it runs, the built-in
// scenarios and the transcripts recorded from them.
package assets

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// FS holds sql/, scenarios/ and transcripts/. It is read-only.
//
//go:embed sql scenarios transcripts
var FS embed.FS

// SQL returns the statement in sql/NAME.sql, trimmed.
func SQL(name string) (string, error) {
	b, err := fs.ReadFile(FS, "sql/"+name+".sql")
	if err != nil {
		return "", fmt.Errorf("embedded SQL %s is missing: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// LoadSQL reads several statements at once: each name's statement into
// the string its pointer names.
func LoadSQL(into map[string]*string) error {
	for name, dst := range into {
		s, err := SQL(name)
		if err != nil {
			return err
		}
		*dst = s
	}
	return nil
}
