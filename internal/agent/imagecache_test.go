package agent

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/agent/runtime/runtimetest"
)

func TestEvictions(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	images := []runtime.Image{{ID: "os", Size: 100}, {ID: "a", Size: 50}, {ID: "b", Size: 50}, {ID: "c", Size: 50}, {ID: "d", Size: 50}}
	used := map[string]time.Time{"a": t0.Add(3 * time.Hour), "b": t0.Add(time.Hour), "c": t0.Add(2 * time.Hour), "d": t0}
	for _, tc := range []struct {
		name  string
		limit int64
		inUse map[string]bool
		want  []string
	}{
		{"fits", 300, nil, nil},
		{"one", 250, nil, []string{"d"}},
		{"least recently used first", 180, nil, []string{"d", "b", "c"}},
		{"in use kept", 180, map[string]bool{"d": true}, []string{"b", "c", "a"}},
		{"never the operator's", 10, nil, []string{"d", "b", "c", "a"}},
		{"all in use", 10, map[string]bool{"a": true, "b": true, "c": true, "d": true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evictions(images, used, tc.inUse, tc.limit); !slices.Equal(got, tc.want) {
				t.Errorf("evictions = %q, want %q", got, tc.want)
			}
		})
	}
}

// imageStore is a fake runtime with an image store.
type imageStore struct {
	runtimetest.Fake
	images  []runtime.Image
	removed []string
}

func (s *imageStore) Images(context.Context) ([]runtime.Image, error) { return s.images, nil }

func (s *imageStore) RemoveImage(_ context.Context, id string) error {
	s.removed = append(s.removed, id)
	return nil
}

// The agent trims the images it pulled past its limit, keeping those its
// instances hold and those used lately.
func TestTrimImages(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	st := &imageStore{images: []runtime.Image{{ID: "old", Size: 60}, {ID: "held", Size: 60}, {ID: "fresh", Size: 60}, {ID: "os", Size: 60}}}
	a := &Agent{cfg: Config{Runtime: st, ImageCacheBytes: 100}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		procs: map[key]*proc{{job: "j"}: {image: "held"}}, imagesUsed: map[string]time.Time{
			"old": now.Add(-3 * time.Hour), "held": now.Add(-4 * time.Hour), "fresh": now.Add(-time.Minute)},
		imageRefs: map[string]string{"reg.example/old:1": "old", "reg.example/held:1": "held", "reg.example/fresh:1": "fresh",
			"reg.example/fresh:latest": "fresh"}}
	// The heartbeats report them, the most recently used first.
	if got, want := a.heldImages(), []string{"reg.example/fresh:1", "reg.example/fresh:latest", "reg.example/old:1", "reg.example/held:1"}; !slices.Equal(got, want) {
		t.Errorf("held images %q, want %q", got, want)
	}
	a.trimImages(context.Background(), now)
	if !slices.Equal(st.removed, []string{"old"}) {
		t.Errorf("removed %q, want only old (held is in use, fresh was used a minute ago, os is not the agent's)", st.removed)
	}
	if _, ok := a.imagesUsed["old"]; ok {
		t.Error("an evicted image is still counted as the agent's")
	}
	if got, want := a.heldImages(), []string{"reg.example/fresh:1", "reg.example/fresh:latest", "reg.example/held:1"}; !slices.Equal(got, want) {
		t.Errorf("held images after the eviction %q, want %q", got, want)
	}
	a.cfg.ImageCacheBytes = 0
	st.removed = nil
	a.trimImages(context.Background(), now.Add(time.Hour))
	if st.removed != nil {
		t.Errorf("without a limit, removed %q", st.removed)
	}
}
