package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// A Lazy fails while the store cannot be reached and works once it can; it keeps its
// Writer and Reader while the layout stays, builds new ones when it changes, and refuses
// every use after Close.
func TestLazy(t *testing.T) {
	l := series.DefaultLayout(168 * time.Hour)
	if _, err := store.NewLazy("redis://127.0.0.1:1").Writer(l); err == nil {
		t.Fatal("Writer on a port nobody listens on: no error")
	}
	if _, err := store.NewLazy("http://x").Reader(l); err == nil {
		t.Fatal("Reader with a bad URL scheme: no error")
	}

	z := store.NewLazy(srv.Valkey.URL())
	w1, err := z.Writer(l)
	if err != nil {
		t.Fatal(err)
	}
	if w2, _ := z.Writer(l); w2 != w1 {
		t.Error("same layout: a new Writer was built")
	}
	l2 := series.DefaultLayout(24 * time.Hour)
	if w3, err := z.Writer(l2); err != nil || w3 == w1 {
		t.Errorf("new layout: writer %p (first %p), err %v", w3, w1, err)
	}
	r1, err := z.Reader(l)
	if err != nil {
		t.Fatal(err)
	}
	if r2, _ := z.Reader(l); r2 != r1 {
		t.Error("same layout: a new Reader was built")
	}
	// The Writer and Reader share the connection and the store answers through them.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r1.Series(ctx, newProfile()); err != nil {
		t.Fatalf("reading through the lazy connection: %v", err)
	}
	z.Close()
	if _, err := z.Writer(l); !errors.Is(err, store.ErrLazyClosed) {
		t.Errorf("Writer after Close: %v, want store.ErrLazyClosed", err)
	}
	if _, err := z.Reader(l); !errors.Is(err, store.ErrLazyClosed) {
		t.Errorf("Reader after Close: %v, want store.ErrLazyClosed", err)
	}
}
