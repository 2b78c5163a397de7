package model

import (
	"errors"
	"testing"
)

func TestJobSpecValidateCommandAndNames(t *testing.T) {
	base := func() JobSpec {
		return JobSpec{Name: "train", Tenant: "acme", Command: []string{"python", "train.py"},
			Resources: Resources{InstanceCount: 1, GPUsPerInstance: 1}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*JobSpec)
		field string // "" when valid
	}{
		{"valid", func(*JobSpec) {}, ""},
		{"no command field", func(s *JobSpec) { s.Command = nil }, ""},
		{"empty command", func(s *JobSpec) { s.Command = []string{} }, "command"},
		{"empty program", func(s *JobSpec) { s.Command = []string{"", "x"} }, "command[0]"},
		{"blank program", func(s *JobSpec) { s.Command = []string{" \t"} }, "command[0]"},
		{"empty argument is fine", func(s *JobSpec) { s.Command = []string{"echo", ""} }, ""},
		{"newline in an argument is fine", func(s *JobSpec) { s.Command = []string{"sh", "-c", "a\nb"} }, ""},
		{"escape in name", func(s *JobSpec) { s.Name = "job\x1b[2J" }, "name"},
		{"newline in name", func(s *JobSpec) { s.Name = "a\nb" }, "name"},
		{"bidi override in name", func(s *JobSpec) { s.Name = "abc\u202egpj.exe" }, "name"},
		{"invalid UTF-8 in name", func(s *JobSpec) { s.Name = "a\xffb" }, "name"},
		{"unicode name is fine", func(s *JobSpec) { s.Name = "entraînement 训练 �" }, ""},
		{"control in reservation", func(s *JobSpec) { s.Placement.Reservation = "r\x07" }, "placement.reservation"},
		{"control in region", func(s *JobSpec) { s.Placement.Regions = []string{"eastus", "w\x00"} }, "placement.regions[1]"},
		{"control in gpu model", func(s *JobSpec) { s.Resources.GPUModels = []string{"H100\r"} }, "resources.gpu_models[0]"},
		{"excluded nodes", func(s *JobSpec) { s.Placement.ExcludeNodes = []string{"n1", "n2"} }, ""},
		{"empty excluded node", func(s *JobSpec) { s.Placement.ExcludeNodes = []string{"n1", ""} }, "placement.exclude_nodes[1]"},
		{"control in excluded node", func(s *JobSpec) { s.Placement.ExcludeNodes = []string{"n\x1b"} }, "placement.exclude_nodes[0]"},
		{"after any", func(s *JobSpec) { s.After, s.AfterCondition = []string{"prepare"}, AfterAny }, ""},
		{"after notok", func(s *JobSpec) { s.After, s.AfterCondition = []string{"prepare"}, AfterNotOK }, ""},
		{"a condition without after", func(s *JobSpec) { s.AfterCondition = AfterAny }, "after_condition"},
		{"an unknown condition", func(s *JobSpec) { s.After, s.AfterCondition = []string{"prepare"}, "always" }, "after_condition"},
		{"nodes", func(s *JobSpec) { s.Placement.Nodes = []string{"n1"} }, ""},
		{"empty node", func(s *JobSpec) { s.Placement.Nodes = []string{""} }, "placement.nodes[0]"},
		{"too many nodes", func(s *JobSpec) { s.Placement.Nodes = make([]string, MaxPlacementNodes+1) }, "placement.nodes"},
		{"too many excluded nodes", func(s *JobSpec) { s.Placement.ExcludeNodes = make([]string, MaxPlacementNodes+1) }, "placement.exclude_nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			err := s.Validate()
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Fatalf("Validate: %v, want an error of field %s", err, tc.field)
			}
		})
	}
}

func TestReservationValidateNames(t *testing.T) {
	f := &Fleet{Catalog: Catalog{"S": {Name: "S", GPUs: 1, GPUModel: "T4"}}, Regions: []Region{{Name: "r"}},
		Nodes: []Node{{Name: "n", SKU: "S", Region: "r"}}}
	ok := Reservation{Name: "res", Owner: "acme", SKU: "S", Region: "r", Count: 1}
	if err := ok.Validate(f, nil); err != nil {
		t.Fatalf("valid reservation: %v", err)
	}
	bad := ok
	bad.Name = "res\x1b]0;pwned\x07"
	var fe *FieldError
	if err := bad.Validate(f, nil); !errors.As(err, &fe) || fe.Field != "name" {
		t.Fatalf("control characters in name: %v, want an error of field name", err)
	}
}
