package main

import (
	"net/url"
	"strings"
)

// minSecret is the shortest password scrubbed from output: replacing a one-
// or two-letter password everywhere would garble every message instead.
const minSecret = 3

func (a *app) addSecret(s string) {
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

// addSecretsFromDSN remembers the password a connection string carries, in
// URL or key=value form.
func (a *app) addSecretsFromDSN(dsn string) {
	if dsn == "" {
		return
	}
	if strings.Contains(dsn, "://") {
		if u, err := url.Parse(dsn); err == nil {
			if u.User != nil {
				if p, ok := u.User.Password(); ok {
					a.addSecret(p)
				}
			}
			a.addSecret(u.Query().Get("password"))
		}
		return
	}
	for _, f := range strings.Fields(dsn) {
		if k, v, ok := strings.Cut(f, "="); ok && strings.EqualFold(k, "password") {
			a.addSecret(strings.Trim(v, "'"))
		}
	}
}

// scrub hides every known password in s.
func (a *app) scrub(s string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, x := range a.secrets {
		s = strings.ReplaceAll(s, x, "xxxxx")
	}
	return s
}
