package store

import (
	"errors"
	"sync"

	"github.com/ballastk8s/ballast/pkg/series"
)

// ErrLazyClosed is returned by a Lazy after Close.
var ErrLazyClosed = errors.New("store connection closed")

// Lazy connects to the store on first use, so a binary starts and keeps working while the
// store is unreachable, and keeps one Writer and one Reader for the layout last asked for:
// the layout follows the retention window, so a caller passes the current one on every use
// and gets a Writer or Reader rebuilt only when it changed. Opening the client dials the
// server: while it is unreachable every use fails and the next one tries again. Safe for
// concurrent use.
type Lazy struct {
	cfg Config

	mu      sync.Mutex
	client  *Client
	writer  *Writer
	wLayout series.Layout
	reader  *Reader
	rLayout series.Layout
	closed  bool
}

// NewLazy returns a Lazy for the store at url (redis://, rediss://; cluster seeds as
// ?addr=). Nothing is opened until Writer or Reader is called.
func NewLazy(url string) *Lazy { return NewLazyConfig(Config{URL: url}) }

// NewLazyConfig returns a Lazy for the store cfg names; the password file is read on
// every connection attempt.
func NewLazyConfig(cfg Config) *Lazy { return &Lazy{cfg: cfg} }

// Redactor hides the connection's secrets in messages.
func (z *Lazy) Redactor() *Redactor { return z.cfg.Redactor() }

// Writer returns the Writer for layout l, connecting first if needed.
func (z *Lazy) Writer(l series.Layout) (*Writer, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if err := z.connectLocked(); err != nil {
		return nil, err
	}
	if z.writer == nil || z.wLayout != l {
		w, err := NewWriter(z.client, l)
		if err != nil {
			return nil, err
		}
		z.writer, z.wLayout = w, l
	}
	return z.writer, nil
}

// Reader returns the Reader for layout l, connecting first if needed. A new layout starts
// a new Reader, with an empty rollup cache.
func (z *Lazy) Reader(l series.Layout) (*Reader, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if err := z.connectLocked(); err != nil {
		return nil, err
	}
	if z.reader == nil || z.rLayout != l {
		r, err := NewReader(z.client, l)
		if err != nil {
			return nil, err
		}
		z.reader, z.rLayout = r, l
	}
	return z.reader, nil
}

// connected returns the client, connecting first if needed.
func (z *Lazy) connected() (*Client, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if err := z.connectLocked(); err != nil {
		return nil, err
	}
	return z.client, nil
}

// lastReader returns the Reader built last, or nil before the first Reader call.
func (z *Lazy) lastReader() *Reader {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.reader
}

func (z *Lazy) connectLocked() error {
	if z.closed {
		return ErrLazyClosed
	}
	if z.client == nil {
		c, err := OpenConfig(z.cfg)
		if err != nil {
			return err
		}
		z.client = c
	}
	return nil
}

// Check drops the connection when err says the server refused the credentials (WRONGPASS,
// NOAUTH: the password was rotated while connected), so the next use reconnects and reads
// the password file again; the client would otherwise retry the old password forever. It
// returns err, redacted.
func (z *Lazy) Check(err error) error {
	if err == nil {
		return nil
	}
	if refusedCredentials(err) {
		z.mu.Lock()
		if z.client != nil {
			z.client.Close()
			z.client, z.writer, z.reader = nil, nil, nil
		}
		z.mu.Unlock()
	}
	return z.Redactor().Error(err)
}

// Close releases the connection; later calls fail with ErrLazyClosed.
func (z *Lazy) Close() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.closed = true
	if z.client != nil {
		z.client.Close()
		z.client, z.writer, z.reader = nil, nil, nil
	}
}
