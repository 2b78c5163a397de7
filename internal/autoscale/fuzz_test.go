package autoscale

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Decide never panics, always answers within [min_replicas, max_replicas]
// with a reason, names the event that matches its answer, keeps its
// State's times at or before now and its boost within [1, MissBoostMax], whatever the samples, replicas and
// profile hold (NaN, infinities, negative rates, unknown GPU models,
// samples out of order or from the future).
func FuzzDecide(f *testing.F) {
	f.Add(uint16(2), uint16(14), 150.0, 120.0, 900.0, uint8(3), uint8(1), int64(0), []byte{10, 0, 0, 0, 50, 0, 0, 0})
	f.Add(uint16(1), uint16(0), 0.5, math.NaN(), math.Inf(1), uint8(40), uint8(0), int64(-600), []byte{255, 255, 255, 255, 255, 255, 255, 255, 0, 1})
	f.Add(uint16(0), uint16(1000), 1e9, -1.0, 1e-300, uint8(0), uint8(255), int64(1<<40), []byte{})
	f.Fuzz(func(t *testing.T, minR, span uint16, sloMs, t4, h100 float64, nReplicas, readyMask uint8, lowSinceAgo int64, raw []byte) {
		now := t0.Add(24 * time.Hour)
		spec := model.EndpointSpec{Name: "e", Tenant: "t", Model: "m",
			Resources:   model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: []string{"T4", "H100"}},
			MinReplicas: int(minR % 1001), SLO: model.SLO{P95: time.Duration(sloMs * float64(time.Millisecond))},
			Throughput: map[string]float64{"T4": t4, "H100": h100}}
		spec.MaxReplicas = spec.MinReplicas + int(span%1001)
		models := []string{"T4", "H100", "B200", ""}
		var replicas []Replica
		for i := range int(nReplicas) {
			replicas = append(replicas, Replica{GPUModel: models[i%len(models)], Ready: readyMask&(1<<(i%8)) != 0})
		}
		var window []Sample
		for len(raw) >= 8 {
			rate := math.Float32frombits(binary.LittleEndian.Uint32(raw))
			p95 := math.Float32frombits(binary.LittleEndian.Uint32(raw[4:]))
			ago := time.Duration(int8(raw[0])) * 15 * time.Second
			window = append(window, Sample{At: now.Add(-ago), RequestsPerSec: float64(rate), P95Ms: float64(p95),
				Utilisation: float64(raw[1]) / 255, Replicas: int(raw[2])})
			raw = raw[8:]
		}
		last := State{LowSince: now.Add(-time.Duration(lowSinceAgo)), LowMax: int(nReplicas) / 2, LastScaleIn: now.Add(-time.Duration(lowSinceAgo) / 2),
			Boost: sloMs / 100, LastMiss: now.Add(-time.Duration(lowSinceAgo) / 3)}
		d, next := Decide(spec, window, replicas, now, last)
		if d.Desired < spec.MinReplicas || d.Desired > spec.MaxReplicas {
			t.Fatalf("Desired %d outside [%d, %d]: %s", d.Desired, spec.MinReplicas, spec.MaxReplicas, d.Reason)
		}
		if d.Reason == "" {
			t.Fatal("no reason")
		}
		want := Hold
		if d.Desired > len(replicas) {
			want = ScaleOut
		} else if d.Desired < len(replicas) {
			want = ScaleIn
		}
		if d.Event != want {
			t.Fatalf("event %v for %d → %d replicas", d.Event, len(replicas), d.Desired)
		}
		if next.LowSince.After(now) || next.LastScaleIn.After(now) || next.LastMiss.After(now) {
			t.Fatalf("state %+v holds times after now", next)
		}
		if b := next.Boost; b != 0 && !(b >= 1 && b <= DefaultParams.MissBoostMax) {
			t.Fatalf("boost %g outside [1, %g]", b, DefaultParams.MissBoostMax)
		}
	})
}
