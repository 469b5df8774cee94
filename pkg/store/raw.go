package store

import "github.com/valkey-io/valkey-go"

// Raw returns the underlying valkey-go client, for tests and diagnostics that inspect keys
// directly (TTLs, slots, memory usage). Product code goes through Writer and Reader.
func (c *Client) Raw() valkey.Client { return c.c }
