package resource_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/scenario"
)

// resDial opens a raw connection to the resource, so a test decides exactly
// when it writes and when it reads, as a simple client (Python's urllib,
// curl without Expect) does.
func resDial(t *testing.T, base string) net.Conn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// resBigBody is a JSON write whose value string makes it n bytes long.
func resBigBody(n int) []byte {
	head, tail := `{"epoch":9,"value":"`, `"}`
	return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

// resRead413 reads one response and checks it is the resource's 413 with its
// JSON message.
func resRead413(t *testing.T, br *bufio.Reader) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v (the server closed the connection without it)", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	var e struct {
		Error string `json:"error"`
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error, "larger than 64 KiB") {
		t.Fatalf("got HTTP %d %s, want 413 with {\"error\":\"... larger than 64 KiB\"}", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

// A client that writes its whole oversized request before reading anything
// still reads the 413 and its message, instead of a reset connection.
func TestResourceTooLargeReachesClientThatWritesFirst(t *testing.T) {
	t.Parallel()
	res, _ := resStart(t, scenario.FencingMonotonic)
	body := resBigBody(8 << 20)
	for _, chunked := range []bool{false, true} {
		name := "content-length"
		if chunked {
			name = "chunked"
		}
		t.Run(name, func(t *testing.T) {
			c := resDial(t, res.URL())
			var req bytes.Buffer
			fmt.Fprintf(&req, "POST /writes HTTP/1.1\r\nHost: leaserace\r\nContent-Type: application/json\r\n")
			if chunked {
				req.WriteString("Transfer-Encoding: chunked\r\n\r\n")
				for rest := body; len(rest) > 0; {
					n := min(len(rest), 32<<10)
					fmt.Fprintf(&req, "%x\r\n%s\r\n", n, rest[:n])
					rest = rest[n:]
				}
				req.WriteString("0\r\n\r\n")
			} else {
				fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n", len(body))
				req.Write(body)
			}
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := c.Write(req.Bytes()); err != nil {
				t.Fatalf("writing the %d-byte request before reading: %v (the server stopped reading it)", req.Len(), err)
			}
			resRead413(t, bufio.NewReader(c))
		})
	}
	// The resource still serves ordinary requests afterwards.
	if h := resCall(t, http.MethodGet, res.URL()+"/state", ""); h.status != http.StatusOK {
		t.Errorf("GET /state after the big bodies: %d %s", h.status, h.body)
	}
}

// A body far beyond what the resource drains, or one that trickles in, does
// not hold the handler: it answers 413 within its bound and closes. A body
// declared that large is not read at all; one sent in chunks is read up to
// the bound.
func TestResourceTooLargeGivesUp(t *testing.T) {
	t.Parallel()
	res, _ := resStart(t, scenario.FencingMonotonic)
	const size = 100 << 20
	head := "POST /writes HTTP/1.1\r\nHost: leaserace\r\nContent-Type: application/json\r\n"
	// A JSON string that never ends within the limit.
	const open = `{"epoch":9,"value":"`

	for _, chunked := range []bool{false, true} {
		name := "100MiB content-length"
		if chunked {
			name = "100MiB chunked"
		}
		t.Run(name, func(t *testing.T) {
			c := resDial(t, res.URL())
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			start := time.Now()
			wrote := make(chan error, 1)
			var written int64
			go func() {
				var err error
				if chunked {
					_, err = fmt.Fprintf(c, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", head, len(open), open)
				} else {
					_, err = fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n%s", head, size, open)
				}
				x := bytes.Repeat([]byte("x"), 64<<10)
				chunk := x
				if chunked {
					chunk = fmt.Appendf(nil, "%x\r\n%s\r\n", len(x), x)
				}
				for written < size && err == nil {
					var n int
					n, err = c.Write(chunk)
					written += int64(n)
				}
				wrote <- err
			}()
			br := bufio.NewReader(c)
			resRead413(t, br)
			if _, err := br.ReadByte(); err == nil {
				t.Error("the connection stayed open after the 413")
			}
			select {
			case err := <-wrote:
				if err == nil {
					t.Fatalf("the server read all %d bytes", written)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the client could still write 10 s after the 413")
			}
			if took := time.Since(start); took > 6*time.Second {
				t.Errorf("the server gave up after %v", took.Round(time.Millisecond))
			}
			t.Logf("the server closed after %v, %d MiB written", time.Since(start).Round(time.Millisecond), written>>20)
		})
	}

	t.Run("trickle", func(t *testing.T) {
		c := resDial(t, res.URL())
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		start := time.Now()
		big := resBigBody(128 << 10)
		big = big[:len(big)-2] // the string goes on
		if _, err := fmt.Fprintf(c, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", head, len(big), big); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		trickled := make(chan struct{})
		go func() {
			defer close(trickled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := c.Write([]byte("1\r\nx\r\n")); err != nil {
					return
				}
			}
		}()
		defer func() { close(stop); <-trickled }()
		br := bufio.NewReader(c)
		resRead413(t, br)
		_, err := br.ReadByte()
		took := time.Since(start)
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("after the 413 the connection gave %v, want it closed", err)
		}
		// The server's own read timeout is 30 s: well below it means the
		// drain's bound, not the server's, ended the request.
		if took > 6*time.Second {
			t.Errorf("the server gave up on a trickling body after %v", took.Round(time.Millisecond))
		}
		t.Logf("the server closed after %v", took.Round(time.Millisecond))
	})
}
