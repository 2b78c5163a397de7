package model

import (
	"strings"
	"testing"
)

// TestCheckClass: a tenant uses the classes the tenants file names, else
// spot and standard, and reserved too when its partition has a guarantee;
// inside its own reservation any class; an unknown tenant none.
func TestCheckClass(t *testing.T) {
	ten := &Tenancy{
		Partitions: []Partition{{Name: "guaranteed", Guarantees: []Guarantee{{Region: "r", GPUModel: "H100", GPUs: 8}}},
			{Name: "shared"}},
		Tenants: []Tenant{{Name: "team", Partition: "guaranteed"}, {Name: "hobbyist", Partition: "shared"},
			{Name: "granted", Partition: "shared", Classes: []Class{ClassStandard, ClassReserved}},
			{Name: "capped", Partition: "guaranteed", Classes: []Class{ClassSpot}}},
		Reservations: []Reservation{{Name: "mine", Owner: "hobbyist"}, {Name: "theirs", Owner: "team"}},
	}
	for _, tc := range []struct {
		tenant      string
		class       Class
		reservation string
		want        string // "" when allowed, else part of the refusal
	}{
		{"team", ClassReserved, "", ""},
		{"hobbyist", ClassStandard, "", ""},
		{"hobbyist", ClassReserved, "", `class "reserved" is not allowed for tenant "hobbyist" (allowed: spot, standard)`},
		{"hobbyist", ClassReserved, "mine", ""},
		{"hobbyist", ClassReserved, "theirs", "not allowed"},
		{"granted", ClassReserved, "", ""},
		{"granted", ClassSpot, "", "(allowed: standard, reserved)"},
		{"capped", ClassStandard, "", "(allowed: spot)"},
		{"nobody", ClassSpot, "", "(allowed: )"},
	} {
		err := ten.CheckClass(tc.tenant, tc.class, tc.reservation)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s asks for %s (reservation %q): %v, want it allowed", tc.tenant, tc.class, tc.reservation, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s asks for %s (reservation %q): %v, want %q", tc.tenant, tc.class, tc.reservation, err, tc.want)
		case err != nil && !strings.HasPrefix(err.Error(), "priority"):
			t.Errorf("refusal %q does not name priority", err)
		}
	}
}

func TestParseClass(t *testing.T) {
	for _, c := range Classes {
		if got, err := ParseClass(strings.ToUpper(c.String())); err != nil || got != c {
			t.Errorf("ParseClass(%q) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseClass("reserved:5"); err == nil {
		t.Error("ParseClass takes a value")
	}
	if _, err := ParseClass("standrd"); err == nil || !strings.Contains(err.Error(), "did you mean standard?") {
		t.Errorf("ParseClass(standrd): %v, want a suggestion", err)
	}
}
