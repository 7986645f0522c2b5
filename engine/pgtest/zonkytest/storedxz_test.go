package zonkytest

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os/exec"
	"testing"

	"github.com/xi2/xz"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A stored .xz reads back as what went in, through the decoder the
// provider unpacks with and through the xz command, at sizes around the
// 64 KiB chunk and the fours the format pads to.
func TestStoredXzReadsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 2026))
	xzCmd, _ := exec.LookPath("xz")
	for _, n := range []int{0, 1, 3, 4, 5, 65535, 65536, 65537, 3*65536 + 2, 1 << 20} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		var file bytes.Buffer
		if err := storedXz(&file, data); err != nil {
			t.Fatal(err)
		}
		if file.Len()%4 != 0 {
			t.Errorf("%d bytes: the file is %d bytes, not a multiple of four", n, file.Len())
		}
		r, err := xz.NewReader(bytes.NewReader(file.Bytes()), 0)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%d bytes: the provider's decoder read %d bytes (%v)", n, len(got), err)
		}
		if xzCmd == "" {
			continue
		}
		cmd := exec.Command(xzCmd, "-d", "-c")
		cmd.Stdin = bytes.NewReader(file.Bytes())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		got, err = cmd.Output()
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%d bytes: xz -d read %d bytes (%v): %s", n, len(got), err, stderr.String())
		}
	}
	if xzCmd == "" {
		t.Log("no xz command: checked with the provider's decoder only")
	}
}

// A stored .xz whose data is changed fails its check: the decoder does
// check the CRC32 the writer gives.
func TestStoredXzCheckIsChecked(t *testing.T) {
	var file bytes.Buffer
	if err := storedXz(&file, bytes.Repeat([]byte("leaserace"), 1000)); err != nil {
		t.Fatal(err)
	}
	b := file.Bytes()
	b[100] ^= 0xFF // inside the first chunk's data
	r, err := xz.NewReader(bytes.NewReader(b), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err == nil {
		t.Error("a changed byte went unnoticed")
	}
}
