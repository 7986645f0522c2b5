// Package pgdsn reads PostgreSQL connection strings, URLs and key=value
// alike: it hides their passwords for printing and writes the psql command
// line that reaches the same server. It imports no more than pgx, so the
// engine and the renderer can use it without the providers of pgserver.
package pgdsn

import (
	"net/url"
	"strings"
)

// Redact hides the password in a URL or key=value connection string. It
// edits the text in place rather than parsing and re-printing it, so it also
// masks passwords in strings a parser would reject.
func Redact(dsn string) string {
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		return scheme + "://" + redactURL(rest)
	}
	return redactKeywords(dsn)
}

const redactedMask = "xxxxx"

// isPasswordKey names the connection settings that hold secrets.
func isPasswordKey(k string) bool {
	return strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword")
}

// redactURL masks the userinfo password and password query values of a URL
// without its scheme.
func redactURL(rest string) string {
	head, query, hasQuery := strings.Cut(rest, "?")
	// The last @ ends the userinfo: an unescaped @ in a password comes earlier.
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		if user, _, hasPW := strings.Cut(head[:at], ":"); hasPW {
			head = user + ":" + redactedMask + head[at:]
		}
	}
	if !hasQuery {
		return head
	}
	params := strings.Split(query, "&")
	for i, kv := range params {
		k, _, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil && isPasswordKey(uk) {
			params[i] = k + "=" + redactedMask
		}
	}
	return head + "?" + strings.Join(params, "&")
}

// redactKeywords masks password values in libpq key=value syntax, where a
// value may be 'quoted' and hold spaces and backslash escapes.
func redactKeywords(dsn string) string {
	var b strings.Builder
	i := 0
	for i < len(dsn) {
		eq := strings.IndexByte(dsn[i:], '=')
		if eq < 0 {
			break
		}
		eq += i
		key := strings.TrimSpace(dsn[i:eq])
		if f := strings.Fields(key); len(f) > 0 {
			key = f[len(f)-1]
		}
		// The value starts after the = and any spaces.
		start := eq + 1
		for start < len(dsn) && dsn[start] == ' ' {
			start++
		}
		end := valueEnd(dsn, start)
		b.WriteString(dsn[i:start])
		if isPasswordKey(key) {
			b.WriteString(redactedMask)
		} else {
			b.WriteString(dsn[start:end])
		}
		i = end
	}
	b.WriteString(dsn[i:])
	return b.String()
}

// valueEnd finds where a key=value value that starts at start ends.
func valueEnd(s string, start int) int {
	quoted := start < len(s) && s[start] == '\''
	i := start
	if quoted {
		i++
	}
	for i < len(s) {
		switch c := s[i]; {
		case c == '\\':
			i += 2
			continue
		case quoted && c == '\'':
			return i + 1
		case !quoted && (c == ' ' || c == '\t' || c == '\n'):
			return i
		}
		i++
	}
	return len(s)
}
