package pgdsn_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine/pgdsn"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgresql://u:se@cr:et@h/db", "postgresql://u:xxxxx@h/db"},
		{"postgres://u:p%40ss@h:notaport/db", "postgres://u:xxxxx@h:notaport/db"},
		{"postgres://h/db?user=u&password=secret&sslpassword=s2", "postgres://h/db?user=u&password=xxxxx&sslpassword=xxxxx"},
		{"host=h user=u password=secret dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"host=h password = 'sec ret\\'s' dbname=db", "host=h password = xxxxx dbname=db"},
		{"host=h PASSWORD=secret", "host=h PASSWORD=xxxxx"},
		{"host=/tmp/x port=5432", "host=/tmp/x port=5432"},
		{"", ""},
	} {
		if got := pgdsn.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
