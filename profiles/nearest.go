package profiles

// Nearest is the candidate closest to typed by edit distance, when it is
// close enough to be a typing slip (at most 2 edits, and at most a third
// of the longer name), and not typed itself; "" when none is. The command
// line's "did you mean" and config.yaml's use it.
func Nearest(typed string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := editDistance(typed, c)
		if d > 0 && d < bestD && d*3 <= max(len(c), len(typed)) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes (names,
// flags and keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
