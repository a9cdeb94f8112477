package corral

import (
	"errors"
	"strings"
)

// gitEntry is one key of a git config file: section and key lower-case,
// the subsection as written ([remote "origin"] has Sub "origin").
type gitEntry struct {
	Section, Sub, Key, Value string
}

// name is the entry as `git config` spells it, with * for a subsection.
func (e gitEntry) pattern() string {
	if e.Sub == "" {
		return e.Section + "." + e.Key
	}
	return e.Section + ".*." + e.Key
}

// errGitConfig is any git config text the strict parser does not take.
// The sweep quarantines such a file: a looser reading than git's would be
// a way to hide a key from it.
var errGitConfig = errors.New("not plain git config syntax")

// errGitContinued is a value whose line ends in a backslash.
var errGitContinued = errors.New("continued on the next line")

// inertGitKeys are the git config keys a sandboxed command may leave in a
// repository's config: what git init, clone, remote, branch and submodule
// write, and nothing that names a program, a hook, a pager, a driver, an
// include or another place to read config or hooks from. An allowlist:
// a key git adds tomorrow is quarantined until it is listed here.
var inertGitKeys = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.ignorecase": true, "core.symlinks": true,
	"core.precomposeunicode": true, "core.autocrlf": true, "core.eol": true,
	"core.safecrlf": true, "core.quotepath": true, "core.sparsecheckout": true,
	"core.sparsecheckoutcone": true, "core.worktree": true, // git submodule writes it in modules/NAME/config
	"extensions.objectformat": true, "extensions.refstorage": true, "extensions.worktreeconfig": true,
	"remote.*.url": true, "remote.*.pushurl": true, "remote.*.fetch": true, "remote.*.push": true,
	"remote.*.tagopt": true, "remote.*.prune": true, "remote.*.mirror": true,
	"remote.*.promisor": true, "remote.*.partialclonefilter": true,
	"branch.*.remote": true, "branch.*.merge": true, "branch.*.rebase": true, "branch.*.pushremote": true,
	"submodule.*.url": true, "submodule.*.active": true, "submodule.*.branch": true,
	"user.name": true, "user.email": true,
	"init.defaultbranch": true, "pull.rebase": true, "pull.ff": true, "push.default": true,
	"fetch.prune": true, "color.ui": true, "lfs.repositoryformatversion": true,
}

// gitURLKeys hold URLs: git runs a program for a "transport::address"
// URL (ext::, or git-remote-<transport> from PATH).
var gitURLKeys = map[string]bool{"remote.*.url": true, "remote.*.pushurl": true, "submodule.*.url": true}

// runsNothing says why a config file could make git run something, or ""
// when all its keys are inert.
func runsNothing(data []byte) string {
	entries, err := parseGitConfig(data)
	if err != nil {
		return err.Error()
	}
	for _, e := range entries {
		p := e.pattern()
		if !inertGitKeys[p] {
			return "sets " + p
		}
		if gitURLKeys[p] && transportURL(e.Value) {
			return "sets " + p + " to a URL that runs a program"
		}
	}
	return ""
}

// transportURL reports whether url is "<transport>::<address>".
func transportURL(url string) bool {
	t, _, ok := strings.Cut(url, "::")
	return ok && strings.Trim(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") == ""
}

// parseGitConfig reads git config text strictly: a subset of what git
// accepts (no keys after a section header on its
// line, no unknown escapes); anything else is errGitConfig.
func parseGitConfig(data []byte) ([]gitEntry, error) {
	text := strings.TrimPrefix(string(data), "\xef\xbb\xbf")
	if strings.ContainsRune(text, 0) {
		return nil, errGitConfig
	}
	var out []gitEntry
	section, sub, inSection := "", "", false
	lines := strings.Split(text, "\n")
	for n := 0; n < len(lines); n++ {
		line := strings.TrimSuffix(lines[n], "\r")
		line = strings.TrimLeft(line, " \t")
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			var err error
			if section, sub, err = gitSection(line[1:]); err != nil {
				return nil, err
			}
			inSection = true
			continue
		}
		if !inSection {
			return nil, errGitConfig
		}
		key, value, err := gitKeyValue(line)
		// A value whose line ends in a backslash goes on on the next
		// line, as git reads it (the backslash and the line end are
		// dropped).
		for err == errGitContinued && n+1 < len(lines) {
			n++
			line = strings.TrimSuffix(line, "\\") + strings.TrimSuffix(lines[n], "\r")
			key, value, err = gitKeyValue(line)
		}
		if err != nil {
			return nil, errGitConfig
		}
		out = append(out, gitEntry{Section: section, Sub: sub, Key: key, Value: value})
	}
	return out, nil
}

// gitSection parses what follows "[": `name]` or `name "sub"]`, then
// only blanks or a comment. [branch.Main] is the old spelling of
// [branch "main"].
func gitSection(s string) (section, sub string, err error) {
	i := 0
	for i < len(s) && (isAlnum(s[i]) || s[i] == '-' || s[i] == '.') {
		i++
	}
	section, s = strings.ToLower(s[:i]), s[i:]
	if section == "" {
		return "", "", errGitConfig
	}
	if strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\t") {
		if strings.Contains(section, ".") {
			return "", "", errGitConfig
		}
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, "\"") {
			return "", "", errGitConfig
		}
		var b strings.Builder
		j := 1
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] == '\\' {
				j++
				if j == len(s) {
					return "", "", errGitConfig
				}
			}
			b.WriteByte(s[j])
		}
		if j == len(s) {
			return "", "", errGitConfig
		}
		sub, s = b.String(), s[j+1:]
		if sub == "" {
			return "", "", errGitConfig // [a ""] is a subsection to git
		}
	} else if name, rest, ok := strings.Cut(section, "."); ok {
		if name == "" || rest == "" {
			return "", "", errGitConfig
		}
		section, sub = name, rest
	}
	if !strings.HasPrefix(s, "]") {
		return "", "", errGitConfig
	}
	if rest := strings.TrimLeft(s[1:], " \t"); rest != "" && rest[0] != '#' && rest[0] != ';' {
		return "", "", errGitConfig
	}
	return section, sub, nil
}

// gitKeyValue parses `key`, `key = value` and `key = "value" # comment`.
func gitKeyValue(line string) (key, value string, err error) {
	i := 0
	for i < len(line) && (isAlnum(line[i]) || i > 0 && line[i] == '-') {
		i++
	}
	if i == 0 || !(line[0] >= 'a' && line[0] <= 'z' || line[0] >= 'A' && line[0] <= 'Z') {
		return "", "", errGitConfig
	}
	key, rest := strings.ToLower(line[:i]), strings.TrimLeft(line[i:], " \t")
	if rest == "" {
		return key, "true", nil
	}
	if rest[0] != '=' {
		return "", "", errGitConfig
	}
	var b strings.Builder
	quoted, pending := false, ""
	for j := 1; j < len(rest); j++ {
		c := rest[j]
		switch {
		case c == '\\':
			j++
			if j == len(rest) {
				return "", "", errGitContinued
			}
			esc, ok := map[byte]byte{'n': '\n', 't': '\t', 'b': '\b', '\\': '\\', '"': '"'}[rest[j]]
			if !ok {
				return "", "", errGitConfig
			}
			b.WriteString(pending)
			pending = ""
			b.WriteByte(esc)
		case c == '"':
			b.WriteString(pending)
			pending = ""
			quoted = !quoted
		case !quoted && (c == '#' || c == ';'):
			j = len(rest)
		case !quoted && (c == ' ' || c == '\t'):
			if b.Len() > 0 {
				pending += string(c) // kept only if more follows
			}
		default:
			b.WriteString(pending)
			pending = ""
			b.WriteByte(c)
		}
	}
	if quoted {
		return "", "", errGitConfig
	}
	return key, b.String(), nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// looseGitEntries reads config text the strict parser refuses the loose
// way: each "[section ...]" line starts a section, each "key = value"
// line is an entry, quotes and a trailing comment are dropped. It is only
// used to find more paths to check (an include, a core.hooksPath) in the
// user's own config: a wrong guess costs a check, never a skipped one.
func looseGitEntries(data []byte) []gitEntry {
	var out []gitEntry
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.ReplaceAll(line, "\x00", ""))
		if strings.HasPrefix(line, "[") {
			name := strings.TrimLeft(line[1:], " \t")
			if i := strings.IndexAny(name, " \t.]\""); i >= 0 {
				name = name[:i]
			}
			section = strings.ToLower(name)
			// git takes a key after the header on its line.
			if end := strings.LastIndexByte(line, ']'); end >= 0 {
				line = strings.TrimSpace(line[end+1:])
			}
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		if strings.HasPrefix(value, "\"") {
			if end := strings.IndexByte(value[1:], '"'); end >= 0 {
				value = value[1 : end+1]
			}
		} else if i := strings.IndexAny(value, "#;"); i >= 0 {
			value = strings.TrimSpace(value[:i])
		}
		out = append(out, gitEntry{Section: section, Key: strings.ToLower(strings.TrimSpace(key)), Value: value})
	}
	return out
}
