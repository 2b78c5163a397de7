package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// laughs is the billion-laughs shape: each level is a list of ten aliases
// of the level before.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("name: lol\ntenant: t\nresources: {cpu: 1, gpus_per_instance: 0}\nenv:\n  L0: &l0 \"lol\"\n")
	b.WriteString("x:\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  - &l%d [%s]\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	return b.String()
}

func TestExpansionBound(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	env := &strings.Builder{}
	fmt.Fprintf(env, "name: env-bomb\ntenant: t\nresources: {cpu: 1, gpus_per_instance: 0}\nenv:\n  A0: &v %s\n", big)
	for i := 1; i < 3000; i++ {
		fmt.Fprintf(env, "  A%d: *v\n", i)
	}
	for _, tc := range []struct {
		name, data string
		line       int // of the alias that passes the limit; 0: any
	}{
		{"billion laughs", laughs(9), 0},
		// 3000 env values that alias one 200 KiB string: 600 MiB if copied.
		{"env aliases", env.String(), 25},
		{"list of aliased jobs", "- &j {name: a, tenant: t, command: [" + strings.Repeat("xxxxxxxxxx, ", 5000) + "x]}\n" +
			strings.Repeat("- *j\n", 400), 0},
		{"documents add up", strings.Repeat("name: a\ntenant: t\nenv: {A: &a "+strings.Repeat("y", 64<<10)+", B: *a, C: *a, D: *a, E: *a}\n---\n", 40), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := ParseJobs("bomb.yaml", []byte(tc.data), nil)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %v to refuse", took)
			}
			var e *Error
			if !errors.Is(err, ErrTooLarge) || !errors.As(err, &e) {
				t.Fatalf("error = %v, want a *spec.Error matching ErrTooLarge", err)
			}
			if !strings.Contains(e.Msg, "4 MiB") || !strings.Contains(e.Msg, "limit:") || e.Line == 0 {
				t.Errorf("error %q (line %d) does not name the limit and a line", err, e.Line)
			}
			if tc.line != 0 && e.Line != tc.line {
				t.Errorf("error at line %d, want the alias at line %d: %v", e.Line, tc.line, err)
			}
		})
	}
}

// Files without aliases are never refused for their size, and aliases that
// stay small are fine.
func TestExpansionAllowed(t *testing.T) {
	long := "name: a\ntenant: t\nresources: {cpu: 1, gpus_per_instance: 0}\nenv:\n"
	for i := 0; i < 3; i++ {
		long += fmt.Sprintf("  K%d: %s\n", i, strings.Repeat("v", 1600<<10)) // 4.7 MiB, over MaxExpanded
	}
	for _, tc := range []struct{ name, data string }{
		{"4.7 MiB without aliases", long},
		{"few laughs", laughs(3)},
		{"anchors reused", "- &j {name: a, tenant: t, resources: {cpu: 1, gpus_per_instance: 0}}\n" + strings.Repeat("- *j\n", 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJobs("ok.yaml", []byte(tc.data), nil)
			if errors.Is(err, ErrTooLarge) {
				t.Fatalf("refused as too large: %v", err)
			}
		})
	}
}

func TestExpansionSelfReference(t *testing.T) {
	_, err := ParseJobs("loop.yaml", []byte("name: &a [x, *a]\n"), nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want a *spec.Error", err)
	}
}

func TestSetValueExpansion(t *testing.T) {
	_, err := ParseJobs("job.yaml", []byte("name: a\ntenant: t\n"), []string{"env.A=" + "[&a " + strings.Repeat("z", 1<<20) + ", *a, *a, *a, *a]"})
	if err == nil || !strings.Contains(err.Error(), "limit:") {
		t.Fatalf("error = %v, want the --set value refused naming the limit", err)
	}
}

// FuzzDecodeAliases feeds documents built from anchors and aliases: a
// reader either refuses them with an *Error or returns what it read, and an
// expansion over the limit is always refused.
func FuzzDecodeAliases(f *testing.F) {
	f.Add(uint8(9), uint8(10), uint16(3), "lol")
	f.Add(uint8(2), uint8(3), uint16(100), "x")
	f.Add(uint8(4), uint8(40), uint16(1000), "abc")
	f.Add(uint8(1), uint8(1), uint16(0), "")
	f.Fuzz(func(t *testing.T, levels, fan uint8, width uint16, word string) {
		levels, fan = levels%12, fan%64
		var b strings.Builder
		fmt.Fprintf(&b, "name: a\ntenant: t\nresources: {cpu: 1, gpus_per_instance: 0}\nenv:\n  W: &l0 %q\nx:\n",
			strings.Repeat(word, int(width)%4096))
		size := float64(len(word)*(int(width)%4096) + 1) // what one copy of level 0 costs, at least
		for i := 1; i <= int(levels); i++ {
			items := make([]string, fan)
			for k := range items {
				items[k] = fmt.Sprintf("*l%d", i-1)
			}
			fmt.Fprintf(&b, "  - &l%d [%s]\n", i, strings.Join(items, ", "))
			size *= float64(fan)
		}
		data := b.String()
		start := time.Now()
		_, err := ParseJobs("f.yaml", []byte(data), nil)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("took %v", took)
		}
		if err == nil {
			t.Fatal("a job with an unknown field x was accepted")
		}
		checkFuzzError(t, err)
		if size > float64(expandLimit(len(data))) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("expands to at least %.0f bytes, over the limit, but the error is %v", size, err)
		}
	})
}
