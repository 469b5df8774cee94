package ballast

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// yamlFile is one YAML stream (a file, kustomize output or a Helm values file) parsed with
// the yaml.v3 Node API, and the edits planned on it. Edits are never made by re-encoding:
// the parser's node positions say which bytes of the source hold a value and where a
// mapping ends, and only those bytes change, so comments, key order, quoting, anchors,
// indentation and blank lines stay exactly as written.
type yamlFile struct {
	Name  string
	src   []byte
	lines []int // byte offset of the start of each line
	Docs  []*yaml.Node

	edits []textEdit
	notes []string
	step  int  // indentation of a nested block mapping relative to its key, as the file writes it
	crlf  bool // the file ends its lines with CRLF: inserted lines do too
}

// textEdit replaces src[start:end] with text (an insertion when start == end). claims
// are the anchors the edited node is shared through (see claim).
type textEdit struct {
	start, end int
	text       string
	claims     []claim
	what       string // for notes: container and field
	indent     int    // of an inserted block, -1 for a replacement
}

// claim says an edit reached a node inside anchor through one of its uses: the anchored
// node itself (use == anchor) or an alias of it.
type claim struct{ anchor, use *yaml.Node }

func parseYAMLFile(name string, src []byte) (*yamlFile, error) {
	f := &yamlFile{Name: name, src: src, lines: []int{0}}
	for i, b := range src {
		if b == '\n' {
			f.lines = append(f.lines, i+1)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		n := &yaml.Node{}
		err := dec.Decode(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", name, err)
		}
		f.Docs = append(f.Docs, n)
	}
	f.step = 2
	f.crlf = bytes.Contains(src, []byte("\r\n"))
	for _, d := range f.Docs {
		if st := indentStep(d); st > 0 {
			f.step = st
			break
		}
	}
	return f, nil
}

// indentStep is how far the file indents a block mapping under its key: the first
// `key:` whose value is a block mapping on the next lines; 0 when there is none.
func indentStep(n *yaml.Node) int {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Line > k.Line && v.Column > k.Column {
				return v.Column - k.Column
			}
		}
	}
	for _, c := range n.Content {
		if st := indentStep(c); st > 0 {
			return st
		}
	}
	return 0
}

func (f *yamlFile) note(format string, args ...any) {
	f.notes = append(f.notes, fmt.Sprintf(format, args...))
}

// offset is the byte offset of a 1-based line and column (columns count characters).
func (f *yamlFile) offset(line, col int) int {
	if line < 1 || line > len(f.lines) {
		return len(f.src)
	}
	off := f.lines[line-1]
	for c := 1; c < col && off < len(f.src) && f.src[off] != '\n'; c++ {
		_, size := utf8.DecodeRune(f.src[off:])
		off += size
	}
	return off
}

func (f *yamlFile) lineText(line int) string {
	if line < 1 || line > len(f.lines) {
		return ""
	}
	end := len(f.src)
	if line < len(f.lines) {
		end = f.lines[line] - 1
	}
	return strings.TrimRight(string(f.src[f.lines[line-1]:end]), "\r")
}

// indentOf is the number of leading spaces of a line, -1 for a blank line.
func indentOf(s string) int {
	t := strings.TrimLeft(s, " ")
	if strings.TrimSpace(t) == "" {
		return -1
	}
	return len(s) - len(t)
}

// resolve follows an alias to its anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// docRoot is the top mapping of a document node.
func docRoot(d *yaml.Node) *yaml.Node {
	if d.Kind == yaml.DocumentNode && len(d.Content) == 1 {
		return resolve(d.Content[0])
	}
	return resolve(d)
}

// lookup returns the value of key in mapping m (aliases resolved), falling back to merge
// keys (<<: *base); via is the alias the value was reached through, when any.
func lookup(m *yaml.Node, key string) (val, via *yaml.Node) {
	return lookupDepth(m, key, 0)
}

// maxMergeDepth bounds merge-key chains, so a mapping merging itself cannot loop.
const maxMergeDepth = 16

func lookupDepth(m *yaml.Node, key string, depth int) (val, via *yaml.Node) {
	m = resolve(m)
	if depth > maxMergeDepth {
		return nil, nil
	}
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Value == key && k.Tag != "!!merge" {
			if v.Kind == yaml.AliasNode {
				return resolve(v), v
			}
			return v, nil
		}
		if k.Tag == "!!merge" || k.Value == "<<" {
			if v.Kind == yaml.SequenceNode {
				merges = append(merges, v.Content...)
			} else {
				merges = append(merges, v)
			}
		}
	}
	for _, mv := range merges {
		if r, _ := lookupDepth(mv, key, depth+1); r != nil {
			if mv.Kind == yaml.AliasNode {
				return r, mv
			}
			return r, nil
		}
	}
	return nil, nil
}

// path follows keys from n; nil when one is missing.
func path(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n, _ = lookup(n, k)
		if n == nil {
			return nil
		}
	}
	return resolve(n)
}

// kv is one key and its value to write, in order; either value or children is set.
type kv struct {
	key      string
	value    string
	children []kv
}

// set plans writing want into mapping m: existing scalars are replaced in place (their
// quoting kept), missing keys are inserted as a block at the end of m at its keys'
// indentation, an empty `{}` or an implicit null becomes a block. claims are the anchors
// m is shared through. It notes what it cannot do and leaves it.
func (f *yamlFile) set(m *yaml.Node, via *yaml.Node, want []kv, claims []claim, what string) {
	if via != nil {
		claims = append(claims, claim{anchor: via.Alias, use: via})
	}
	m = resolve(m)
	if m.Anchor != "" && via == nil {
		claims = append(claims, claim{anchor: m, use: m})
	}
	var missing []kv
	for _, w := range want {
		v, vvia := lookup(m, w.key)
		if v == nil {
			missing = append(missing, w)
			continue
		}
		cl := claims
		if vvia != nil {
			cl = append(append([]claim(nil), claims...), claim{anchor: vvia.Alias, use: vvia})
			vvia = nil
		} else if v.Anchor != "" {
			cl = append(append([]claim(nil), claims...), claim{anchor: v, use: v})
		}
		switch {
		case w.children == nil && v.Kind == yaml.ScalarNode:
			f.replaceScalar(v, w.value, cl, what+" "+w.key)
		case w.children != nil && v.Kind == yaml.MappingNode:
			f.set(v, nil, w.children, cl, what+" "+w.key)
		case w.children != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!null" && v.Value == "":
			// `requests:` with nothing after it: the block goes under the key.
			key := keyNode(m, w.key)
			f.insertAfterLine(key.Line, key.Column-1+f.step, w.children, cl, what+" "+w.key)
		default:
			f.note("%s: %s is not a mapping of quantities; left as written", what, w.key)
		}
	}
	if len(missing) == 0 {
		return
	}
	switch {
	case m.Style&yaml.FlowStyle != 0 && len(m.Content) == 0:
		// `resources: {}`: drop the braces, put the block under the key.
		start := f.offset(m.Line, m.Column)
		if !bytes.HasPrefix(f.src[start:], []byte("{}")) {
			f.note("%s: cannot locate the empty mapping; left as written", what)
			return
		}
		for start > 0 && f.src[start-1] == ' ' {
			start--
		}
		end := f.offset(m.Line, m.Column) + 2
		parentIndent := f.keyIndentBefore(m.Line)
		f.edits = append(f.edits, textEdit{start: start, end: end, claims: claims, what: what, indent: -1})
		f.insertAfterLine(m.Line, parentIndent+f.step, missing, claims, what)
	case m.Style&yaml.FlowStyle != 0:
		f.note("%s: adding to a flow mapping ({...}) is not supported; left as written", what)
	case len(m.Content) == 0:
		f.note("%s: empty mapping without position; left as written", what)
	default:
		indent := m.Content[0].Column - 1
		f.insertAfterLine(f.endLine(m, indent), indent, missing, claims, what)
	}
}

func keyNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return m
}

// keyIndentBefore is the indentation of the key on line (the line a flow value starts on).
func (f *yamlFile) keyIndentBefore(line int) int {
	s := f.lineText(line)
	ind := indentOf(s)
	if strings.HasPrefix(s[max(ind, 0):], "- ") {
		ind += 2
	}
	return max(ind, 0)
}

// endLine is the last line of a block mapping whose keys sit at indent: the last
// non-blank line from its first key on before a line indented less (a sibling, the next
// list item, a document marker). A `- ` at the keys' own indentation is a block sequence
// value of one of them (a next list item's dash sits left of its keys). Comment lines at
// or left of the keys' indentation are left to what follows.
func (f *yamlFile) endLine(m *yaml.Node, indent int) int {
	last := m.Line
	for l := m.Line + 1; l <= len(f.lines); l++ {
		s := f.lineText(l)
		ind := indentOf(s)
		if ind < 0 {
			continue
		}
		comment := strings.HasPrefix(strings.TrimLeft(s, " "), "#")
		if comment {
			if ind > indent {
				last = l
			}
			continue
		}
		if ind < indent || strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
			break
		}
		last = l
	}
	return last
}

// insertAfterLine plans a block of keys after line at indent.
func (f *yamlFile) insertAfterLine(line, indent int, kvs []kv, claims []claim, what string) {
	var b strings.Builder
	renderBlock(&b, kvs, indent, f.step)
	off := len(f.src)
	if line < len(f.lines) {
		off = f.lines[line]
	}
	text := b.String()
	if f.crlf {
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	if off == len(f.src) && len(f.src) > 0 && f.src[len(f.src)-1] != '\n' {
		text = "\n" + strings.TrimSuffix(text, "\n")
	}
	f.edits = append(f.edits, textEdit{start: off, end: off, text: text, claims: claims, what: what, indent: indent})
}

func renderBlock(b *strings.Builder, kvs []kv, indent, step int) {
	for _, w := range kvs {
		b.WriteString(strings.Repeat(" ", indent) + w.key + ":")
		if w.children == nil {
			b.WriteString(" " + w.value + "\n")
			continue
		}
		b.WriteString("\n")
		renderBlock(b, w.children, indent+step, step)
	}
}

// replaceScalar plans replacing a scalar's text, inside its quotes when quoted.
func (f *yamlFile) replaceScalar(n *yaml.Node, value string, claims []claim, what string) {
	if n.Value == value {
		return
	}
	start := f.offset(n.Line, n.Column)
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		start++
	case 0:
	default:
		f.note("%s: %q is a block scalar; left as written", what, n.Value)
		return
	}
	end := start + len(n.Value)
	if end > len(f.src) || string(f.src[start:end]) != n.Value {
		f.note("%s: cannot locate %q in the source (escaped or tagged); left as written", what, n.Value)
		return
	}
	f.edits = append(f.edits, textEdit{start: start, end: end, text: value, claims: claims, what: what, indent: -1})
}
