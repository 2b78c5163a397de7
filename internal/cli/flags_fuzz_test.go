package cli

import (
	"strings"
	"testing"
	"time"
)

// The command line's own small parsers: never a panic, and either a value
// that keeps its promise or an error that names the flag.
func FuzzFlagParsers(f *testing.F) {
	for _, s := range []string{"42-51", "1,5,9", "7", "9-3", "a-b", "", "examples/running/batch.yaml@2h", "x@-1h", "x@",
		"now", "+24h", "2027-03-01", "2027-03-01T00:00:00Z", "+-5m", "yesterday"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if seeds, err := parseSeeds(s); err == nil {
			if len(seeds) == 0 || len(seeds) > len(s)+10_000 {
				t.Fatalf("parseSeeds(%q) = %d seeds", s, len(seeds))
			}
		} else if !strings.Contains(err.Error(), "--seeds") {
			t.Fatalf("parseSeeds(%q): %v does not name --seeds", s, err)
		}
		if path, age, err := pathAge(s); err == nil {
			if age < 0 || (strings.Contains(s, "@") && !strings.HasPrefix(s, path+"@")) {
				t.Fatalf("pathAge(%q) = %q, %s", s, path, age)
			}
		} else if !strings.Contains(err.Error(), "--running") {
			t.Fatalf("pathAge(%q): %v does not name --running", s, err)
		}
		if _, err := parseWhen("--start", s, now); err != nil && !strings.Contains(err.Error(), "--start") {
			t.Fatalf("parseWhen(%q): %v does not name --start", s, err)
		}
	})
}
