package ballast

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines around each hunk, as diff -u and git.
const diffContext = 3

// unifiedDiff renders the line difference of a and b as a unified diff (git's format,
// `--- a/NAME` / `+++ b/NAME`); empty when they are equal. The edit script is a longest
// common subsequence over lines after the common head and tail are cut off, which is
// exact and cheap for manifests: Ballast's edits touch a few lines of a file. An
// absolute name is shown without the a/ and b/ prefixes.
func unifiedDiff(name string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	x, y := splitLines(string(a)), splitLines(string(b))
	ops := diffLines(x, y)
	var out strings.Builder
	if strings.HasPrefix(name, "/") {
		fmt.Fprintf(&out, "--- %s\n+++ %s\n", name, name)
	} else {
		fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	}
	// Group the script into hunks: changes closer than 2×context share one.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*diffContext {
				break
			}
		}
		stop := min(end+diffContext+1, len(ops))
		hunk := ops[start:stop]
		aStart, bStart := hunk[0].a, hunk[0].b
		var aLen, bLen int
		for _, op := range hunk {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range hunk {
			out.WriteByte(op.kind)
			out.WriteString(strings.TrimSuffix(op.text, "\n"))
			out.WriteByte('\n')
			if !strings.HasSuffix(op.text, "\n") {
				out.WriteString("\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return out.String()
}

func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after every newline; a last line without one is kept as is.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffOp is one line of the edit script: ' ' kept, '-' removed, '+' added; a and b are
// the 0-based positions in the old and new text where the line stands (or would).
type diffOp struct {
	kind byte
	text string
	a, b int
}

func diffLines(x, y []string) []diffOp {
	head := 0
	for head < len(x) && head < len(y) && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < len(x)-head && tail < len(y)-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	mx, my := x[head:len(x)-tail], y[head:len(y)-tail]
	// lcs[i][j] = length of the longest common subsequence of mx[i:] and my[j:].
	n, m := len(mx), len(my)
	lcs := make([]int32, (n+1)*(m+1))
	at := func(i, j int) int32 { return lcs[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			v := max(at(i+1, j), at(i, j+1))
			if mx[i] == my[j] {
				v = at(i+1, j+1) + 1
			}
			lcs[i*(m+1)+j] = v
		}
	}
	var ops []diffOp
	for i := range head {
		ops = append(ops, diffOp{' ', x[i], i, i})
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && mx[i] == my[j]:
			ops = append(ops, diffOp{' ', mx[i], head + i, head + j})
			i, j = i+1, j+1
		case i < n && (j == m || at(i+1, j) >= at(i, j+1)):
			ops = append(ops, diffOp{'-', mx[i], head + i, head + j})
			i++
		default:
			ops = append(ops, diffOp{'+', my[j], head + i, head + j})
			j++
		}
	}
	for k := range tail {
		ops = append(ops, diffOp{' ', x[len(x)-tail+k], len(x) - tail + k, len(y) - tail + k})
	}
	return ops
}
