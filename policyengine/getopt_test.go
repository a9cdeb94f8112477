package policyengine

import (
	"errors"
	"strings"
	"testing"
)

// TestOptSpecParse: options are read as getopt_long reads them.
func TestOptSpecParse(t *testing.T) {
	s := OptSpec{Short: "ak:i::", Long: map[string]ArgKind{"all": NoArg, "kill-after": RequiredArg, "kind": NoArg, "replace": OptionalArg}, Permute: true}
	for _, tt := range []struct {
		args string
		opts string // name=value,...
		ops  string
		err  error
	}{
		{"-a x", "-a", "x", nil},
		{"-ak 1 x", "-a,-k=1", "x", nil},
		{"-ak1 x", "-a,-k=1", "x", nil},
		{"x -a", "-a", "x", nil},
		{"-- -a", "", "-a", nil},
		{"- -a", "-a", "-", nil},
		{"--kill-after 1", "--kill-after=1", "", nil},
		{"--kill-a=1", "--kill-after=1", "", nil},
		{"--kil 1", "--kill-after=1", "", nil},
		{"--ki 1", "", "", ErrAmbiguousOption},
		{"--k", "", "", ErrAmbiguousOption},
		{"--kind", "--kind", "", nil},
		{"--a", "--all", "", nil},
		{"--rep x", "--replace", "x", nil},
		{"--rep=x", "--replace=x", "", nil},
		{"-i x", "-i", "x", nil},
		{"-ix", "-i=x", "", nil},
		{"-z", "", "", ErrUnknownOption},
		{"--zz", "", "", ErrUnknownOption},
		{"-:", "", "", ErrUnknownOption},
	} {
		opts, ops, err := s.Parse(strings.Fields(tt.args))
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Parse(%q) error %v, want %v", tt.args, err, tt.err)
			}
			continue
		}
		var got []string
		for _, o := range opts {
			if o.HasValue {
				got = append(got, o.Name+"="+o.Value)
			} else {
				got = append(got, o.Name)
			}
		}
		if err != nil || strings.Join(got, ",") != tt.opts || strings.Join(ops, " ") != tt.ops {
			t.Errorf("Parse(%q) = %q %q %v, want %q %q", tt.args, got, ops, err, tt.opts, tt.ops)
		}
	}
	for _, bad := range []string{"-k", "--kill-after", "--all=1"} {
		if _, _, err := s.Parse(strings.Fields(bad)); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
	exact := OptSpec{Long: map[string]ArgKind{"pretty": NoArg}, Exact: true}
	if _, _, err := exact.Parse([]string{"--pre"}); !errors.Is(err, ErrUnknownOption) {
		t.Errorf("an Exact spec took --pre for --pretty: %v", err)
	}
}
