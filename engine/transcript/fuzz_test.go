package transcript_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/engine/transcript"
)

// FuzzReadTranscript feeds the transcript reader anything. It must never
// panic, and a transcript it accepts whose digest checks out must survive a
// write and a read unchanged: export and verify rely on that.
func FuzzReadTranscript(f *testing.F) {
	// Every shipped transcript, recorded from live runs, is a seed; the
	// committed corpus in testdata adds broken and hostile ones.
	names, err := fs.Glob(assets.FS, "transcripts/*.json")
	if err != nil || len(names) == 0 {
		f.Fatalf("no shipped transcripts to start from: %v", err)
	}
	for _, n := range names {
		b, err := fs.ReadFile(assets.FS, n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if path.Base(n) == "renewal-race--blind-off.json" {
			// Cut short, and with a digest that no longer matches.
			f.Add(b[:len(b)/2])
			f.Add(bytes.Replace(b, []byte(`"effects": 2`), []byte(`"effects": 1`), 1))
		}
	}

	// Transcripts earlier releases wrote (v1, v2) are read too.
	old, err := filepath.Glob("testdata/v[12]/*.json")
	if err != nil || len(old) == 0 {
		f.Fatalf("no v1 or v2 transcripts to start from: %v", err)
	}
	for _, n := range old {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := transcript.Read(bytes.NewReader(data))
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "transcript") {
				t.Fatalf("the error does not say what was being read: %q", msg)
			}
			return
		}
		if tr.Format != transcript.FormatV3 && tr.Format != transcript.FormatV2 && tr.Format != transcript.FormatV1 {
			t.Fatalf("accepted format %q", tr.Format)
		}
		// Whatever is read can be shown: its v3 reading exists and is a
		// transcript leaserace reads back.
		up, err := tr.Upgraded()
		if err != nil {
			t.Fatalf("an accepted transcript has no v3 reading: %v", err)
		}
		var ub bytes.Buffer
		if err := up.WriteJSON(&ub); err != nil {
			t.Fatalf("its v3 reading cannot be written: %v", err)
		}
		if _, err := transcript.Read(bytes.NewReader(ub.Bytes())); err != nil {
			t.Fatalf("its v3 reading cannot be read back: %v\n%s", err, ub.Bytes())
		}
		digest, err := tr.ComputeDigest()
		if err != nil {
			t.Fatalf("an accepted transcript has no digest: %v", err)
		}
		// One whose digest does not match is not what leaserace wrote (or
		// was changed since); verify reports that. It must still survive
		// the way round with the digest it has now.
		var buf bytes.Buffer
		if err := tr.WriteJSON(&buf); err != nil {
			t.Fatalf("an accepted transcript cannot be written: %v", err)
		}
		back, err := transcript.Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("a written transcript cannot be read back: %v\n%s", err, buf.Bytes())
		}
		d2, err := back.ComputeDigest()
		if err != nil || d2 != digest || back.Digest != tr.Digest {
			t.Fatalf("the digest changed on the way round: %s → %s (stored %s → %s, %v)", digest, d2, tr.Digest, back.Digest, err)
		}
		// Equal as data: canonical JSON (raw values compacted) and the
		// decoded structure alike.
		a, errA := json.Marshal(tr)
		b, errB := json.Marshal(back)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("the transcript changed on the way round (%v, %v):\n%s\n%s", errA, errB, a, b)
		}
		if !reflect.DeepEqual(normalize(t, tr), normalize(t, back)) {
			t.Fatalf("the decoded transcript changed on the way round")
		}
	})
}

// normalize decodes a transcript's canonical JSON into plain values, so raw
// JSON fields compare by meaning and not by their whitespace.
func normalize(t *testing.T, tr transcript.Transcript) any {
	t.Helper()
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
