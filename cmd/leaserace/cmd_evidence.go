package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/export"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// evidenceFlags are check's --evidence DIR and --force.
type evidenceFlags struct {
	dir   string
	force bool
}

func (e *evidenceFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&e.dir, "evidence", "", "also write an evidence bundle to DIR: every built-in transcript as JSON, Markdown and Mermaid, SUMMARY.txt and MANIFEST.sha256")
	fs.BoolVar(&e.force, "force", false, "with --evidence, write into DIR even if it is not empty")
}

// check refuses, before any server starts, what cannot work: --evidence
// with --case, or a DIR that is a file or already holds something.
func (e evidenceFlags) check(cmd *cobra.Command) error {
	if e.dir == "" {
		if e.force {
			return cli.UsageErr("--force goes with --evidence DIR")
		}
		return nil
	}
	if cmd.Flags().Changed("case") {
		return cli.UsageErr("--evidence records the built-in scenarios; it does not go with --case")
	}
	st, err := os.Stat(e.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return cli.UsageErr("--evidence %s: %w", e.dir, err)
	case !st.IsDir():
		return cli.UsageErr("--evidence %s is a file, not a directory", e.dir)
	}
	d, err := os.Open(e.dir)
	if err != nil {
		return cli.UsageErr("--evidence %s: %w", e.dir, err)
	}
	defer d.Close()
	if _, err := d.Readdirnames(1); err == nil && !e.force {
		return cli.UsageErr("--evidence %s is not empty; choose an empty or new directory, or add --force to write the bundle into it", e.dir)
	}
	return nil
}

// writeEvidence makes the bundle from the transcripts check played (every
// built-in scenario under every knob setting), writes it into the directory
// and prints the first seed's summary: on standard output, or standard
// error when that carries JSON. Each file is replaced atomically and the
// manifest comes last, so a bundle with a manifest is a whole one.
func (a *app) writeEvidence(ctx context.Context, ts []transcript.Transcript, e evidenceFlags, jsonOut bool) error {
	if e.dir == "" {
		return nil
	}
	ev, err := batch.EvidenceOf(ts)
	if err != nil {
		return fmt.Errorf("cannot record the evidence: %w", err)
	}
	if err := writeFilesAtomic(ctx, e.dir, ev.Files); err != nil {
		return err
	}
	manifest := ev.Files[len(ev.Files)-1]
	a.Infof("evidence: %d transcripts, %d files in %s; %s sha256 %s", len(ev.Transcripts), len(ev.Files), e.dir, manifest.Name, manifest.SHA256())
	var w io.Writer = a.Stdout
	if jsonOut {
		w = a.Stderr
	}
	if _, err := fmt.Fprintln(w, ev.Summary.String()); err != nil {
		return fmt.Errorf("cannot print the summary: %w", err)
	}
	return nil
}

// isOutDir reports whether run's --out names a directory: one that exists,
// or a path ending in a separator.
func isOutDir(out string) bool {
	if out == "" {
		return false
	}
	if os.IsPathSeparator(out[len(out)-1]) {
		return true
	}
	st, err := os.Stat(out)
	return err == nil && st.IsDir()
}

// writeTranscriptDir writes a transcript into dir in each format, named
// after its scenario and knobs, each file replaced atomically. Everything
// is rendered before the first file is written.
func (a *app) writeTranscriptDir(ctx context.Context, dir string, tr transcript.Transcript, formats []string) error {
	files := make([]batch.EvidenceFile, len(formats))
	for i, f := range formats {
		// The TUI renders the asciicast and hands the rest to the engine.
		data, err := export.Render(tr, f)
		if err != nil {
			return err
		}
		files[i] = batch.EvidenceFile{Name: transcript.Name(tr.Scenario, tr.Knobs) + transcript.Ext(f), Data: data}
	}
	if err := writeFilesAtomic(ctx, dir, files); err != nil {
		return err
	}
	for _, f := range files {
		a.Infof("transcript (%s, %s, %s) written to %s", tr.Knobs, effectsNoun(tr.Outcome.Effects), tr.Outcome.Verdict, filepath.Join(dir, f.Name))
	}
	return nil
}

// writeFilesAtomic makes dir if need be and replaces each file in it
// atomically, in order.
func writeFilesAtomic(ctx context.Context, dir string, files []batch.EvidenceFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot make the directory %s: %w", dir, err)
	}
	for _, f := range files {
		if err := cli.WriteFileAtomic(ctx, filepath.Join(dir, f.Name), f.Data); err != nil {
			return err
		}
	}
	return nil
}
