package store

import (
	"net/url"
	"sort"
	"strings"
)

// redacted replaces every credential in text shown to people.
const redacted = "xxxxx"

// RedactURL returns a store URL fit for logs, status and debug pages: the user information
// (user name and password) is replaced, whether or not the URL parses. A password holding
// reserved characters (/, @, ?, #, %, :) makes url.Parse fail or split the URL elsewhere,
// so the user information is taken to be everything between "://" and the last "@"; when
// that is ambiguous more is hidden, never less.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		if ok {
			return scheme + "://" + rest
		}
		return rest
	}
	out := redacted + "@" + rest[at+1:]
	if ok {
		return scheme + "://" + out
	}
	return out
}

// Redactor hides a set of secrets (a password, a whole URL, the user information of a
// URL and its pieces) in messages. Every error leaving this package passes through the
// Redactor of the connection it came from, so a caller may log it as it is.
type Redactor struct{ secrets []string }

// minPiece is the shortest piece of user information hidden on its own: shorter pieces
// (a lone "a" of "a/b@c") would mangle every message while revealing next to nothing.
const minPiece = 3

// NewRedactor returns a Redactor for a store URL and any extra secrets (a password read
// from a file or the environment).
func NewRedactor(rawURL string, extra ...string) *Redactor {
	set := map[string]bool{}
	add := func(s string) {
		if s != "" {
			set[s] = true
			if e := url.QueryEscape(s); e != s {
				set[e] = true
			}
			if e := url.PathEscape(s); e != s {
				set[e] = true
			}
			if d, err := url.PathUnescape(s); err == nil && d != s && d != "" {
				set[d] = true
			}
		}
	}
	for _, s := range extra {
		add(s)
	}
	if _, rest, ok := strings.Cut(rawURL, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			add(rawURL)
			info := rest[:at]
			add(info)
			_, pass, hasPass := strings.Cut(info, ":")
			if hasPass {
				add(pass)
			}
			for _, p := range strings.FieldsFunc(info, func(r rune) bool { return strings.ContainsRune(":/?#@&=;[]", r) }) {
				if len(p) >= minPiece {
					add(p)
				}
			}
		}
	}
	r := &Redactor{}
	for s := range set {
		r.secrets = append(r.secrets, s)
	}
	// Longest first, so a secret is never half replaced by one of its own pieces.
	sort.Slice(r.secrets, func(i, j int) bool {
		if len(r.secrets[i]) != len(r.secrets[j]) {
			return len(r.secrets[i]) > len(r.secrets[j])
		}
		return r.secrets[i] < r.secrets[j]
	})
	return r
}

// String hides every secret in s.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	return s
}

// Error returns err with every secret hidden from its message; errors.Is and errors.As
// still reach the original. nil stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil || len(r.secrets) == 0 {
		return err
	}
	msg := err.Error()
	clean := r.String(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// RedactError hides the credentials of a store URL in err's message: a helper for callers
// that hold a URL and an error that may quote it (url.Parse errors quote the whole URL).
func RedactError(err error, rawURL string, extra ...string) error {
	return NewRedactor(rawURL, extra...).Error(err)
}
