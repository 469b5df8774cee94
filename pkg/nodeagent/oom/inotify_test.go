package oom

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func inotifyBytes(wd int32, mask uint32, name string) []byte {
	nameLen := 0
	if name != "" {
		nameLen = (len(name) + 1 + 15) / 16 * 16 // NUL-terminated, padded
	}
	b := make([]byte, inotifyHeaderSize+nameLen)
	binary.NativeEndian.PutUint32(b[0:], uint32(wd))
	binary.NativeEndian.PutUint32(b[4:], mask)
	binary.NativeEndian.PutUint32(b[12:], uint32(nameLen))
	copy(b[inotifyHeaderSize:], name)
	return b
}

func TestParseInotify(t *testing.T) {
	buf := append(inotifyBytes(1, inModify, ""), inotifyBytes(2, inModify, "memory.events.local")...)
	buf = append(buf, inotifyBytes(-1, inQOverflow, "")...)
	got, err := parseInotify(buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []rawEvent{{1, inModify}, {2, inModify}, {-1, inQOverflow}}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(rawEvent{})); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	got, err = parseInotify(buf[:len(buf)-3])
	if !errors.Is(err, errShortInotifyRead) || len(got) != 2 {
		t.Errorf("truncated buffer: %v, %v", got, err)
	}
}

func FuzzParseInotify(f *testing.F) {
	f.Add(inotifyBytes(1, inModify, ""))
	f.Add(append(inotifyBytes(3, inIgnored, ""), inotifyBytes(4, inModify, "x")...))
	f.Fuzz(func(t *testing.T, buf []byte) {
		evs, err := parseInotify(buf)
		if err != nil && !errors.Is(err, errShortInotifyRead) {
			t.Fatalf("unexpected error %v", err)
		}
		if len(evs)*inotifyHeaderSize > len(buf) {
			t.Fatalf("%d events from %d bytes", len(evs), len(buf))
		}
	})
}
