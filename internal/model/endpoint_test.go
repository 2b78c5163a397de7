package model

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestEndpointSpecValidate(t *testing.T) {
	base := func() EndpointSpec {
		return EndpointSpec{Name: "chat", Tenant: "copilot", Model: "llama-3-8b", Command: DefaultEndpointCommand,
			Resources:   Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: []string{"T4", "H100"}},
			Priority:    Priority{Class: ClassStandard},
			MinReplicas: 2, MaxReplicas: 16, SLO: SLO{P95: 150 * time.Millisecond},
			Placement:  Placement{Regions: []string{"eastus", "westus"}, Residency: "us"},
			Throughput: map[string]float64{"T4": 120, "H100": 900, "A100": 500},
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*EndpointSpec)
		field string // "" when valid
		msg   string
	}{
		{"valid", func(*EndpointSpec) {}, "", ""},
		{"fraction of a GPU", func(s *EndpointSpec) { s.Resources.GPUMilli = 250 }, "", ""},
		{"one replica, fixed", func(s *EndpointSpec) { s.MinReplicas, s.MaxReplicas = 1, 1 }, "", ""},
		{"reservation", func(s *EndpointSpec) { s.Placement.Reservation = "copilot-h100" }, "", ""},
		{"a profile entry for a model not allowed now", func(s *EndpointSpec) { s.Resources.GPUModels = []string{"H100"} }, "", ""},
		{"no model", func(s *EndpointSpec) { s.Model = "" }, "model", "must name the served model"},
		{"control character in model", func(s *EndpointSpec) { s.Model = "llama\x1b[2J" }, "model", "non-printable"},
		{"no name", func(s *EndpointSpec) { s.Name = "" }, "name", "must not be empty"},
		{"no tenant", func(s *EndpointSpec) { s.Tenant = "" }, "tenant", "must not be empty"},
		{"gang", func(s *EndpointSpec) { s.Resources.InstanceCount = 2 }, "resources.instance_count", "a replica is one instance"},
		{"no GPU", func(s *EndpointSpec) { s.Resources.GPUsPerInstance, s.Resources.CPUMilli = 0, 4000 }, "resources.gpus_per_instance", "needs a GPU"},
		{"fraction of two GPUs", func(s *EndpointSpec) { s.Resources.GPUsPerInstance, s.Resources.GPUMilli = 2, 500 }, "resources.gpu_milli", "needs gpus_per_instance: 1"},
		{"interconnect", func(s *EndpointSpec) { s.Placement.Interconnect = FabricInfiniBand }, "placement.interconnect", "not a gang"},
		{"spot is allowed when asked", func(s *EndpointSpec) { s.Priority = Priority{Class: ClassSpot} }, "", ""},
		{"unknown class", func(s *EndpointSpec) { s.Priority = Priority{Class: 7} }, "priority", "unknown class"},
		{"zero min", func(s *EndpointSpec) { s.MinReplicas = 0 }, "min_replicas", "between 1 and 1000"},
		{"max below min", func(s *EndpointSpec) { s.MaxReplicas = 1 }, "max_replicas", "between min_replicas (2) and 1000"},
		{"max too large", func(s *EndpointSpec) { s.MaxReplicas = 1001 }, "max_replicas", "between min_replicas"},
		{"no SLO", func(s *EndpointSpec) { s.SLO.P95 = 0 }, "slo.p95_ms", "must be above 0"},
		{"negative SLO", func(s *EndpointSpec) { s.SLO.P95 = -time.Millisecond }, "slo.p95_ms", "must be above 0"},
		{"SLO too long", func(s *EndpointSpec) { s.SLO.P95 = time.Hour }, "slo.p95_ms", "at most 600000 ms"},
		{"no gpu models", func(s *EndpointSpec) { s.Resources.GPUModels = nil }, "resources.gpu_models", "must list"},
		{"empty gpu model", func(s *EndpointSpec) { s.Resources.GPUModels = []string{"T4", ""} }, "resources.gpu_models[1]", "must not be empty"},
		{"no profile", func(s *EndpointSpec) { s.Throughput = nil }, "throughput", "must give"},
		{"allowed model without an entry", func(s *EndpointSpec) { s.Resources.GPUModels = []string{"T4", "B200"} }, "throughput",
			"no entry for B200, which resources.gpu_models[1] allows"},
		{"zero throughput", func(s *EndpointSpec) { s.Throughput["A100"] = 0 }, "throughput.A100", "above 0"},
		{"negative throughput", func(s *EndpointSpec) { s.Throughput["T4"] = -5 }, "throughput.T4", "above 0"},
		{"NaN throughput", func(s *EndpointSpec) { s.Throughput["T4"] = math.NaN() }, "throughput.T4", "above 0"},
		{"infinite throughput", func(s *EndpointSpec) { s.Throughput["T4"] = math.Inf(1) }, "throughput.T4", "at most"},
		{"empty model in profile", func(s *EndpointSpec) { s.Throughput[""] = 3 }, "throughput", "must not be empty"},
		{"control character in profile", func(s *EndpointSpec) { s.Throughput["T4\r"] = 3 }, "throughput", "non-printable"},
		{"empty command", func(s *EndpointSpec) { s.Command = []string{} }, "command", "must not be empty"},
		{"bad region", func(s *EndpointSpec) { s.Placement.Regions = []string{"eastus", ""} }, "placement.regions[1]", "must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			err := s.Validate()
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.field == "":
			case !errors.As(err, &fe) || fe.Field != tc.field:
				t.Fatalf("Validate: %v, want an error of field %s", err, tc.field)
			case !strings.Contains(fe.Msg, tc.msg):
				t.Fatalf("Validate: %q, want a message containing %q", fe.Msg, tc.msg)
			}
		})
	}
}

func TestThroughputModelsSorted(t *testing.T) {
	s := EndpointSpec{Throughput: map[string]float64{"T4": 1, "H100": 2, "A100": 3}}
	if got := strings.Join(s.ThroughputModels(), ","); got != "A100,H100,T4" {
		t.Errorf("ThroughputModels = %s, want A100,H100,T4", got)
	}
}
