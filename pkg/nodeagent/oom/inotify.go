package oom

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// inotify event header layout (struct inotify_event): wd int32, mask uint32, cookie uint32,
// len uint32, then len bytes of NUL-padded name. Mask bits used here (linux/inotify.h).
const (
	inotifyHeaderSize = 16
	inModify          = 0x00000002
	inIgnored         = 0x00008000
	inQOverflow       = 0x00004000
)

// rawEvent is one decoded inotify event; names are not needed (the watches are on files).
type rawEvent struct {
	wd   int32
	mask uint32
}

var errShortInotifyRead = errors.New("truncated inotify event")

// parseInotify decodes a buffer returned by read(2) on an inotify descriptor. Pure; a
// truncated buffer yields the events before the cut and an error.
func parseInotify(buf []byte) ([]rawEvent, error) {
	var out []rawEvent
	for len(buf) > 0 {
		if len(buf) < inotifyHeaderSize {
			return out, fmt.Errorf("%w: %d header bytes", errShortInotifyRead, len(buf))
		}
		ev := rawEvent{
			wd:   int32(binary.NativeEndian.Uint32(buf[0:4])),
			mask: binary.NativeEndian.Uint32(buf[4:8]),
		}
		nameLen := uint64(binary.NativeEndian.Uint32(buf[12:16]))
		if nameLen > uint64(len(buf)-inotifyHeaderSize) {
			return out, fmt.Errorf("%w: name of %d bytes, %d left", errShortInotifyRead, nameLen, len(buf)-inotifyHeaderSize)
		}
		out = append(out, ev)
		buf = buf[inotifyHeaderSize+int(nameLen):]
	}
	return out, nil
}
