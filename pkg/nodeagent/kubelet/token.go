package kubelet

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// tokenFile serves a bearer token from a file, re-reading it only when the file changed:
// a projected service-account token is rotated by the kubelet's atomic writer (a new file
// behind a swapped symlink, so a new inode) or rewritten in place (new mtime or size).
// One stat per request decides.
type tokenFile struct {
	path string

	mu    sync.Mutex
	token string
	ino   os.FileInfo
	mtime time.Time
	size  int64
}

// get returns the current token; force re-reads even if the file looks unchanged.
func (t *tokenFile) get(force bool) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fi, err := os.Stat(t.path)
	if err != nil {
		return "", fmt.Errorf("reading token file: %w", err)
	}
	if !force && t.ino != nil && os.SameFile(fi, t.ino) && fi.ModTime().Equal(t.mtime) && fi.Size() == t.size {
		return t.token, nil
	}
	b, err := os.ReadFile(t.path)
	if err != nil {
		return "", fmt.Errorf("reading token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("reading token file %s: not a single non-empty line", t.path)
	}
	t.token, t.ino, t.mtime, t.size = tok, fi, fi.ModTime(), fi.Size()
	return tok, nil
}
