package engine

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

// ResourceClient speaks to a resource over HTTP. It is safe for concurrent use.
type ResourceClient struct {
	base string
	hc   *http.Client
}

// ResourceError is a request the resource answered with an error status.
type ResourceError struct {
	URL string
	// What names the request for a person: "reset", "write", ...
	What    string
	Status  int
	Message string
}

func (e *ResourceError) Error() string {
	return fmt.Sprintf("resource at %s refused the %s: %s (HTTP %d)", e.URL, e.What, e.Message, e.Status)
}

// maxReply bounds a response body; a view holds every effect since the last
// reset, each with a value of up to 64 KiB.
const maxReply = 64 << 20

// NewResourceClient talks to the resource at baseURL. A nil hc gets a client
// that keeps connections alive (a replay makes many small requests).
func NewResourceClient(baseURL string, hc *http.Client) *ResourceClient {
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
	return &ResourceClient{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// URL is the resource's base URL.
func (c *ResourceClient) URL() string { return c.base }

type pairBody struct {
	Epoch int64           `json:"epoch"`
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
func (c *ResourceClient) Reset(ctx context.Context, epoch int64, value json.RawMessage) (ResourceView, error) {
	var v ResourceView
	_, err := c.do(ctx, http.MethodPut, "/state", "reset", pairBody{Epoch: epoch, Value: nullIfEmpty(value)}, &v, http.StatusOK)
	return v, err
}

// Write sends one write. A write the fencing policy refuses is not an error:
// the result has Accepted false and a Reason.
func (c *ResourceClient) Write(ctx context.Context, actor string, epoch int64, value json.RawMessage) (WriteResult, error) {
	var wire struct {
		WriteResult
		// Args arrive as [epoch, value]; decoded by hand so a large epoch
		// stays an exact int64 instead of becoming a float64.
		Args []json.RawMessage `json:"args"`
	}
	_, err := c.do(ctx, http.MethodPost, "/writes", "write", pairBody{Epoch: epoch, Value: nullIfEmpty(value), Actor: actor}, &wire, http.StatusOK, http.StatusConflict)
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
func (c *ResourceClient) State(ctx context.Context) (ResourceView, error) {
	var v ResourceView
	_, err := c.do(ctx, http.MethodGet, "/state", "state read", nil, &v, http.StatusOK)
	return v, err
}

// SetFencing changes the resource's policy for later writes.
func (c *ResourceClient) SetFencing(ctx context.Context, f scenario.Fencing) error {
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
func (c *ResourceClient) Fencing(ctx context.Context) (scenario.Fencing, error) {
	var got fencingBody
	_, err := c.do(ctx, http.MethodGet, "/fencing", "fencing read", nil, &got, http.StatusOK)
	return got.Fencing, err
}

// Healthy asks the resource to check its database.
func (c *ResourceClient) Healthy(ctx context.Context) error {
	var got struct {
		OK bool `json:"ok"`
	}
	_, err := c.do(ctx, http.MethodGet, "/healthz", "health check", nil, &got, http.StatusOK)
	if err == nil && !got.OK {
		err = fmt.Errorf("resource at %s says it is not healthy", c.base)
	}
	return err
}

// do sends one request and decodes a reply whose status is one of ok into
// out; any other status becomes a *ResourceError.
func (c *ResourceClient) do(ctx context.Context, method, path, what string, in, out any, ok ...int) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := scenario.MarshalPlain(in)
		if err != nil {
			return 0, fmt.Errorf("cannot encode the %s for the resource at %s: %w", what, c.base, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, fmt.Errorf("cannot make the %s request for the resource at %q: %w", what, c.base, err)
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
		return resp.StatusCode, fmt.Errorf("resource at %s broke off its answer to the %s: %w", c.base, what, err)
	}
	if len(data) > maxReply {
		return resp.StatusCode, fmt.Errorf("resource at %s answered the %s with more than %d MiB", c.base, what, maxReply>>20)
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if err := dec.Decode(out); err != nil {
				return resp.StatusCode, fmt.Errorf("resource at %s sent an answer to the %s that is not the JSON expected: %w", c.base, what, err)
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
	return resp.StatusCode, &ResourceError{URL: c.base, What: what, Status: resp.StatusCode, Message: eb.Error}
}

func (c *ResourceClient) transportError(ctx context.Context, what string, err error) error {
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("the %s at the resource at %s did not finish: %w", what, c.base, ctx.Err())
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("resource at %s refused the connection: is it running? (%w)", c.base, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("resource at %s did not answer the %s in time: %w", c.base, what, err)
	}
	return fmt.Errorf("cannot reach the resource at %s for the %s: %w", c.base, what, err)
}
