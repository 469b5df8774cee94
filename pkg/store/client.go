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
	"strings"

	"github.com/valkey-io/valkey-go"
)

// Client is a connection pool to a Valkey server or cluster.
type Client struct {
	c valkey.Client
}

// Open connects to the store at rawURL.
func Open(rawURL string) (*Client, error) { return OpenConfig(Config{URL: rawURL}) }

// OpenConfig connects to the store cfg names. A refused password is reported as such; no
// error quotes a secret.
func OpenConfig(cfg Config) (*Client, error) {
	r := cfg.Redactor()
	opt, err := cfg.ClientOption()
	if err != nil {
		return nil, r.Error(err)
	}
	c, err := valkey.NewClient(opt)
	if err != nil {
		where := strings.Join(opt.InitAddress, ",")
		if hint := authHint(err); hint != "" {
			return nil, r.Error(fmt.Errorf("connecting to the store at %s: %s: %w", where, hint, err))
		}
		return nil, r.Error(fmt.Errorf("connecting to the store at %s: %w", where, err))
	}
	return &Client{c: c}, nil
}

// authHint explains the server's answers to missing or wrong credentials at connect.
func authHint(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "NOAUTH"):
		return "the store requires a password (give --store-password-file or " + PasswordEnv + ")"
	case strings.Contains(msg, "NOPERM"):
		return "the store requires a password, or the store user may not run a command the client sends " +
			"(check --store-username and the user's ACL)"
	case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "invalid password"):
		return "the store refused the credentials (check the password file or Secret)"
	}
	return ""
}

// refusedCredentials reports that the server refused the connection's credentials
// (WRONGPASS, NOAUTH), which a reconnect with a re-read password file can cure; a
// command refused by the user's ACL (NOPERM) cannot, so it does not count.
func refusedCredentials(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "invalid password")
}

// Ping checks that the store answers.
func (c *Client) Ping(ctx context.Context) error {
	return c.c.Do(ctx, c.c.B().Ping().Build()).Error()
}

// Close releases the connections.
func (c *Client) Close() { c.c.Close() }
