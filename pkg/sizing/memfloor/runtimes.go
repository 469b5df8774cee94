package memfloor

import (
	"fmt"
	"math/big"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// JVMOptions is what the JVM options a container passes say about its heap.
type JVMOptions struct {
	// HeapBytes from -Xmx or -XX:MaxHeapSize (HasHeap).
	HeapBytes int64
	HasHeap   bool
	// RAMPercent from -XX:MaxRAMPercentage (nil when absent).
	RAMPercent *big.Rat
	// Source is the setting that decided ("args -Xmx512m").
	Source string
}

// ParseJVMOptions reads tokens in JVM order (JAVA_TOOL_OPTIONS, then JDK_JAVA_OPTIONS, then
// the command line: the last setting wins). -Xmx and -XX:MaxHeapSize win over
// MaxRAMPercentage, as in HotSpot. where names each token list for Source.
func ParseJVMOptions(lists []OptionList) (JVMOptions, error) {
	var o JVMOptions
	heapSrc, pctSrc := "", ""
	for _, l := range lists {
		for _, t := range strings.Fields(l.Value) {
			var v string
			var isHeap bool
			switch {
			case strings.HasPrefix(t, "-Xmx"):
				v, isHeap = strings.TrimPrefix(t, "-Xmx"), true
			case strings.HasPrefix(t, "-XX:MaxHeapSize="):
				v, isHeap = strings.TrimPrefix(t, "-XX:MaxHeapSize="), true
			case strings.HasPrefix(t, "-XX:MaxRAMPercentage="):
				p, err := ParsePercent(strings.TrimPrefix(t, "-XX:MaxRAMPercentage="))
				if err != nil {
					return JVMOptions{}, fmt.Errorf("%s: %w", l.Where, err)
				}
				o.RAMPercent, pctSrc = p, l.Where+" "+t
				continue
			default:
				continue
			}
			if isHeap {
				b, err := ParseJVMSize(v)
				if err != nil {
					return JVMOptions{}, fmt.Errorf("%s: %w", l.Where, err)
				}
				o.HeapBytes, o.HasHeap, heapSrc = b, true, l.Where+" "+t
			}
		}
	}
	o.Source = pctSrc
	if o.HasHeap {
		o.Source = heapSrc
	}
	return o, nil
}

// OptionList is one place options come from and its text.
type OptionList struct {
	Where string // "JAVA_TOOL_OPTIONS", "args"
	Value string
}

// optionLists collects a container's option lists in order: the named environment
// variables, then command and args. It returns the first variable set from valueFrom.
func optionLists(c *corev1.Container, vars ...string) (lists []OptionList, unknown string) {
	for _, name := range vars {
		v, set, fromRef := envValue(c, name)
		switch {
		case fromRef:
			return nil, name
		case set:
			lists = append(lists, OptionList{Where: name, Value: v})
		}
	}
	for _, part := range []struct {
		where string
		list  []string
	}{{"command", c.Command}, {"args", c.Args}} {
		if len(part.list) == 0 {
			continue
		}
		v, ref := expand(c, strings.Join(part.list, " "))
		if ref != "" {
			return nil, ref
		}
		lists = append(lists, OptionList{Where: part.where, Value: v})
	}
	return lists, ""
}

// expand replaces $(NAME) references in s with the container's literal env values, as the
// kubelet does for command and args ($$ escapes a $; an unknown name stays as written). It
// returns the name of a referenced variable set from valueFrom, whose value is unknown here.
func expand(c *corev1.Container, s string) (string, string) {
	if !strings.Contains(s, "$(") {
		return s, ""
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(s[i:], "$("):
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String(), ""
			}
			name := s[i+2 : i+end]
			v, set, fromRef := envValue(c, name)
			switch {
			case fromRef:
				return "", name
			case set:
				b.WriteString(v)
			default:
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), ""
}

func jvmFloor(f *Floor, c *corev1.Container, margin *big.Rat, limitBytes int64) {
	lists, unknown := optionLists(c, "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")
	if unknown != "" {
		f.Note = unknown + " is set from valueFrom: its value is unknown here, no floor"
		return
	}
	o, err := ParseJVMOptions(lists)
	if err != nil {
		f.Note = "unreadable jvm option (" + err.Error() + "), no floor"
		return
	}
	f.Source = o.Source
	switch {
	case o.HasHeap:
		f.Bytes, f.Has = withMargin(capBytes(o.HeapBytes+NonHeapJVM), margin), true
		f.Why = fmt.Sprintf("heap %s + non-heap %s, +%s", Bytes(o.HeapBytes), Bytes(NonHeapJVM), marginText(margin))
	case o.RAMPercent != nil && limitBytes <= 0:
		f.Note = "MaxRAMPercentage without a memory limit sizes the heap from the node: no floor"
	case o.RAMPercent != nil:
		heap := new(big.Rat).Mul(new(big.Rat).SetInt64(limitBytes), o.RAMPercent)
		heap.Quo(heap, big.NewRat(100, 1))
		h := new(big.Int).Quo(heap.Num(), heap.Denom()).Int64()
		floor := withMargin(capBytes(h+NonHeapJVM), margin)
		f.Why = fmt.Sprintf("heap %s (%s%% of limit %s) + non-heap %s, +%s", Bytes(h), o.RAMPercent.FloatString(1),
			Bytes(limitBytes), Bytes(NonHeapJVM), marginText(margin))
		if floor > limitBytes {
			// The heap follows the limit: never raise because of it (see the package doc).
			floor = limitBytes
			f.Why += ", capped at the current limit"
		}
		f.Bytes, f.Has = floor, true
	default:
		f.Note = "no -Xmx, -XX:MaxHeapSize or -XX:MaxRAMPercentage: the JVM default heap follows the limit, no floor"
	}
}

func goFloor(f *Floor, c *corev1.Container, margin *big.Rat) {
	v, set, fromRef := envValue(c, "GOMEMLIMIT")
	switch {
	case fromRef:
		f.Note = "GOMEMLIMIT is set from valueFrom: its value is unknown here, no floor"
		return
	case !set:
		f.Note = "no GOMEMLIMIT, no floor"
		return
	}
	b, ok, err := ParseGOMEMLIMIT(v)
	switch {
	case err != nil:
		f.Note = "unreadable " + err.Error() + ", no floor"
		return
	case !ok:
		f.Note = "GOMEMLIMIT=off, no floor"
		return
	}
	floor := withMargin(b, margin)
	if floor < b+GoMinMargin {
		floor = capBytes(b + GoMinMargin)
	}
	f.Bytes, f.Has, f.Source = floor, true, "GOMEMLIMIT="+v
	f.Why = fmt.Sprintf("GOMEMLIMIT %s, +%s (at least +%s)", Bytes(b), marginText(margin), Bytes(GoMinMargin))
}

func nodeFloor(f *Floor, c *corev1.Container, margin *big.Rat) {
	lists, unknown := optionLists(c, "NODE_OPTIONS")
	if unknown != "" {
		f.Note = unknown + " is set from valueFrom: its value is unknown here, no floor"
		return
	}
	var old int64
	for _, l := range lists {
		for _, t := range strings.Fields(l.Value) {
			v, ok := strings.CutPrefix(t, "--max-old-space-size=")
			if !ok {
				v, ok = strings.CutPrefix(t, "--max_old_space_size=")
			}
			if !ok {
				continue
			}
			b, err := ParseOldSpace(v)
			if err != nil {
				f.Note = "unreadable " + l.Where + " " + err.Error() + ", no floor"
				return
			}
			old, f.Source = b, l.Where+" "+t
		}
	}
	if old == 0 {
		f.Note = "no --max-old-space-size: V8 sizes old space from the limit, no floor"
		return
	}
	f.Bytes, f.Has = withMargin(capBytes(old+NonHeapNode), margin), true
	f.Why = fmt.Sprintf("old space %s + %s, +%s", Bytes(old), Bytes(NonHeapNode), marginText(margin))
}
