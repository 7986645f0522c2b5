// Package export writes a transcript in every format leaserace has: the
// engine's (JSON, Markdown, Mermaid), the asciicast, whose frames the
// TUI's renderer draws, and the HTML page of tui/htmlpage; and it saves them all as files, which is what e
// does in the TUI.
package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/htmlpage"
)

// Formats lists every format leaserace writes a transcript in: the
// engine's (json, md, mermaid) and the asciicast, which is drawn by the
// TUI's renderer and so lives here, above the engine.
func Formats() []string { return append(transcript.Formats(), "cast", "html") }

// Render writes a transcript in one of Formats, in this release's reading:
// an older file converted (replay --format) comes out upgraded, its JSON
// in v3's keys, as the replay shows it.
func Render(t transcript.Transcript, format string) ([]byte, error) {
	t, err := t.Upgraded()
	if err != nil {
		return nil, err
	}
	switch format {
	case "cast":
		var b bytes.Buffer
		err := WriteCast(&b, t, CastOptions{})
		return b.Bytes(), err
	case "html":
		return htmlpage.Render(t)
	}
	return transcript.Render(t, format)
}

// Files writes the transcript in every format (JSON, Markdown, Mermaid,
// asciicast, without colour when noColor, and the HTML page) into dir, named for its scenario
// and now, and returns the paths, JSON first. It writes all the files or
// none, and never replaces one.
func Files(ctx context.Context, tr transcript.Transcript, dir string, now time.Time, noColor bool) ([]string, error) {
	formats := Formats()
	data := make([][]byte, len(formats))
	var err error
	for i, f := range formats {
		if f == "cast" {
			var b bytes.Buffer
			err = WriteCast(&b, tr, CastOptions{NoColor: noColor})
			data[i] = b.Bytes()
		} else {
			data[i], err = Render(tr, f)
		}
		if err != nil {
			return nil, fmt.Errorf("could not write the %s transcript: %w", f, err)
		}
	}
	if dir == "" {
		dir = "."
	}
	base := exportBase(tr.Scenario, now)
	// Two exports in the same second get -2, -3, … rather than overwriting.
	for n := 1; n < 100; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		paths, err := writeAll(ctx, dir, name, formats, data)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return paths, nil
	}
	return nil, fmt.Errorf("could not find a free file name for %s in %s", base, dir)
}

// writeAll writes one file per format, all or none: on any failure the
// files already written are removed again.
func writeAll(ctx context.Context, dir, name string, formats []string, data [][]byte) (_ []string, err error) {
	var paths []string
	defer func() {
		if err != nil {
			for _, p := range paths {
				_ = os.Remove(p)
			}
		}
	}()
	for i, f := range formats {
		p := filepath.Join(dir, name+transcript.Ext(f))
		if err := writeNew(ctx, p, data[i]); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeNew creates path, refusing to replace an existing file.
func writeNew(ctx context.Context, path string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("export cancelled before %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("could not create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("could not write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("could not finish writing %s: %w", path, err)
	}
	return nil
}

// exportBase is leaserace-<scenario>-<YYYYmmdd-HHMMSS>, the scenario part
// reduced to [a-z0-9-] so a scenario file name cannot escape the directory.
func exportBase(scenarioName string, now time.Time) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(scenarioName) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "scenario"
	}
	if len(name) > 60 {
		name = strings.Trim(name[:60], "-")
	}
	return "leaserace-" + name + "-" + now.Format("20060102-150405")
}
