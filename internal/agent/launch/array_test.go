package launch

import (
	"slices"
	"strings"
	"testing"
)

// TestEnvironArrayIndex checks that a member of a job array sees its index
// as ALLOT_ARRAY_INDEX (index 0 included), and that a job outside any
// array cannot set the variable itself.
func TestEnvironArrayIndex(t *testing.T) {
	for _, idx := range []int{0, 7} {
		i := idx
		env := Environ(Spec{JobID: "j", Attempt: 1, ArrayIndex: &i, Env: map[string]string{"ALLOT_ARRAY_INDEX": "99"}})
		if want := "ALLOT_ARRAY_INDEX=" + []string{"0", "7"}[min(idx, 1)]; !slices.Contains(env, want) {
			t.Errorf("index %d: environment lacks %s: %v", idx, want, env)
		}
	}
	env := Environ(Spec{JobID: "j", Attempt: 1, Env: map[string]string{"ALLOT_ARRAY_INDEX": "3"}})
	for _, kv := range env {
		if strings.HasPrefix(kv, "ALLOT_ARRAY_INDEX=") {
			t.Errorf("a job in no array has %s", kv)
		}
	}
}
