package model

import "strings"

// Nearest returns the name among names that a person most likely meant by
// word: one equal to it but for letter case, else the closest by edit
// distance when it is close enough (at most a third of word's length, and
// at least 1), else "". It returns "" when word is itself one of names.
func Nearest(word string, names []string) string {
	best, bestD := "", 0
	for _, n := range names {
		if n == word {
			return ""
		}
		if strings.EqualFold(n, word) {
			return n
		}
	}
	limit := max(1, len([]rune(word))/3)
	lw := strings.ToLower(word)
	for _, n := range names {
		d := editDistance(lw, strings.ToLower(n), limit)
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

// DidYouMean is " (did you mean NAME?)" for the Nearest name, or "".
func DidYouMean(word string, names []string) string {
	if n := Nearest(word, names); n != "" {
		return " (did you mean " + n + "?)"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, or a number
// above limit as soon as it is sure to exceed it.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// RegionNames are the names of the fleet's regions, for suggestions.
func (f *Fleet) RegionNames() []string {
	out := make([]string, len(f.Regions))
	for i, r := range f.Regions {
		out[i] = r.Name
	}
	return out
}

// GPUModels are the GPU models of the fleet's nodes, each once, in the
// order first met.
func (f *Fleet) GPUModels() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range f.Nodes {
		if sku, ok := f.Catalog[n.SKU]; ok && sku.GPUModel != "" && !seen[sku.GPUModel] {
			seen[sku.GPUModel] = true
			out = append(out, sku.GPUModel)
		}
	}
	return out
}
