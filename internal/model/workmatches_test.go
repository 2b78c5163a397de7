package model

import "testing"

// TestWorkMatchesIsMatchesOfWorkLabels: the shortcut agrees with building
// the merged labels, whichever level a key comes from.
func TestWorkMatchesIsMatchesOfWorkLabels(t *testing.T) {
	p := &Partition{Labels: map[string]string{"workload": "batch", "team": "ai"}}
	tn := &Tenant{Labels: map[string]string{"workload": "training"}}
	s := &JobSpec{Labels: map[string]string{"team": "speech"}}
	for _, sel := range []map[string]string{
		nil, {"workload": "training"}, {"workload": "batch"}, {"team": "speech"}, {"team": "ai"},
		{"workload": "training", "team": "speech"}, {"missing": "x"},
	} {
		for _, tc := range []struct {
			p *Partition
			t *Tenant
		}{{p, tn}, {p, nil}, {nil, tn}, {nil, nil}} {
			want := Matches(WorkLabels(tc.p, tc.t, s), sel)
			if got := WorkMatches(tc.p, tc.t, s, sel); got != want {
				t.Errorf("sel %v, partition %v, tenant %v: WorkMatches %v, Matches(WorkLabels) %v", sel, tc.p != nil, tc.t != nil, got, want)
			}
		}
	}
}
