package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

func shippedTranscript(t testing.TB, name string, k scenario.Knobs) transcript.Transcript {
	t.Helper()
	tr, err := engine.ShippedTranscript(name, k)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func blindOff() scenario.Knobs {
	return scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}
}

// parsedEvent is one event line of an asciicast.
type parsedEvent struct {
	at   float64
	code string
	data string
}

// checkCast validates data against asciicast v2: a header object with
// version 2 and integer width and height, then one [time, code, data]
// array a line, times never going back, codes "o" or "m", one marker per
// step, and frames that fit the terminal.
func checkCast(t *testing.T, data []byte, steps, w, h int) []parsedEvent {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		t.Fatal("empty asciicast")
	}
	var head map[string]json.RawMessage
	if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
		t.Fatalf("header is not a JSON object: %v", err)
	}
	intField := func(k string) int {
		var n int
		if err := json.Unmarshal(head[k], &n); err != nil {
			t.Fatalf("header %s is not an integer: %s", k, head[k])
		}
		return n
	}
	if v := intField("version"); v != 2 {
		t.Fatalf("version %d", v)
	}
	if intField("width") != w || intField("height") != h {
		t.Fatalf("size %s×%s, want %d×%d", head["width"], head["height"], w, h)
	}
	if _, ok := head["timestamp"]; ok {
		intField("timestamp")
	}
	var env map[string]string
	if err := json.Unmarshal(head["env"], &env); err != nil || env["TERM"] == "" {
		t.Errorf("env %s: want an object with TERM", head["env"])
	}
	var title string
	if err := json.Unmarshal(head["title"], &title); err != nil || title == "" {
		t.Errorf("title %s", head["title"])
	}
	var evs []parsedEvent
	last := 0.0
	markers := 0
	for sc.Scan() {
		var raw []json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil || len(raw) != 3 {
			t.Fatalf("event %d is not a 3-element array: %s", len(evs)+1, sc.Bytes())
		}
		var e parsedEvent
		if err := json.Unmarshal(raw[0], &e.at); err != nil {
			t.Fatalf("event %d time %s", len(evs)+1, raw[0])
		}
		if err := json.Unmarshal(raw[1], &e.code); err != nil || (e.code != "o" && e.code != "m") {
			t.Fatalf("event %d code %s", len(evs)+1, raw[1])
		}
		if err := json.Unmarshal(raw[2], &e.data); err != nil {
			t.Fatalf("event %d data is not a string: %s", len(evs)+1, raw[2])
		}
		if e.at < last {
			t.Fatalf("event %d goes back in time: %f after %f", len(evs)+1, e.at, last)
		}
		last = e.at
		if e.code == "m" {
			markers++
		}
		if e.code == "o" && strings.Contains(e.data, "\x1b[2J\x1b[H") {
			frame := e.data[strings.Index(e.data, "\x1b[H")+3:]
			if n := strings.Count(frame, "\r\n") + 1; n > h {
				t.Errorf("event %d: a frame of %d lines in a %d-line terminal", len(evs)+1, n, h)
			}
			if strings.Contains(strings.ReplaceAll(frame, "\r\n", ""), "\n") {
				t.Errorf("event %d: a bare newline in a frame", len(evs)+1)
			}
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if markers != steps {
		t.Errorf("%d markers for %d steps", markers, steps)
	}
	return evs
}

func TestCastIsAsciicastV2(t *testing.T) {
	tr := shippedTranscript(t, "renewal-race", blindOff())
	var b bytes.Buffer
	if err := WriteCast(&b, tr, CastOptions{}); err != nil {
		t.Fatal(err)
	}
	evs := checkCast(t, b.Bytes(), len(tr.Steps), 120, 40)
	if !strings.HasPrefix(b.String(), `{"version":2,"width":120,"height":40,"timestamp":`) {
		t.Errorf("header: %s", strings.SplitN(b.String(), "\n", 2)[0])
	}
	var marks []string
	for i, e := range evs {
		if e.code != "m" {
			continue
		}
		marks = append(marks, e.data)
		// The frame that goes with a marker comes right after it.
		if e.data == "t=1075 A heartbeat.deliver" {
			if i+1 >= len(evs) || !strings.Contains(evs[i+1].data, "UPDATE 1") {
				t.Errorf("the frame at the 1075 marker does not show UPDATE 1")
			}
		}
	}
	want := "t=1055 A heartbeat.send|t=1060 clock expire|t=1070 B acquire|t=1070 B effect|t=1075 A heartbeat.deliver|t=1080 A effect"
	if got := strings.Join(marks, "|"); got != want {
		t.Errorf("markers %s\nwant    %s", got, want)
	}
	if strings.Contains(b.String(), "REPLAY") || strings.Contains(b.String(), "quit") {
		t.Error("a recording shows the replay banner or key help")
	}
	// Without colour the only escapes are the cursor and the redraws.
	b.Reset()
	if err := WriteCast(&b, tr, CastOptions{NoColor: true, Width: 80, Height: 24}); err != nil {
		t.Fatal(err)
	}
	checkCast(t, b.Bytes(), len(tr.Steps), 80, 24)
	plainText := strings.NewReplacer(`\u001b[2J\u001b[H`, "", `\u001b[?25l`, "", `\u001b[?25h`, "").Replace(b.String())
	if strings.Contains(plainText, `\u001b`) {
		t.Error("NoColor cast has colour escapes")
	}
}

// The real asciinema reads the file: asciinema cat prints every frame. It
// wants a terminal, so it runs under script(1)'s pseudo-terminal.
func TestCastPlaysInAsciinema(t *testing.T) {
	bin, err := exec.LookPath("asciinema")
	if err != nil {
		t.Skip("asciinema is not installed (apt-get install asciinema)")
	}
	scr, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed to give asciinema a terminal")
	}
	tr := shippedTranscript(t, "renewal-race", blindOff())
	path := filepath.Join(t.TempDir(), "race.cast")
	var b bytes.Buffer
	if err := WriteCast(&b, tr, CastOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(scr, "-qec", bin+" cat '"+path+"'", "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("asciinema cat: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("UPDATE 1")) || !bytes.Contains(out, []byte("2 effects")) {
		t.Errorf("asciinema cat shows no race:\n%.2000s", out)
	}
}
