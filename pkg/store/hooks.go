package store

// SetBeforeCompact makes r call f after it has read a profile's closed windows and before it
// compacts them, so a test can write in between (a late flush racing a compaction). For tests
// only; f nil removes the hook.
func SetBeforeCompact(r *Reader, f func()) { r.beforeCompact = f }
