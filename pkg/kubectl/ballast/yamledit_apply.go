package ballast

import (
	"sort"

	"go.yaml.in/yaml/v3"
)

// uses counts the uses of every anchored node of the document: itself plus its aliases.
func uses(d *yaml.Node) map[*yaml.Node]int {
	out := map[*yaml.Node]int{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.AliasNode {
			out[n.Alias]++
			return
		}
		if n.Anchor != "" {
			out[n]++
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(d)
	return out
}

// apply returns the edited source. An edit to a node shared through an anchor is kept
// only when every use of the anchor asked for the same text at the same place; otherwise
// every edit through that anchor is dropped with a note, so no workload the user did not
// ask about (or that wants another size) changes by accident.
func (f *yamlFile) apply() []byte {
	count := map[*yaml.Node]int{}
	for _, d := range f.Docs {
		for a, n := range uses(d) {
			count[a] += n
		}
	}
	type site struct{ start, end, indent int }
	bySite := map[site][]textEdit{}
	var order []site
	for _, e := range f.edits {
		s := site{e.start, e.end, e.indent}
		if _, ok := bySite[s]; !ok {
			order = append(order, s)
		}
		bySite[s] = append(bySite[s], e)
	}
	bad := map[*yaml.Node]string{} // anchor → why its edits are dropped
	for _, s := range order {
		es := bySite[s]
		anchors := map[*yaml.Node]map[*yaml.Node]bool{}
		same := true
		for _, e := range es {
			same = same && e.text == es[0].text
			for _, c := range e.claims {
				if anchors[c.anchor] == nil {
					anchors[c.anchor] = map[*yaml.Node]bool{}
				}
				anchors[c.anchor][c.use] = true
			}
		}
		for a, us := range anchors {
			switch {
			case !same:
				bad[a] = "its uses want different sizes"
			case len(us) < count[a] && bad[a] == "":
				bad[a] = "it is also used where Ballast does not size it"
			}
		}
		if !same && len(anchors) == 0 {
			f.note("%s: two workloads want different values in one place; left as written", es[0].what)
		}
	}
	var reported []*yaml.Node
	for a := range bad {
		if !insideAny(a, bad) {
			reported = append(reported, a)
		}
	}
	sort.Slice(reported, func(i, j int) bool { return reported[i].Line < reported[j].Line })
	for _, a := range reported {
		f.note("&%s (line %d) is shared by %d uses and %s; left as written", a.Anchor, a.Line, count[a], bad[a])
	}
	var keep []textEdit
	for _, s := range order {
		e := bySite[s][0]
		drop := false
		for _, x := range bySite[s] {
			if x.text != e.text {
				drop = true
			}
			for _, c := range x.claims {
				drop = drop || bad[c.anchor] != ""
			}
		}
		if !drop {
			keep = append(keep, e)
		}
	}
	// Back to front; of two blocks inserted at one place the shallower goes in first, so
	// the deeper one (the tail of the inner mapping) ends up in front of it.
	sort.SliceStable(keep, func(i, j int) bool {
		if keep[i].start != keep[j].start {
			return keep[i].start > keep[j].start
		}
		return keep[i].indent < keep[j].indent
	})
	out := append([]byte(nil), f.src...)
	for _, e := range keep {
		out = append(out[:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out
}

// insideAny reports whether n lies inside another node of set (so only the outermost
// shared node is named in a note).
func insideAny(n *yaml.Node, set map[*yaml.Node]string) bool {
	for a := range set {
		if a != n && contains(a, n) {
			return true
		}
	}
	return false
}

func contains(root, n *yaml.Node) bool {
	for _, c := range root.Content {
		if c == n || (c.Kind != yaml.AliasNode && contains(c, n)) {
			return true
		}
	}
	return false
}
