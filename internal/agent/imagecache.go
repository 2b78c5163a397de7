package agent

import (
	"context"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/api/wire"
)

// This file is the agent's image cache. The images it pulled and keeps
// are reported with every heartbeat (heldImages), for the core's
// image-locality term. With Config.ImageCacheBytes, the
// images the host holds are kept under that size by removing, least
// recently used first, images this agent pulled for jobs and no instance
// of it uses now. Images it did not pull (the operator's) are never
// removed, nor one an instance started from within keepRecent (an
// instance whose pull just ended may not hold it yet); an image a
// container uses is refused by the runtime.

// keepRecent is how long after its last use an image is kept whatever
// the cache's size.
const keepRecent = 10 * time.Minute

// usedImage records that an instance is about to run image id, which it
// names ref.
func (a *Agent) usedImage(ref, id string, now time.Time) {
	a.imagesMu.Lock()
	a.imagesUsed[id] = now
	a.imageRefs[ref] = id
	a.imagesMu.Unlock()
}

// heldImages are the image references the host holds for jobs, as the
// heartbeats report them for the core's image-locality term: those this
// agent pulled and has not evicted, the most recently used first, at most
// wire.MaxHeartbeatImages; never nil.
func (a *Agent) heldImages() []string {
	a.imagesMu.Lock()
	defer a.imagesMu.Unlock()
	refs := make([]string, 0, len(a.imageRefs))
	for ref := range a.imageRefs {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool {
		ti, tj := a.imagesUsed[a.imageRefs[refs[i]]], a.imagesUsed[a.imageRefs[refs[j]]]
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return refs[i] < refs[j]
	})
	return refs[:min(len(refs), wire.MaxHeartbeatImages)]
}

// trimImages removes images past Config.ImageCacheBytes, once a pull made
// the cache larger.
func (a *Agent) trimImages(ctx context.Context, now time.Time) {
	store, ok := a.cfg.Runtime.(runtime.ImageStore)
	if a.cfg.ImageCacheBytes <= 0 || !ok {
		return
	}
	images, err := store.Images(ctx)
	if err != nil {
		a.log.Warn("image cache not trimmed", "err", err)
		return
	}
	inUse := map[string]bool{}
	a.mu.Lock()
	for _, p := range a.procs {
		if p.image != "" {
			inUse[p.image] = true
		}
	}
	a.mu.Unlock()
	a.imagesMu.Lock()
	for id, at := range a.imagesUsed {
		if now.Sub(at) < keepRecent {
			inUse[id] = true
		}
	}
	evict := evictions(images, a.imagesUsed, inUse, a.cfg.ImageCacheBytes)
	a.imagesMu.Unlock()
	for _, id := range evict {
		if err := store.RemoveImage(ctx, id); err != nil {
			a.log.Warn("image not evicted from the cache", "image", id, "err", err)
			continue
		}
		a.imagesMu.Lock()
		delete(a.imagesUsed, id)
		for ref, of := range a.imageRefs {
			if of == id {
				delete(a.imageRefs, ref)
			}
		}
		a.imagesMu.Unlock()
		a.log.Info("image evicted from the cache", "image", id, "limit_bytes", a.cfg.ImageCacheBytes)
	}
}

// evictions are the images to remove, in order, for the host's images to
// fit limit bytes: those in used (pulled by the agent) and not in inUse
// (used by an instance, or lately),
// least recently used first, as many as it takes (all it may, when that
// is not enough).
func evictions(images []runtime.Image, used map[string]time.Time, inUse map[string]bool, limit int64) []string {
	var total int64
	var candidates []runtime.Image
	for _, i := range images {
		total += i.Size
		if _, ours := used[i.ID]; ours && !inUse[i.ID] {
			candidates = append(candidates, i)
		}
	}
	sort.Slice(candidates, func(x, y int) bool {
		tx, ty := used[candidates[x].ID], used[candidates[y].ID]
		if !tx.Equal(ty) {
			return tx.Before(ty)
		}
		return candidates[x].ID < candidates[y].ID
	})
	var out []string
	for _, c := range candidates {
		if total <= limit {
			break
		}
		out = append(out, c.ID)
		total -= c.Size
	}
	return out
}
