package model

import (
	"errors"
	"testing"
	"time"
)

func TestParsePriority(t *testing.T) {
	tests := []struct {
		in   string
		want Priority
		bad  bool
	}{
		{"spot", Priority{Class: ClassSpot}, false},
		{"", Priority{Class: ClassStandard}, false},
		{"Reserved:7", Priority{Class: ClassReserved, Value: 7}, false},
		{"standard:-3", Priority{Class: ClassStandard, Value: -3}, false},
		{"urgent", Priority{}, true},
		{"spot:high", Priority{}, true},
	}
	for _, tc := range tests {
		got, err := ParsePriority(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("ParsePriority(%q) = %v, %v", tc.in, got, err)
		}
	}
	if !(Priority{Class: ClassSpot, Value: 9}).Less(Priority{Class: ClassStandard}) {
		t.Error("a class outranks any value inside a lower class")
	}
}

func TestLifecycle(t *testing.T) {
	for _, ok := range [][2]State{{StateQueued, StatePreparing}, {StatePreparing, StateRunning}, {StateRunning, StatePreempted},
		{StatePreempted, StateQueued}, {StateRunning, StateTimedOut}, {StateRunning, StateSucceeded}, {StateRunning, StatePreparing}} {
		if !CanTransition(ok[0], ok[1]) {
			t.Errorf("%s → %s refused", ok[0], ok[1])
		}
	}
	for _, bad := range [][2]State{{StateSucceeded, StateRunning}, {StateQueued, StateSucceeded}, {StateCanceled, StateQueued}} {
		if CanTransition(bad[0], bad[1]) {
			t.Errorf("%s → %s allowed", bad[0], bad[1])
		}
	}
	if !StateTimedOut.Terminal() || StatePreempted.Terminal() || !StatePreempted.Holds() || StateQueued.Holds() {
		t.Error("Terminal/Holds")
	}
}

func TestJobSpecValidateNamesTheField(t *testing.T) {
	base := JobSpec{Name: "j", Tenant: "t", Resources: Resources{InstanceCount: 1, GPUsPerInstance: 1}, Priority: Priority{Class: ClassStandard}}
	tests := []struct {
		field string
		mut   func(*JobSpec)
	}{
		{"name", func(s *JobSpec) { s.Name = "" }},
		{"resources.instance_count", func(s *JobSpec) { s.Resources.InstanceCount = 0 }},
		{"resources.gpu_milli", func(s *JobSpec) { s.Resources.GPUMilli = 250; s.Resources.GPUsPerInstance = 2 }},
		{"resources", func(s *JobSpec) { s.Resources.GPUsPerInstance = 0 }},
		{"placement.interconnect", func(s *JobSpec) { s.Placement.Interconnect = "copper" }},
		{"retry.timeout", func(s *JobSpec) { s.Retry.Timeout = -time.Second }},
		{"resources.gpu_models[1]", func(s *JobSpec) { s.Resources.GPUModels = []string{"H100", ""} }},
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	for _, tc := range tests {
		s := base
		tc.mut(&s)
		var fe *FieldError
		if err := s.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("want an error on %s, got %v", tc.field, err)
		}
	}
}

func TestGuaranteePercentResolvesOnceAndAgain(t *testing.T) {
	f := &Fleet{Catalog: BuiltinCatalog(), Regions: []Region{{Name: "r", Residency: "us", Clusters: []Cluster{{Name: "c", Fabric: FabricInfiniBand}}}},
		Nodes: []Node{{Name: "n1", SKU: "ND96-H100x8-IB", Region: "r", Cluster: "c", Health: NodeReady},
			{Name: "n2", SKU: "ND96-H100x8-IB", Region: "r", Cluster: "c", Health: NodeReady}}}
	ten := &Tenancy{Partitions: []Partition{{Name: "p", Guarantees: []Guarantee{{Region: "r", GPUModel: "H100", Percent: 90}}}}}
	for i := 0; i < 2; i++ {
		if err := ten.Validate(f); err != nil {
			t.Fatalf("validate #%d: %v", i+1, err)
		}
	}
	if got := ten.Partitions[0].Guarantees[0].GPUs; got != 14 {
		t.Fatalf("90 %% of 16 GPUs = %d, want 14", got)
	}
	ten.Partitions[0].Guarantees[0].GPUs = 3
	if err := ten.Validate(f); err == nil {
		t.Fatal("gpus and percent disagreeing was accepted")
	}
}

func TestReservationWindow(t *testing.T) {
	t0 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Reservation{Start: t0, End: t0.Add(time.Hour)}
	if r.ActiveAt(t0.Add(-time.Second)) || !r.ActiveAt(t0) || r.ActiveAt(t0.Add(time.Hour)) {
		t.Fatal("window is [start, end)")
	}
	if !(Reservation{}).ActiveAt(t0) {
		t.Fatal("an open reservation is always active")
	}
}
