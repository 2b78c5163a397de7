package model

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"time"
)

// CheckpointPart is one rank's part of one save of a gang's checkpoint:
// the ranks of a data- or model-parallel run each write their own shard,
// on their own node's disk unless the fleet shares one. A save is a
// job-level fact only once every rank's part of it is in.
type CheckpointPart struct {
	Rank    int
	Attempt int // the attempt whose rank saved it
	// Step names the save among the rank's saves, the same for every rank:
	// the path relative to the rank's checkpoint directory as the agent
	// reports it (step-00000120), else the path's last element.
	Step string
	Path string
	// Node is the node whose disk holds Path; empty when every host
	// reaches it (a shared checkpoint root, a URL).
	Node string
	At   time.Time
}

// MaxPendingParts bounds the parts of unfinished saves kept per rank: a
// rank that runs ahead of the others by more saves than this has its
// oldest forgotten, and a save completes only from what is kept.
const MaxPendingParts = 4

// urlScheme matches a checkpoint named by a URL (s3://bucket/ckpt) rather
// than by a path.
var urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`)

// IsCheckpointURL reports whether a checkpoint is a URL, which no node's
// disk holds and every attempt reads as it is.
func IsCheckpointURL(p string) bool { return urlScheme.MatchString(p) }

// StepOf is the name a part's save goes by when the reporter gives none:
// the last element of its path.
func StepOf(p string) string { return path.Base(p) }

// AddPart records part p of a save by a rank of the current attempt,
// whose world (instances) is world. When every rank 0..world-1 has
// reported its part of one save, that save becomes the job's checkpoint
// (CheckpointParts, with CheckpointPath, CheckpointNode and
// LastCheckpoint as its rank 0's part and its last part's time) and it
// returns true; parts of that save and of older ones are dropped. Parts of
// other attempts' saves are dropped as they can no longer complete.
func (s *JobStatus) AddPart(p CheckpointPart, world int) bool {
	kept := s.PartsPending[:0:0]
	for _, q := range s.PartsPending {
		if q.Attempt == p.Attempt && !(q.Rank == p.Rank && q.Step == p.Step) {
			kept = append(kept, q)
		}
	}
	kept = append(kept, p)
	// Keep the newest MaxPendingParts of each rank.
	perRank := map[int]int{}
	for i := len(kept) - 1; i >= 0; i-- {
		perRank[kept[i].Rank]++
		if perRank[kept[i].Rank] > MaxPendingParts {
			kept = slices.Delete(kept, i, i+1)
		}
	}
	s.PartsPending = kept
	// A save completes when every rank has a part of it; of several that
	// complete at once the newest (by its rank 0's part) wins.
	var best []CheckpointPart
	for _, q := range kept {
		if q.Rank != 0 || (best != nil && !q.At.After(best[0].At)) {
			continue
		}
		set := make([]CheckpointPart, world)
		n := 0
		for _, r := range kept {
			if r.Step == q.Step && r.Rank >= 0 && r.Rank < world && set[r.Rank].Path == "" {
				set[r.Rank] = r
				n++
			}
		}
		if n == world {
			best = set
		}
	}
	if best == nil {
		return false
	}
	last := best[0].At
	for _, q := range best {
		if q.At.After(last) {
			last = q.At
		}
	}
	s.CheckpointParts = best
	s.CheckpointPath, s.CheckpointNode, s.LastCheckpoint = best[0].Path, best[0].Node, last
	// Drop the parts of this save and of older ones: each rank's saves come
	// in order.
	kept = s.PartsPending[:0]
	for _, q := range s.PartsPending {
		if q.At.After(best[q.Rank].At) {
			kept = append(kept, q)
		}
	}
	s.PartsPending = kept
	return true
}

// SetCheckpoint records one path that serves every rank (a single
// instance's checkpoint, or one a gang writes to storage all its nodes
// share), in place of any parts.
func (s *JobStatus) SetCheckpoint(path, node string, at time.Time) {
	s.CheckpointPath, s.CheckpointNode, s.LastCheckpoint = path, node, at
	s.CheckpointParts, s.PartsPending = nil, nil
}

// Resume is what rank Rank of an attempt resumes from.
type Resume struct {
	Path string // "" for nothing
	Node string // the node whose disk holds Path; "" when any host reaches it
}

// ResumeOf says what each rank of an attempt placed on nodes (rank i on
// nodes[i]) resumes from: all from the job's checkpoint, or none of them,
// with why, never a mix. A part on a node's disk reaches only the rank
// placed on that node; a part without a node reaches every rank. A
// checkpoint of parts of another world size than len(nodes) serves no
// one. It returns nil and "" when the job has no checkpoint.
func (s *JobStatus) ResumeOf(nodes []string) ([]Resume, string) {
	world := len(nodes)
	if s.CheckpointPath == "" || world == 0 {
		return nil, ""
	}
	out := make([]Resume, world)
	if len(s.CheckpointParts) == 0 {
		// One path for every rank.
		for r, n := range nodes {
			if s.CheckpointNode != "" && n != s.CheckpointNode {
				why := fmt.Sprintf("the checkpoint %s was saved on node %s, not on %s", s.CheckpointPath, s.CheckpointNode, n)
				if world > 1 {
					why += fmt.Sprintf(", where rank %d runs: every rank starts from the beginning", r)
				}
				return nil, why
			}
			out[r] = Resume{Path: s.CheckpointPath, Node: s.CheckpointNode}
		}
		return out, ""
	}
	if len(s.CheckpointParts) != world {
		return nil, fmt.Sprintf("the checkpoint %s has %d parts and this attempt %d ranks: every rank starts from the beginning",
			s.CheckpointParts[0].Step, len(s.CheckpointParts), world)
	}
	for r, p := range s.CheckpointParts {
		if p.Node != "" && p.Node != nodes[r] {
			return nil, fmt.Sprintf("rank %d's part of checkpoint %s is on node %s's disk, and rank %d runs on %s: no checkpoint all ranks reach, so every rank starts from the beginning",
				r, p.Step, p.Node, r, nodes[r])
		}
		out[r] = Resume{Path: p.Path, Node: p.Node}
	}
	return out, ""
}

// CheckpointNodes are the nodes whose disks hold a part of the job's
// checkpoint, by rank: the node rank i's part lies on, or "" where any
// node reaches it. Nil when the checkpoint has no parts on a node.
func (s *JobStatus) CheckpointNodes() []string {
	if len(s.CheckpointParts) == 0 {
		if s.CheckpointNode == "" {
			return nil
		}
		return []string{s.CheckpointNode}
	}
	var out []string
	for _, p := range s.CheckpointParts {
		out = append(out, p.Node)
	}
	if slices.IndexFunc(out, func(n string) bool { return n != "" }) < 0 {
		return nil
	}
	return out
}
