package cli

import (
	"net/url"
	"strings"
)

// minSecret is the shortest password scrubbed from output: replacing a one-
// or two-letter password everywhere would garble every message instead.
const minSecret = 3

func (a *App) AddSecret(s string) {
	if len(s) < minSecret {
		return
	}
	// The UI's provider may report a server from its own goroutine.
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, x := range a.secrets {
		if x == s {
			return
		}
	}
	a.secrets = append(a.secrets, s)
	// Also its URL-escaped form, as it appears inside a connection URL.
	if e := url.QueryEscape(s); e != s {
		a.secrets = append(a.secrets, e)
	}
	if e := url.PathEscape(s); e != s {
		a.secrets = append(a.secrets, e)
	}
}

// AddSecretsFromDSN remembers the password a connection string carries, in
// URL or key=value form.
func (a *App) AddSecretsFromDSN(dsn string) {
	if dsn == "" {
		return
	}
	if strings.Contains(dsn, "://") {
		if u, err := url.Parse(dsn); err == nil {
			if u.User != nil {
				if p, ok := u.User.Password(); ok {
					a.AddSecret(p)
				}
			}
			a.AddSecret(u.Query().Get("password"))
		}
		return
	}
	for _, f := range strings.Fields(dsn) {
		if k, v, ok := strings.Cut(f, "="); ok && strings.EqualFold(k, "password") {
			a.AddSecret(strings.Trim(v, "'"))
		}
	}
}

// Scrub hides every known password in s.
func (a *App) Scrub(s string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, x := range a.secrets {
		s = strings.ReplaceAll(s, x, "xxxxx")
	}
	return s
}
