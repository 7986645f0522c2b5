package pgdsn

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// PsqlCommand is a psql command line, ready for a shell, that reaches the
// server dsn points at with search_path on schema: psql beside the TUI
// then sees the run's own tables. It carries host, port, user, database,
// the DSN's SSL settings and any options, and never a password:
// needsPassword says the server was given one (in the DSN or through
// PGPASSWORD), so psql needs PGPASSWORD set to it.
func PsqlCommand(dsn, schema string) (line string, needsPassword bool, err error) {
	if schema == "" {
		return "", false, errors.New("no schema to show in psql")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx quotes the string back; a password in it must not be shown.
		return "", false, fmt.Errorf("cannot read the connection string for psql: %s", Redact(err.Error()))
	}
	given, err := dsnSettings(dsn)
	if err != nil {
		return "", false, err
	}
	// A setting the DSN leaves out comes, for pgx as for libpq, from the
	// environment; psql in another terminal may not have that environment.
	setting := func(key, env string) string {
		if v, ok := given[key]; ok {
			return v
		}
		return os.Getenv(env)
	}

	var pairs []string
	add := func(k, v string) {
		if v != "" {
			pairs = append(pairs, k+"="+QuoteValue(v))
		}
	}
	add("host", cfg.Host)
	add("port", strconv.Itoa(int(cfg.Port)))
	add("user", cfg.User)
	add("dbname", cfg.Database)
	add("sslmode", setting("sslmode", "PGSSLMODE"))
	add("sslrootcert", setting("sslrootcert", "PGSSLROOTCERT"))
	add("sslcert", setting("sslcert", "PGSSLCERT"))
	add("sslkey", setting("sslkey", "PGSSLKEY"))
	opts := "-csearch_path=" + escapeOption(searchPathValue(schema))
	if o := cfg.RuntimeParams["options"]; o != "" {
		// The DSN's own options first: a later -c wins, so ours holds.
		opts = o + " " + opts
	}
	add("options", opts)

	needsPassword = given["password"] != "" || os.Getenv("PGPASSWORD") != ""
	return "psql " + shellWord(strings.Join(pairs, " ")), needsPassword, nil
}

// dsnSettings reads the settings a URL or key=value connection string
// spells out, with a URL's user:password counted as the password.
func dsnSettings(dsn string) (map[string]string, error) {
	out := map[string]string{}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			// url.Error quotes the URL, password and all: say less.
			return nil, errors.New("cannot read the connection URL for psql")
		}
		for k, vs := range u.Query() {
			if len(vs) > 0 {
				out[k] = vs[len(vs)-1]
			}
		}
		if u.User != nil {
			if p, ok := u.User.Password(); ok {
				out["password"] = p
			}
		}
		return out, nil
	}
	s := dsn
	for {
		s = strings.TrimLeft(s, " \t\n\r\f\v")
		if s == "" {
			return out, nil
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, errors.New("cannot read the connection string for psql: a setting has no =")
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t\n\r\f\v")
		var v strings.Builder
		quoted := strings.HasPrefix(s, "'")
		if quoted {
			s = s[1:]
		}
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				v.WriteByte(s[i])
				continue
			}
			if quoted && c == '\'' {
				i++
				break
			}
			if !quoted && strings.IndexByte(" \t\n\r\f\v", c) >= 0 {
				break
			}
			v.WriteByte(c)
		}
		out[key] = v.String()
		s = s[i:]
	}
}

// QuoteValue quotes a value for a libpq key=value connection string, the
// way libpq reads it back: as it is when it can, else in single quotes.
func QuoteValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\f\v'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// plainIdent is a name search_path takes as it is, without double quotes.
var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// searchPathValue is schema as search_path reads it: quoted unless it is
// a plain lower-case name, so capitals, commas and spaces survive.
func searchPathValue(schema string) string {
	if plainIdent.MatchString(schema) {
		return schema
	}
	return pgx.Identifier{schema}.Sanitize()
}

// escapeOption escapes a value inside libpq's options, which the server
// splits at unescaped white space.
func escapeOption(v string) string {
	var b strings.Builder
	for _, c := range v {
		if c == '\\' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// shellWord quotes s as one word for a POSIX shell: in double quotes,
// easy to read and to copy, unless it holds a ! (history expansion in an
// interactive bash) or a line break; then in single quotes.
func shellWord(s string) string {
	if strings.ContainsAny(s, "!\n") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s) + `"`
}
