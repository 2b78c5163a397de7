package sched_test

import (
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

const trainImage = "registry.example/team/train:1"

// The image-locality term breaks ties only: a job goes to a node that
// holds its image when the nodes are otherwise alike (idle nodes of one
// group, which a cycle otherwise reduces to the first), and not when
// another node is better packed, nor across what gang placement decides.
// Without the nodes' images, or for a job without an image, placement is
// as before.
func TestImageLocality(t *testing.T) {
	holds := map[string][]string{"h-l2-2": {"registry.example/other:2", trainImage}, "t4-2": {trainImage}}
	tests := []struct {
		name   string
		world  func() *World
		images map[string][]string
		want   map[string][]string // job -> its nodes, by rank
	}{{
		name: "idle nodes alike: the one holding the image",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 2).Models("H100").Image(trainImage)
			return w
		},
		images: holds,
		want:   map[string][]string{"j": {"h-l2-2"}},
	}, {
		name: "no node's images known: the lowest rank, as before",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 2).Models("H100").Image(trainImage)
			return w
		},
		want: map[string][]string{"j": {"h-l1-1"}},
	}, {
		name: "a job without an image: as before",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 2).Models("H100")
			return w
		},
		images: holds,
		want:   map[string][]string{"j": {"h-l1-1"}},
	}, {
		name: "an image no node holds: as before",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 2).Models("H100").Image("registry.example/nobody:1")
			return w
		},
		images: holds,
		want:   map[string][]string{"j": {"h-l1-1"}},
	}, {
		name: "a better packed node wins over the image (fragmentation)",
		world: func() *World {
			w := twoLeaves()
			w.Job("busy", "bob").GPUs(1, 4).Running(Epoch, On("h-l1-2", 0, 1, 2, 3))
			w.Job("j", "alice").GPUs(1, 2).Models("H100").Image(trainImage)
			return w
		},
		images: holds,
		want:   map[string][]string{"busy": {"h-l1-2"}, "j": {"h-l1-2"}},
	}, {
		name: "the GPU model the job asks for wins over the image (fit)",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 2).Models("H100").Image(trainImage)
			return w
		},
		images: map[string][]string{"t4-2": {trainImage}},
		want:   map[string][]string{"j": {"h-l1-1"}},
	}, {
		name: "a gang stays on one leaf whatever its nodes hold",
		world: func() *World {
			w := twoLeaves()
			w.Job("g", "alice").GPUs(2, 8).Models("H100").Interconnect(model.FabricInfiniBand).Image(trainImage)
			return w
		},
		images: map[string][]string{"h-l1-1": {trainImage}, "h-l2-1": {trainImage}},
		want:   map[string][]string{"g": {"h-l1-1", "h-l1-2"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world()
			if err := w.Validate(); err != nil {
				t.Fatal(err)
			}
			snap := w.Snapshot()
			snap.Images = tc.images
			core := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
			p := core.Schedule(snap, now)
			// The Session the server plans on decides alike.
			if _, err := sched.NewIncremental(core, true).Plan(snap, now); err != nil {
				t.Fatal(err)
			}
			for job, nodes := range tc.want {
				if job == "busy" {
					continue
				}
				b, ok := bindOf(p, job)
				if !ok {
					t.Fatalf("%s not bound: %+v", job, p.Pending)
				}
				var got []string
				for _, n := range b.Nodes {
					got = append(got, n.Node)
				}
				if len(got) != len(nodes) {
					t.Fatalf("%s on %v, want %v", job, got, nodes)
				}
				for i := range got {
					if got[i] != nodes[i] {
						t.Errorf("%s on %v, want %v", job, got, nodes)
						break
					}
				}
			}
		})
	}
}

// An Incremental told of other images between cycles plans as a cycle
// from scratch does.
func TestImageLocalityIncremental(t *testing.T) {
	core := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
	inc := sched.NewIncremental(core, true)
	for i, images := range []map[string][]string{nil, {"h-l2-1": {trainImage}}, {"h-l2-1": {trainImage}}, {"h-l1-2": {trainImage}}, nil} {
		w := twoLeaves()
		w.Job("j", "alice").GPUs(1, 1).Models("H100").Image(trainImage)
		snap := w.Snapshot()
		snap.Images = images
		p, err := inc.Plan(snap, now)
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		b, ok := bindOf(p, "j")
		want := "h-l1-1"
		for n := range images {
			want = n
		}
		if !ok || b.Nodes[0].Node != want {
			t.Errorf("cycle %d: bound %v %+v, want on %s", i, ok, b.Nodes, want)
		}
	}
}
