package console

import "strings"

// DiffLine is one line of a line diff: Op is ' ' (both), '-' (only in
// the old text) or '+' (only in the new); '…' marks elided context.
type DiffLine struct {
	Op   rune
	Text string
}

// Class is the line's CSS class.
func (l DiffLine) Class() string {
	switch l.Op {
	case '-':
		return "del"
	case '+':
		return "add"
	case '…':
		return "gap"
	}
	return "same"
}

// maxDiff bounds the lines compared (a longest common subsequence costs
// their product); past it the texts are shown as removed and added.
const maxDiff = 4000

// diffLines is the line diff of a to b.
func diffLines(a, b string) []DiffLine {
	if a == b {
		return nil
	}
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(x) > maxDiff || len(y) > maxDiff {
		var out []DiffLine
		for _, l := range x {
			out = append(out, DiffLine{'-', l})
		}
		for _, l := range y {
			out = append(out, DiffLine{'+', l})
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of
	// x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []DiffLine
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			out = append(out, DiffLine{' ', x[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, DiffLine{'-', x[i]})
			i++
		default:
			out = append(out, DiffLine{'+', y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, DiffLine{'-', x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, DiffLine{'+', y[j]})
	}
	return out
}

// compact keeps n lines of context around the changes, and marks what it
// leaves out.
func compact(d []DiffLine, n int) []DiffLine {
	keep := make([]bool, len(d))
	for i, l := range d {
		if l.Op != ' ' {
			for k := max(i-n, 0); k <= min(i+n, len(d)-1); k++ {
				keep[k] = true
			}
		}
	}
	var out []DiffLine
	for i, l := range d {
		if keep[i] {
			out = append(out, l)
		} else if len(out) == 0 || out[len(out)-1].Op != '…' {
			out = append(out, DiffLine{'…', ""})
		}
	}
	return out
}
