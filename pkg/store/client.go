// Package store is the only package that talks to Valkey. It writes and reads the series
// that pkg/series defines; it works unchanged against a standalone server and a Valkey
// Cluster (the client discovers which one it is talking to).
//
// Node agents write through a Writer: each flush is one pipelined batch with one atomic
// script call per (series, window) that applies commutative updates only (counter and sum
// increments, keep-min/keep-max), so any number of nodes write the same series without
// coordination. The control plane reads through a Reader, which folds closed windows into
// per-series rollups (a server-side script, atomic per profile) and caches the rollups, so
// each cycle fetches only what is still open. Every key of a profile shares one hash tag
// and thus one cluster slot (see series.IndexKey and friends).
package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/valkey-io/valkey-go"
)

// Client is a connection pool to a Valkey server or cluster.
type Client struct {
	c valkey.Client
}

// Options derives valkey-go options from a redis:// or rediss:// URL. Extra cluster seed
// nodes are given as repeated addr query parameters:
// redis://10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379.
func Options(rawURL string) (valkey.ClientOption, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return valkey.ClientOption{}, fmt.Errorf("parsing store URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "valkey" && u.Scheme != "valkeys" {
		return valkey.ClientOption{}, fmt.Errorf("store URL %q: scheme must be redis:// or rediss://", redact(u))
	}
	opt, err := valkey.ParseURL(rawURL)
	if err != nil {
		return valkey.ClientOption{}, fmt.Errorf("store URL %q: %w", redact(u), err)
	}
	return opt, nil
}

// Open connects to the store at rawURL.
func Open(rawURL string) (*Client, error) {
	opt, err := Options(rawURL)
	if err != nil {
		return nil, err
	}
	c, err := valkey.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("connecting to the store at %s: %w", strings.Join(opt.InitAddress, ","), err)
	}
	return &Client{c: c}, nil
}

// Ping checks that the store answers.
func (c *Client) Ping(ctx context.Context) error {
	return c.c.Do(ctx, c.c.B().Ping().Build()).Error()
}

// Close releases the connections.
func (c *Client) Close() { c.c.Close() }

func redact(u *url.URL) string {
	if u.User != nil {
		u = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	}
	return u.String()
}
