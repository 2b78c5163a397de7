package scenario_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/scenario"
)

// gangStream is the small scenario with its training stream drawn from
// testdata/gangs.csv: jobs of 1, 16, 24 and 32 GPUs (1 to 4 instances).
func gangStream(t *testing.T, elastic *scenario.ElasticGen) *scenario.File {
	t.Helper()
	f := small(t)
	tr := &f.Training[0]
	tr.Trace, tr.MaxGPUs, tr.GPUHoursPerHour, tr.Elastic = "gangs.csv", 64, 40, elastic
	return f
}

func el(min, max, step int) *model.Elastic {
	return &model.Elastic{MinInstances: min, MaxInstances: max, Step: step}
}

// A training stream's jobs carry the elasticity they take in an elastic
// run: by default the gangs, up to twice their size one instance at a
// time; as the stream's block says otherwise. The jobs themselves are the
// same, rigid, whatever the block.
func TestTrainingStreamsElasticity(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block *scenario.ElasticGen
		want  map[int]*model.Elastic // by base instances
	}{
		{"default", nil, map[int]*model.Elastic{1: nil, 2: el(2, 4, 1), 3: el(3, 6, 1), 4: el(4, 8, 1)}},
		{"every job, to three times, two at a time", &scenario.ElasticGen{FromInstances: 1, MaxFactor: 3, Step: 2},
			map[int]*model.Elastic{1: el(1, 3, 2), 2: el(2, 6, 2), 3: el(3, 9, 2), 4: el(4, 12, 2)}},
		{"a step too large for the smaller gangs", &scenario.ElasticGen{FromInstances: 2, MaxFactor: 2, Step: 4},
			map[int]*model.Elastic{1: nil, 2: nil, 3: nil, 4: el(4, 8, 4)}},
		{"a step that ends below the factor", &scenario.ElasticGen{FromInstances: 3, MaxFactor: 2, Step: 2},
			map[int]*model.Elastic{1: nil, 2: nil, 3: el(3, 5, 2), 4: el(4, 8, 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := gangStream(t, tc.block)
			work, err := f.Workload(f.Seed, 1)
			if err != nil {
				t.Fatal(err)
			}
			rigid, err := gangStream(t, nil).Workload(f.Seed, 1)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]int{}
			for i, a := range work {
				if !strings.HasPrefix(a.Job.Name, "trace-") {
					if a.Elastic != nil {
						t.Errorf("%s is elastic: %v", a.Job.Name, a.Elastic)
					}
					continue
				}
				n := a.Job.Resources.InstanceCount
				seen[n]++
				if want := tc.want[n]; !reflect.DeepEqual(a.Elastic, want) {
					t.Errorf("%s (%d instances): elastic %v, want %v", a.Job.Name, n, a.Elastic, want)
				}
				if a.Job.Elastic != nil || !reflect.DeepEqual(a.Job, rigid[i].Job) {
					t.Errorf("%s: the job differs from the rigid workload's: %+v", a.Job.Name, a.Job)
				}
			}
			for n := 1; n <= 4; n++ {
				if seen[n] == 0 {
					t.Errorf("no job of %d instances drawn: %v", n, seen)
				}
			}
		})
	}
}

// Options.Elastic switches elasticity on for the same file: the core
// resizes the gangs, and the result says so and its figures add the
// resizes and what they lost.
func TestElasticRunReportsResizes(t *testing.T) {
	f := gangStream(t, nil)
	names := func(rs []*scenario.Result) map[string]bool {
		m := map[string]bool{}
		for _, fig := range scenario.Figures(rs) {
			m[fig.Name] = true
		}
		return m
	}
	for _, elastic := range []bool{false, true} {
		res, err := scenario.Run(context.Background(), f, scenario.Options{Strategy: model.StrategyHybrid, Elastic: elastic, CheckIncremental: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Elastic != elastic {
			t.Errorf("elastic %v: the result says %v", elastic, res.Elastic)
		}
		// The gangs grow into what the stream leaves idle, each growth
		// losing the work since the gang's checkpoint.
		if resized := res.Grows > 0 && res.ResizeLostGPUHours > 0; resized != elastic {
			t.Errorf("elastic %v: %d growths, %d shrinks, %.1f GPU-h lost to them", elastic, res.Grows, res.Shrinks, res.ResizeLostGPUHours)
		}
		figs := names([]*scenario.Result{res})
		for _, name := range []string{"resizes: grow", "resizes: shrink", "GPU-h lost to resizes", "GPU-h lost to preemption"} {
			if figs[name] != elastic {
				t.Errorf("elastic %v: figure %q listed: %v", elastic, name, figs[name])
			}
		}
	}
}
