package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/leaserace/leaserace/scenario"
)

// Client speaks to one run of a resource over HTTP: the default run, or
// one made with AddRun. It is safe for concurrent use.
type Client struct {
	base string
	// prefix is "" for the default run, "/runs/NAME" for another.
	prefix string
	run    string
	hc     *http.Client
}

// CallError is a request to the resource that failed. Status is the HTTP
// status the resource answered with, or 0 when it did not answer at all
// (refused, reset, timed out): Unanswered tells which.
type CallError struct {
	URL string
	// What names the request for a person: "reset", "write", ...
	What   string
	Status int
	// Message is the resource's own words, or what went wrong in transit.
	Message string
	// Err is the transport's error when there was one.
	Err error
}

func (e *CallError) Error() string {
	if e.Status == 0 {
		return e.Message
	}
	return fmt.Sprintf("resource at %s refused the %s: %s (HTTP %d)", e.URL, e.What, e.Message, e.Status)
}

func (e *CallError) Unwrap() error { return e.Err }

// Unanswered reports whether the resource gave no answer: it is down,
// unreachable or too slow.
func (e *CallError) Unanswered() bool { return e.Status == 0 }

// StoreDown reports whether the resource answered that its own PostgreSQL
// store failed (HTTP 503).
func (e *CallError) StoreDown() bool { return e.Status == http.StatusServiceUnavailable }

// maxReply bounds a response body; a view holds every effect since the last
// reset, each with a value of up to 64 KiB.
const maxReply = 64 << 20

// NewClient talks to the default run of the resource at baseURL. A nil hc gets a client
// that keeps connections alive (a replay makes many small requests).
func NewClient(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{
			Timeout: 30 * time.Second,
			Transport: &http.Transport{
				// The resource is on loopback: never route it through a proxy.
				Proxy:                 nil,
				DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConns:          16,
				MaxIdleConnsPerHost:   16,
				IdleConnTimeout:       90 * time.Second,
				ResponseHeaderTimeout: 30 * time.Second,
				DisableCompression:    true,
			},
		}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// URL is the resource's base URL.
func (c *Client) URL() string { return c.base }

// RunName is the run this client acts on ("" for the default run).
func (c *Client) RunName() string { return c.run }

// ForRun is a client for an existing run of the same resource.
func (c *Client) ForRun(name string) *Client {
	return &Client{base: c.base, prefix: "/runs/" + name, run: name, hc: c.hc}
}

// AddRun asks the resource for a run of its own, named name (a random name
// when empty) with fencing f, and returns a client for it.
func (c *Client) AddRun(ctx context.Context, name string, f scenario.Fencing) (*Client, error) {
	var got runBody
	if _, err := c.do(ctx, http.MethodPost, "/runs", "new run", runBody{Run: name, Fencing: f}, &got, http.StatusCreated); err != nil {
		return nil, err
	}
	if got.Run == "" || (name != "" && got.Run != name) {
		return nil, &CallError{URL: c.base, What: "new run", Status: http.StatusCreated, Message: fmt.Sprintf("the resource named the run %q, not %q", got.Run, name)}
	}
	return c.ForRun(got.Run), nil
}

// RemoveRun asks the resource to drop this client's run.
func (c *Client) RemoveRun(ctx context.Context) error {
	if c.run == "" {
		return errors.New("the default run cannot be removed")
	}
	var got map[string]string
	_, err := c.do(ctx, http.MethodDelete, "", "run removal", nil, &got, http.StatusOK)
	return err
}

type pairBody struct {
	Fence int64           `json:"fence"`
	Value json.RawMessage `json:"value"`
	Actor string          `json:"actor,omitempty"`
}

// nullIfEmpty sends a missing value as JSON null, which the resource accepts.
func nullIfEmpty(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// Reset sets the resource's state to (epoch, value) and clears its effects.
func (c *Client) Reset(ctx context.Context, epoch int64, value json.RawMessage) (View, error) {
	var v View
	_, err := c.do(ctx, http.MethodPut, "/state", "reset", pairBody{Fence: epoch, Value: nullIfEmpty(value)}, &v, http.StatusOK)
	return v, err
}

// Rewind sets the resource's state to (epoch, value) and keeps the first
// keep effects of its log, dropping the later ones: the resource as it
// was after those writes, one request whatever keep is.
func (c *Client) Rewind(ctx context.Context, epoch int64, value json.RawMessage, keep int) (View, error) {
	var v View
	k := int64(keep)
	body := struct {
		pairBody
		Keep *int64 `json:"keep"`
	}{pairBody{Fence: epoch, Value: nullIfEmpty(value)}, &k}
	_, err := c.do(ctx, http.MethodPut, "/state", "rewind", body, &v, http.StatusOK)
	return v, err
}

// Write sends one write. A write the fencing policy refuses is not an error:
// the result has Accepted false and a Reason.
func (c *Client) Write(ctx context.Context, actor string, epoch int64, value json.RawMessage) (WriteResult, error) {
	var wire struct {
		WriteResult
		// Args arrive as [epoch, value]; decoded by hand so a large epoch
		// stays an exact int64 instead of becoming a float64.
		Args []json.RawMessage `json:"args"`
	}
	_, err := c.do(ctx, http.MethodPost, "/writes", "write", pairBody{Fence: epoch, Value: nullIfEmpty(value), Actor: actor}, &wire, http.StatusOK, http.StatusConflict)
	if err != nil {
		return WriteResult{}, err
	}
	res := wire.WriteResult
	res.Args = make([]any, len(wire.Args))
	for i, a := range wire.Args {
		if n, err := strconv.ParseInt(string(a), 10, 64); err == nil {
			res.Args[i] = n
		} else {
			res.Args[i] = a
		}
	}
	return res, nil
}

// State reads the resource's state and its effects since the last reset.
func (c *Client) State(ctx context.Context) (View, error) {
	var v View
	_, err := c.do(ctx, http.MethodGet, "/state", "state read", nil, &v, http.StatusOK)
	return v, err
}

// SetFencing changes the resource's policy for later writes.
func (c *Client) SetFencing(ctx context.Context, f scenario.Fencing) error {
	var got fencingBody
	if _, err := c.do(ctx, http.MethodPut, "/fencing", "fencing change", fencingBody{Fencing: f}, &got, http.StatusOK); err != nil {
		return err
	}
	if got.Fencing != f {
		return fmt.Errorf("resource at %s answered fencing %q after being set to %q", c.base, got.Fencing, f)
	}
	return nil
}

// Fencing reads the resource's policy.
func (c *Client) Fencing(ctx context.Context) (scenario.Fencing, error) {
	var got fencingBody
	_, err := c.do(ctx, http.MethodGet, "/fencing", "fencing read", nil, &got, http.StatusOK)
	return got.Fencing, err
}

// Healthy asks the resource to check its database.
func (c *Client) Healthy(ctx context.Context) error {
	var got struct {
		OK bool `json:"ok"`
	}
	_, err := c.do(ctx, http.MethodGet, "/healthz", "health check", nil, &got, http.StatusOK)
	if err == nil && !got.OK {
		err = fmt.Errorf("resource at %s says it is not healthy", c.base)
	}
	return err
}

// do sends one request for this client's run and decodes a reply whose
// status is one of ok into out; every failure is a *CallError.
func (c *Client) do(ctx context.Context, method, path, what string, in, out any, ok ...int) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := scenario.MarshalPlain(in)
		if err != nil {
			return 0, &CallError{URL: c.base, What: what, Message: fmt.Sprintf("cannot encode the %s for the resource at %s: %v", what, c.base, err), Err: err}
		}
		body = bytes.NewReader(b)
	}
	if path != "/runs" {
		path = c.prefix + path
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, &CallError{URL: c.base, What: what, Message: fmt.Sprintf("cannot make the %s request for the resource at %q: %v", what, c.base, err), Err: err}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, c.transportError(ctx, what, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return resp.StatusCode, &CallError{URL: c.base, What: what, Message: fmt.Sprintf("resource at %s broke off its answer to the %s: %v", c.base, what, err), Err: err}
	}
	if len(data) > maxReply {
		return resp.StatusCode, &CallError{URL: c.base, What: what, Status: resp.StatusCode, Message: fmt.Sprintf("answered with more than %d MiB", maxReply>>20)}
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if err := dec.Decode(out); err != nil {
				return resp.StatusCode, &CallError{URL: c.base, What: what, Status: resp.StatusCode, Message: fmt.Sprintf("sent an answer that is not the JSON expected: %v", err), Err: err}
			}
			return resp.StatusCode, nil
		}
	}
	var eb errorBody
	if json.Unmarshal(data, &eb) != nil || eb.Error == "" {
		eb.Error = strings.TrimSpace(string(data))
		if len(eb.Error) > 200 {
			eb.Error = eb.Error[:200] + "…"
		}
		if eb.Error == "" {
			eb.Error = http.StatusText(resp.StatusCode)
		}
	}
	return resp.StatusCode, &CallError{URL: c.base, What: what, Status: resp.StatusCode, Message: eb.Error}
}

func (c *Client) transportError(ctx context.Context, what string, err error) error {
	var ne net.Error
	msg := fmt.Sprintf("cannot reach the resource at %s for the %s: %v", c.base, what, err)
	switch {
	case ctx.Err() != nil:
		msg = fmt.Sprintf("the %s at the resource at %s did not finish: %v", what, c.base, ctx.Err())
		err = ctx.Err()
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = fmt.Sprintf("resource at %s refused the connection: is it running? (%v)", c.base, err)
	case errors.As(err, &ne) && ne.Timeout():
		msg = fmt.Sprintf("resource at %s did not answer the %s in time: %v", c.base, what, err)
	}
	return &CallError{URL: c.base, What: what, Message: msg, Err: err}
}
