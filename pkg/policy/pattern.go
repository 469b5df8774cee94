package policy

import (
	"fmt"
	"regexp"
)

// Pattern is a namespace or annotation-value pattern (SPEC §2.3): a string of length ≥ 2
// wrapped in "/…/" is a full-string RE2 regex, anything else matches by exact equality.
// The zero Pattern matches only the empty string.
type Pattern struct {
	raw string
	re  *regexp.Regexp // nil for an exact pattern
}

// ParsePattern parses s. Only a "/…/" pattern can fail: when its inner text is not a valid
// RE2 regex on its own. The inner text is compiled alone first so that text such as
// "a)|(b" cannot escape the ^(?:…)$ anchoring.
func ParsePattern(s string) (Pattern, error) {
	if len(s) < 2 || s[0] != '/' || s[len(s)-1] != '/' {
		return Pattern{raw: s}, nil
	}
	inner := s[1 : len(s)-1]
	if _, err := regexp.Compile(inner); err != nil {
		return Pattern{}, fmt.Errorf("not a valid RE2 regex: %w", err)
	}
	re, err := regexp.Compile("^(?:" + inner + ")$")
	if err != nil {
		return Pattern{}, fmt.Errorf("not a valid RE2 regex: %w", err)
	}
	return Pattern{raw: s, re: re}, nil
}

// Match reports whether the whole of s matches the pattern.
func (p Pattern) Match(s string) bool {
	if p.re != nil {
		return p.re.MatchString(s)
	}
	return s == p.raw
}

// IsRegex reports whether the pattern is a "/…/" regex.
func (p Pattern) IsRegex() bool { return p.re != nil }

// String returns the pattern as written.
func (p Pattern) String() string { return p.raw }

// matchAny reports whether s matches at least one of patterns.
func matchAny(patterns []Pattern, s string) bool {
	for _, p := range patterns {
		if p.Match(s) {
			return true
		}
	}
	return false
}
