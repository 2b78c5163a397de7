package scenario_test

import (
	"errors"
	"os"
	"testing"

	"github.com/allot-dev/allot/internal/sim/scenario"
	"github.com/allot-dev/allot/internal/spec"
)

// FuzzParse holds Parse to its contract: no panic, and every error a
// *spec.Error.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/small.yaml", "../../../examples/scenarios/week.yaml"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("name: x\nduration: 1h\nstart: 2026-01-01\nendpoints: [{curve: {peak_rps: .nan}}]"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scenario.Parse("fuzz.yaml", data)
		if err != nil {
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *spec.Error", err, err)
			}
			return
		}
		if sc.Name == "" {
			t.Fatal("a scenario without a name parsed")
		}
	})
}
