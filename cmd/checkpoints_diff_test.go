package cmd

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The edit script of lineDiff gives back both sides, and the hunks of
// writeUnified, applied to the old lines, give the new ones.
func TestLineDiffAndHunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	header := regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)
	for n := range 300 {
		gen := func() []string {
			var out []string
			for range rng.IntN(30) {
				out = append(out, fmt.Sprintf("line %d\n", rng.IntN(8)))
			}
			return out
		}
		a, b := gen(), gen()
		var ga, gb []string
		for _, op := range lineDiff(a, b) {
			if op.kind != '+' {
				ga = append(ga, op.line)
			}
			if op.kind != '-' {
				gb = append(gb, op.line)
			}
		}
		if strings.Join(ga, "") != strings.Join(a, "") || strings.Join(gb, "") != strings.Join(b, "") {
			t.Fatalf("case %d: the script does not give back both sides", n)
		}
		var buf bytes.Buffer
		writeUnified(&buf, a, b)
		// Apply the hunks to a.
		var out []string
		pos := 0
		lines := strings.SplitAfter(buf.String(), "\n")
		for i := 0; i < len(lines) && lines[i] != ""; i++ {
			m := header.FindStringSubmatch(strings.TrimSuffix(lines[i], "\n"))
			if m == nil {
				t.Fatalf("case %d: %q is no hunk header:\n%s", n, lines[i], buf.String())
			}
			start, _ := strconv.Atoi(m[1])
			count := 1
			if m[2] != "" {
				count, _ = strconv.Atoi(m[2])
			}
			if count == 0 {
				start++
			}
			out = append(out, a[pos:start-1]...)
			pos = start - 1
			for i+1 < len(lines) && lines[i+1] != "" && lines[i+1][0] != '@' {
				i++
				l := lines[i]
				switch l[0] {
				case ' ':
					out = append(out, l[1:])
					pos++
				case '-':
					pos++
				case '+':
					out = append(out, l[1:])
				}
			}
		}
		out = append(out, a[pos:]...)
		if strings.Join(out, "") != strings.Join(b, "") {
			t.Fatalf("case %d: the hunks applied to the old lines do not give the new:\n%s", n, buf.String())
		}
	}
}
