package sched

import (
	"slices"

	"github.com/allot-dev/allot/internal/model"
)

// Image locality. A job that runs from an image starts sooner on a node
// that holds the image already: its agent need not pull it. The agents
// report the images their nodes hold (Snapshot.Images) and the Chooser
// adds ImageLocalityWeight to the score of each candidate node that holds
// the job's image, after the scorer (and its normalisation) had its say.
// The term is a tie-break, not a preference that competes with the
// others: it is added only among nodes that passed every filter (fit,
// GPU model, reservation, power), after gang and fabric logic chose the
// domain and leaf groups, and it is far below any difference the
// scorers make between two nodes that differ in what is free (see
// ImageLocalityWeight). A job without an image, or with one no node
// holds, is placed exactly as without the term: the Chooser does not look
// at the nodes' images for it.
//
// Idle nodes of one group are alike to every scorer, so a cycle looks at
// the first idle node of each group only (candidates); for a job whose
// image a node of the group holds it also looks at the first idle node
// that holds it, so that the term can choose it.

// ImageLocalityWeight is the image-locality term: what a node holding the
// job's image adds to its score. Every scorer but BinPack and random
// scores in integers (a difference of at least 1); BinPack's smallest
// difference in GPU fullness is 1/64000 of a score (a milli-GPU on a node
// of 64 GPUs), 16 times the term, so the term breaks only ties and
// differences in CPU fullness under a ten-thousandth of the node's cores
// (BinPack's CPU term is a hundredth of the share). Random's scores are
// noise: the term decides where they are closer than it.
const ImageLocalityWeight = 1e-6

// setImages records which images each node holds (Snapshot.Images: node
// name -> image references); a node not in the fleet is ignored.
func (st *state) setImages(images map[string][]string) {
	for _, n := range st.nodes {
		n.Images = nil
	}
	for _, g := range st.groups {
		g.images = nil
	}
	st.imageIDs = nil
	if len(images) == 0 {
		return
	}
	st.imageIDs = map[string]int32{}
	names := make([]string, 0, len(images))
	for name := range images {
		names = append(names, name)
	}
	slices.Sort(names) // ids in one order whatever the map's
	for _, name := range names {
		i, ok := st.nodeByName[name]
		if !ok {
			continue
		}
		var held []int32
		for _, ref := range images[name] {
			id, ok := st.imageIDs[ref]
			if !ok {
				id = int32(len(st.imageIDs) + 1)
				st.imageIDs[ref] = id
			}
			held = append(held, id)
		}
		slices.Sort(held)
		held = slices.Compact(held)
		st.nodes[i].Images = held
		g := st.groups[st.groupOf[i]]
		g.images = mergeIDs(g.images, held)
	}
}

// mergeIDs is the sorted union of sorted a and b.
func mergeIDs(a, b []int32) []int32 {
	a = append(a, b...)
	slices.Sort(a)
	return slices.Compact(a)
}

// imageOf is the id of the image j runs from when a node holds it, else
// 0: the Chooser then skips the term.
func (st *state) imageOf(j *model.Job) int32 {
	if st.imageIDs == nil || j.Spec.Container == nil {
		return 0
	}
	return st.imageIDs[j.Spec.Container.Image]
}

// holdsImage reports whether a node of the group holds image id.
func (g *group) holdsImage(id int32) bool {
	_, found := slices.BinarySearch(g.images, id)
	return found
}

// HoldsImage reports whether the node holds image id (Request.Image).
func (n *NodeInfo) HoldsImage(id int32) bool {
	_, found := slices.BinarySearch(n.Images, id)
	return found
}
