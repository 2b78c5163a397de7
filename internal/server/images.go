package server

import (
	"fmt"
	"maps"
	"slices"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/model"
)

// The images each node holds, as its agent's heartbeats report them (the
// image references it pulled and keeps in its cache): what the core's
// image-locality term reads (sched.Snapshot.Images). They are the
// leader's, in memory, like the heartbeats themselves; a new leader
// learns them from the next heartbeat of each agent, and placement is
// only a little worse meanwhile.

// checkImages checks a heartbeat's images: at most wire.MaxHeartbeatImages image
// references, each one as a job names it. The error names the field.
func checkImages(images []string) error {
	if len(images) > wire.MaxHeartbeatImages {
		return refuse(CodeInvalidSpec, "images", "%d images, over the limit of %d", len(images), wire.MaxHeartbeatImages)
	}
	for i, ref := range images {
		if _, err := model.ParseImage(ref); err != nil {
			return refuse(CodeInvalidSpec, fmt.Sprintf("images[%d]", i), "%v", err)
		}
	}
	return nil
}

// SetNodeImages records the images node name holds, as its agent's
// heartbeat reported them. The map the core reads is replaced, never
// changed, so that a cycle's Snapshot keeps the one it took and the
// scheduling session sees the same map while nothing changed.
func (s *Server) SetNodeImages(name string, images []string) error {
	if err := checkImages(images); err != nil {
		return err
	}
	if _, ok := s.world().nodes[name]; !ok {
		return refuse(CodeNotFound, "", "no node %q in the fleet", name)
	}
	held := slices.Clone(images)
	slices.Sort(held)
	held = slices.Compact(held)
	s.imagesMu.Lock()
	defer s.imagesMu.Unlock()
	old := s.nodeImages.Load()
	if old != nil && slices.Equal((*old)[name], held) {
		return nil
	}
	next := map[string][]string{}
	if old != nil {
		maps.Copy(next, *old)
	}
	if len(held) == 0 {
		delete(next, name)
	} else {
		next[name] = held
	}
	s.nodeImages.Store(&next)
	return nil
}

// imagesHeld is what the core reads of the nodes' images: nil for none.
func (s *Server) imagesHeld() map[string][]string {
	if m := s.nodeImages.Load(); m != nil && len(*m) > 0 {
		return *m
	}
	return nil
}

// NodeImages are the images node name's agent last reported it holds,
// sorted; nil for none.
func (s *Server) NodeImages(name string) []string {
	if m := s.nodeImages.Load(); m != nil {
		return slices.Clone((*m)[name])
	}
	return nil
}
