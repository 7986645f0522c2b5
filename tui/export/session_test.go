package export

import "testing"

func TestShortPathsNamesTheRestByWhatDiffers(t *testing.T) {
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{nil, ""},
		{[]string{"out/a.json"}, "out/a.json"},
		{[]string{"out/a.json", "out/a.md", "out/a.cast"}, "out/a.json, .md and .cast"},
		{[]string{"out/a.json", "elsewhere/b.md"}, "out/a.json and elsewhere/b.md"},
	} {
		if got := ShortPaths(c.paths); got != c.want {
			t.Errorf("ShortPaths(%q) = %q, want %q", c.paths, got, c.want)
		}
	}
}
