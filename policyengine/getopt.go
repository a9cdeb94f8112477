package policyengine

import (
	"errors"
	"fmt"
	"strings"
)

// Programs read their options with getopt_long, and what a word means
// depends on that reading: "--compress-p=sh" is sort's
// --compress-program=sh, "-k1" is -k with the value 1, and the word after
// "timeout -s" is a signal, not the program. OptSpec reads words the same
// way, so that checks see the option a program will see.

// ArgKind says whether an option takes a value.
type ArgKind uint8

const (
	NoArg       ArgKind = iota
	RequiredArg         // the rest of the word, or the next word
	OptionalArg         // only the rest of the word ("-i{}", "--replace={}")
)

// OptSpec is a program's options as getopt_long sees them.
type OptSpec struct {
	// Short is a getopt optstring: a letter, then ":" for a required
	// value or "::" for an optional one ("k:s:v").
	Short string
	// Long are the long options by name, without "--".
	Long map[string]ArgKind
	// Permute reads options after operands too (GNU's default); without
	// it the first operand ends the options ("+" in the optstring).
	Permute bool
	// Exact refuses abbreviations: the program's parser (clap, lexopt)
	// does not take a unique prefix of a long option for the option.
	Exact bool
}

// Opt is one option as read: Name is "-k" or "--kill-after" (the full
// name, also when the word abbreviated it).
type Opt struct {
	Name     string
	Value    string
	HasValue bool
	Next     bool // the value is the word after the option
}

// ErrUnknownOption and ErrAmbiguousOption are the words getopt_long would
// refuse; a check cannot say what they do in another version.
var (
	ErrUnknownOption   = errors.New("unknown option")
	ErrAmbiguousOption = errors.New("ambiguous option")
)

// Parse reads args as getopt_long does: options (with their values) and
// operands, "--" ending the options. An unknown, ambiguous or incomplete
// option is an error naming the word.
func (s OptSpec) Parse(args []string) (opts []Opt, operands []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			o, used, err := s.long(a, args[i+1:])
			if err != nil {
				return nil, nil, err
			}
			opts, i = append(opts, o), i+used
		case len(a) > 1 && a[0] == '-':
			got, used, err := s.short(a, args[i+1:])
			if err != nil {
				return nil, nil, err
			}
			opts, i = append(opts, got...), i+used
		default:
			if !s.Permute {
				return opts, append(operands, args[i:]...), nil
			}
			operands = append(operands, a)
		}
	}
	return opts, operands, nil
}

// ResolveLong returns the long option word names: itself, or the one
// option it is a unique prefix of.
func (s OptSpec) ResolveLong(word string) (string, error) {
	if _, ok := s.Long[word]; ok {
		return word, nil
	}
	if s.Exact {
		return "", fmt.Errorf("%w --%s", ErrUnknownOption, word)
	}
	match := ""
	for name := range s.Long {
		if strings.HasPrefix(name, word) {
			if match != "" {
				return "", fmt.Errorf("%w --%s (--%s or --%s)", ErrAmbiguousOption, word, min(match, name), max(match, name))
			}
			match = name
		}
	}
	if match == "" {
		return "", fmt.Errorf("%w --%s", ErrUnknownOption, word)
	}
	return match, nil
}

// long reads "--name", "--name=value" or "--name value"; used is how
// many of the following words it took.
func (s OptSpec) long(word string, next []string) (Opt, int, error) {
	name, value, hasValue := strings.Cut(word[2:], "=")
	full, err := s.ResolveLong(name)
	if err != nil {
		return Opt{}, 0, err
	}
	o := Opt{Name: "--" + full, Value: value, HasValue: hasValue}
	switch s.Long[full] {
	case NoArg:
		if hasValue {
			return Opt{}, 0, fmt.Errorf("option --%s takes no value", full)
		}
	case RequiredArg:
		if !hasValue {
			if len(next) == 0 {
				return Opt{}, 0, fmt.Errorf("option --%s needs a value", full)
			}
			o.Value, o.HasValue, o.Next = next[0], true, true
			return o, 1, nil
		}
	}
	return o, 0, nil
}

// short reads a cluster of short options ("-uk2", "-s", "KILL").
func (s OptSpec) short(word string, next []string) ([]Opt, int, error) {
	var out []Opt
	for j := 1; j < len(word); j++ {
		c := word[j]
		i := strings.IndexByte(s.Short, c)
		if c == ':' || i < 0 {
			return nil, 0, fmt.Errorf("%w -%c", ErrUnknownOption, c)
		}
		kind := NoArg
		if strings.HasPrefix(s.Short[i+1:], "::") {
			kind = OptionalArg
		} else if strings.HasPrefix(s.Short[i+1:], ":") {
			kind = RequiredArg
		}
		o := Opt{Name: "-" + string(c)}
		rest := word[j+1:]
		switch {
		case kind == NoArg:
			out = append(out, o)
			continue
		case rest != "":
			o.Value, o.HasValue = rest, true
		case kind == RequiredArg:
			if len(next) == 0 {
				return nil, 0, fmt.Errorf("option -%c needs a value", c)
			}
			o.Value, o.HasValue, o.Next = next[0], true, true
			return append(out, o), 1, nil
		}
		return append(out, o), 0, nil
	}
	return out, 0, nil
}
