package seatbelt

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// node is one parsed SBPL datum: a list, a string or an atom.
type node struct {
	list  []node
	isStr bool
	str   string // the decoded string, or the atom's text
	isAtm bool
}

// readSBPL parses profile text the way Seatbelt's Scheme reader does, as
// far as corral's profiles go: lists, "strings" (whose only escapes are
// \\ and \"; any other escape is an error here, since the renderer never
// writes one), atoms, and ";" comments to the end of the line. #"regex"
// literals and quotes are refused: the renderer does not write them.
func readSBPL(text string) ([]node, error) {
	r := &reader{s: text}
	var top []node
	for {
		r.skip()
		if r.i == len(r.s) {
			return top, nil
		}
		n, err := r.datum(0)
		if err != nil {
			return nil, err
		}
		top = append(top, n)
	}
}

type reader struct {
	s string
	i int
}

func (r *reader) skip() {
	for r.i < len(r.s) {
		switch c := r.s[r.i]; {
		case c == ';':
			for r.i < len(r.s) && r.s[r.i] != '\n' {
				r.i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *reader) datum(depth int) (node, error) {
	if depth > 20 {
		return node{}, fmt.Errorf("nesting deeper than 20 at byte %d", r.i)
	}
	switch c := r.s[r.i]; c {
	case '(':
		r.i++
		n := node{list: []node{}}
		for {
			r.skip()
			if r.i == len(r.s) {
				return node{}, fmt.Errorf("unclosed list")
			}
			if r.s[r.i] == ')' {
				r.i++
				return n, nil
			}
			d, err := r.datum(depth + 1)
			if err != nil {
				return node{}, err
			}
			n.list = append(n.list, d)
		}
	case ')':
		return node{}, fmt.Errorf("unbalanced ')' at byte %d", r.i)
	case '"':
		r.i++
		var b strings.Builder
		for {
			if r.i == len(r.s) {
				return node{}, fmt.Errorf("unterminated string")
			}
			c := r.s[r.i]
			r.i++
			switch c {
			case '"':
				return node{isStr: true, str: b.String()}, nil
			case '\\':
				if r.i == len(r.s) || (r.s[r.i] != '\\' && r.s[r.i] != '"') {
					return node{}, fmt.Errorf("escape other than \\\\ or \\\" at byte %d", r.i)
				}
				b.WriteByte(r.s[r.i])
				r.i++
			default:
				b.WriteByte(c)
			}
		}
	case '#', '\'', '`', ',':
		return node{}, fmt.Errorf("%q at byte %d: the renderer writes no reader macros", c, r.i)
	}
	start := r.i
	for r.i < len(r.s) && !strings.ContainsRune(" \t\n\r()\";", rune(r.s[r.i])) {
		r.i++
	}
	return node{isAtm: true, str: r.s[start:r.i]}, nil
}

// operations are the Seatbelt operations corral's profiles may use.
var operations = []string{
	"appleevent-send", "default", "distributed-notification-post",
	"file-ioctl", "file-map-executable", "file-read*", "file-read-data",
	"file-read-metadata", "file-write*", "file-write-create", "file-write-data",
	"file-write-unlink", "ipc-posix-sem", "ipc-posix-shm-read-data", "mach-lookup",
	"network-outbound", "process-exec", "process-fork", "process-info*",
	"pseudo-tty", "signal", "sysctl-read", "user-preference-read",
	"user-preference-write",
}

// filters are the filters, each with a check of its arguments.
var filters map[string]func(args []node) error

func init() {
	filters = map[string]func(args []node) error{
		"literal":            pathArg,
		"subpath":            pathArg,
		"regex":              pathArg,
		"global-name":        oneString,
		"sysctl-name":        oneString,
		"sysctl-name-prefix": oneString,
		"ipc-posix-name":     oneString,
		"extension":          oneString,
		"require-all":        filterArgs,
		"require-not":        filterArgs,
		"vnode-type": func(args []node) error {
			if len(args) != 1 || !args[0].isAtm || !slices.Contains([]string{"DIRECTORY", "CHARACTER-DEVICE"}, args[0].str) {
				return fmt.Errorf("vnode-type takes DIRECTORY or CHARACTER-DEVICE")
			}
			return nil
		},
		"target": func(args []node) error {
			if len(args) != 1 || !args[0].isAtm || args[0].str != "same-sandbox" {
				return fmt.Errorf("target takes same-sandbox")
			}
			return nil
		},
		"remote": func(args []node) error {
			if len(args) != 2 || !args[0].isAtm || args[0].str != "ip" || !args[1].isStr || !regexp.MustCompile(`^localhost:[0-9]+$`).MatchString(args[1].str) {
				return fmt.Errorf(`remote takes ip "localhost:PORT"`)
			}
			return nil
		},
	}
}

var paramName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func oneString(args []node) error {
	if len(args) != 1 || !args[0].isStr {
		return fmt.Errorf("takes one string")
	}
	return nil
}

// pathArg is a string or (param "NAME").
func pathArg(args []node) error {
	if len(args) != 1 {
		return fmt.Errorf("takes one argument")
	}
	a := args[0]
	if a.isStr {
		return nil
	}
	if len(a.list) == 2 && a.list[0].isAtm && a.list[0].str == "param" && a.list[1].isStr && paramName.MatchString(a.list[1].str) {
		return nil
	}
	return fmt.Errorf("takes a string or (param \"NAME\"), not %s", shape(a))
}

func filterArgs(args []node) error {
	if len(args) == 0 {
		return fmt.Errorf("takes filters")
	}
	for _, a := range args {
		if err := checkFilter(a); err != nil {
			return err
		}
	}
	return nil
}

func checkFilter(n node) error {
	if len(n.list) == 0 || !n.list[0].isAtm {
		return fmt.Errorf("filter %s is not a (name ...) list", shape(n))
	}
	check, ok := filters[n.list[0].str]
	if !ok {
		return fmt.Errorf("filter %q is not in the vocabulary", n.list[0].str)
	}
	if err := check(n.list[1:]); err != nil {
		return fmt.Errorf("%s: %w", n.list[0].str, err)
	}
	return nil
}

// checkProfile parses text and checks every form against the vocabulary:
// (version 1) first, (deny default) next, then (allow|deny OP... FILTER...)
// rules. It returns the parsed forms.
func checkProfile(text string) ([]node, error) {
	forms, err := readSBPL(text)
	if err != nil {
		return nil, err
	}
	if len(forms) < 2 || shape(forms[0]) != "(version 1)" || shape(forms[1]) != "(deny default)" {
		return nil, fmt.Errorf("the profile must start with (version 1) (deny default)")
	}
	for i, f := range forms {
		if len(f.list) < 2 || !f.list[0].isAtm {
			return nil, fmt.Errorf("form %d: %s is not a rule", i, shape(f))
		}
		head := f.list[0].str
		if i == 0 {
			continue
		}
		if head != "allow" && head != "deny" {
			return nil, fmt.Errorf("form %d: %q is neither allow nor deny", i, head)
		}
		j := 1
		for ; j < len(f.list) && f.list[j].isAtm; j++ {
			op := f.list[j].str
			if !slices.Contains(operations, op) {
				return nil, fmt.Errorf("form %d: operation %q is not in the vocabulary", i, op)
			}
			if op == "default" && (i != 1 || head != "deny") {
				return nil, fmt.Errorf("form %d: (%s default) anywhere but second", i, head)
			}
		}
		if j == 1 {
			return nil, fmt.Errorf("form %d: no operation", i)
		}
		for ; j < len(f.list); j++ {
			if err := checkFilter(f.list[j]); err != nil {
				return nil, fmt.Errorf("form %d: %w", i, err)
			}
		}
	}
	return forms, nil
}

// shape prints n with every string as S, for comparing structures.
func shape(n node) string {
	switch {
	case n.isStr:
		return "S"
	case n.isAtm:
		return n.str
	}
	parts := make([]string, len(n.list))
	for i, c := range n.list {
		parts[i] = shape(c)
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// allStrings returns every decoded string in the forms, in order.
func allStrings(forms []node) []string {
	var out []string
	var walk func(n node)
	walk = func(n node) {
		if n.isStr {
			out = append(out, n.str)
		}
		for _, c := range n.list {
			walk(c)
		}
	}
	for _, f := range forms {
		walk(f)
	}
	return out
}

// rules returns the (allow|deny ...) forms whose operations include op.
func rules(forms []node, action, op string) []node {
	var out []node
	for _, f := range forms {
		if len(f.list) == 0 || f.list[0].str != action {
			continue
		}
		for _, a := range f.list[1:] {
			if a.isAtm && (a.str == op || strings.HasSuffix(a.str, "*") && strings.HasPrefix(op, strings.TrimSuffix(a.str, "*"))) {
				out = append(out, f)
				break
			}
		}
	}
	return out
}
