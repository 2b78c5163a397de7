package model

import (
	"strings"
	"testing"
)

func TestNearest(t *testing.T) {
	names := []string{"H100", "A100", "T4", "B200"}
	for _, tc := range []struct{ word, want string }{
		{"h100", "H100"}, // letter case first
		{"H10", "H100"},
		{"A1000", "A100"},
		{"H100", ""}, // a name itself needs no suggestion
		{"MI300", ""},
		{"", ""},
		{"t4", "T4"},
	} {
		if got := Nearest(tc.word, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := DidYouMean("standrd", []string{"spot", "standard", "reserved"}); got != " (did you mean standard?)" {
		t.Errorf("DidYouMean = %q", got)
	}
}

func FuzzNearest(f *testing.F) {
	f.Add("h100", "H100")
	f.Add("", "")
	f.Add("\xff\xfe", "é")
	f.Fuzz(func(t *testing.T, word, name string) {
		got := Nearest(word, []string{name, "H100"})
		if got != "" && got != name && got != "H100" {
			t.Fatalf("Nearest(%q) = %q, not a candidate", word, got)
		}
	})
}

func TestSuggestedNames(t *testing.T) {
	c := BuiltinCatalog()
	_, err := c.Lookup("nd96-h100x8-ib")
	if err == nil || !strings.Contains(err.Error(), "(did you mean ND96-H100x8-IB?)") {
		t.Errorf("SKU in the wrong case: %v", err)
	}
	s := JobSpec{Name: "x", Tenant: "t", Resources: Resources{InstanceCount: 1, GPUsPerInstance: 1},
		Placement: Placement{Interconnect: "InfiniBand"}}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "did you mean infiniband?") {
		t.Errorf("interconnect in the wrong case: %v", err)
	}
	if _, err := ParsePriority("Reserverd"); err == nil || !strings.Contains(err.Error(), "did you mean reserved?") {
		t.Errorf("misspelt class: %v", err)
	}
}

// TestValidateReportsEveryField checks that Validate names every field
// at fault, not only the first.
func TestValidateReportsEveryField(t *testing.T) {
	s := JobSpec{Resources: Resources{InstanceCount: 0, GPUsPerInstance: 99}, Retry: Retry{MaxRetries: -1}}
	err := s.Validate()
	for _, f := range []string{"name: ", "tenant: ", "resources.instance_count: ", "resources.gpus_per_instance: ", "retry.max_retries: "} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("error lacks %q: %v", f, err)
		}
	}
}
