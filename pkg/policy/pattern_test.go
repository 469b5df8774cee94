package policy

import (
	"regexp"
	"testing"
)

func TestPattern(t *testing.T) {
	cases := map[string]struct {
		pattern   string
		matches   []string
		misses    []string
		wantRegex bool
	}{
		"plain text is exact equality": {
			pattern: "team-a", matches: []string{"team-a"}, misses: []string{"team-ab", "xteam-a", "Team-A", ""},
		},
		"regex must match the whole string": {
			pattern: "/team-.*/", matches: []string{"team-a", "team-"}, misses: []string{"my-team-a", "Team-a"},
			wantRegex: true,
		},
		"alternation stays anchored on both sides": {
			pattern: "/dev|staging/", matches: []string{"dev", "staging"}, misses: []string{"devx", "xstaging", "dev|staging"},
			wantRegex: true,
		},
		"regex metacharacters outside slashes are literal": {
			pattern: "team.*", matches: []string{"team.*"}, misses: []string{"team-a"},
		},
		"a lone slash is exact": {pattern: "/", matches: []string{"/"}, misses: []string{""}},
		"two slashes are an empty regex": {
			pattern: "//", matches: []string{""}, misses: []string{"/", "//", "a"}, wantRegex: true,
		},
		"slash on one side only is exact":           {pattern: "/abc", matches: []string{"/abc"}, misses: []string{"abc"}},
		"the empty pattern matches the empty value": {pattern: "", matches: []string{""}, misses: []string{"a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := ParsePattern(tc.pattern)
			if err != nil {
				t.Fatalf("ParsePattern(%q): %v", tc.pattern, err)
			}
			if p.IsRegex() != tc.wantRegex || p.String() != tc.pattern {
				t.Errorf("IsRegex = %v, String = %q; want %v, %q", p.IsRegex(), p.String(), tc.wantRegex, tc.pattern)
			}
			for _, s := range tc.matches {
				if !p.Match(s) {
					t.Errorf("%q should match %q", tc.pattern, s)
				}
			}
			for _, s := range tc.misses {
				if p.Match(s) {
					t.Errorf("%q should not match %q", tc.pattern, s)
				}
			}
		})
	}
}

func TestPatternInvalid(t *testing.T) {
	cases := map[string]string{
		"unclosed group":                    "/(team/",
		"unbalanced paren escaping anchors": "/a)|(b/",
		"backreference is not RE2":          `/(a)\1/`,
		"lookahead is not RE2":              "/(?=a)/",
	}
	for name, pattern := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParsePattern(pattern); err == nil {
				t.Errorf("ParsePattern(%q) succeeded, want an error", pattern)
			}
		})
	}
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"", "/", "//", "team-a", "/team-.*/", "/a)|(b/", "/(?i)x/", "/[/", `/\//`} {
		f.Add(s, "team-a")
	}
	f.Fuzz(func(t *testing.T, pattern, value string) {
		p, err := ParsePattern(pattern)
		if err != nil {
			if len(pattern) < 2 || pattern[0] != '/' || pattern[len(pattern)-1] != '/' {
				t.Fatalf("exact pattern %q failed: %v", pattern, err)
			}
			return
		}
		got := p.Match(value)
		if !p.IsRegex() {
			if got != (value == pattern) {
				t.Fatalf("exact %q vs %q: Match = %v", pattern, value, got)
			}
			return
		}
		// Full-string anchoring, checked independently: under leftmost-longest semantics
		// the inner regex has a match spanning the whole value iff its leftmost-longest
		// match is exactly [0, len(value)].
		inner := regexp.MustCompile(pattern[1 : len(pattern)-1])
		inner.Longest()
		loc := inner.FindStringIndex(value)
		want := loc != nil && loc[0] == 0 && loc[1] == len(value)
		if got != want {
			t.Fatalf("%q vs %q: Match = %v, inner leftmost-longest match %v", pattern, value, got, loc)
		}
	})
}
