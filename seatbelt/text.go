package seatbelt

import (
	"strconv"
	"strings"
)

// maxString is the longest string (path, regular expression or parameter
// value) a profile may hold. sandbox-exec's reader refuses string literals
// past 1024 bytes, and macOS paths stop at PATH_MAX (1024) anyway.
const maxString = 1000

// quote returns s as an SBPL string literal. Inside a string the reader
// (TinyScheme's) treats only the backslash and the double quote specially,
// so those two are escaped and every other byte is written as it is:
// between the quotes, parentheses, semicolons and newlines are ordinary
// characters that can neither end the string nor start a form. No other
// escape sequence is ever produced, so a backslash is always followed by
// a backslash or a quote (never by a digit or 'x', which TinyScheme would
// read as a character code).
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// regexMeta are the characters a POSIX extended regular expression (the
// dialect of Seatbelt's regex filter) gives a meaning outside brackets,
// except "]" and "}", which are literal when unmatched and whose escaped
// forms POSIX leaves undefined.
const regexMeta = `\.[()*+?{|^$`

// regexQuote returns a regular expression matching exactly s. Bytes that
// are not metacharacters, newlines and UTF-8 sequences included, stand for
// themselves.
func regexQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(regexMeta, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// comment returns s in a form safe inside a ";" comment: s itself when it
// is printable ASCII, else Go-quoted with every other byte escaped, so no
// line break can end the comment early and turn the rest into profile
// forms.
func comment(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

// symlinkedRoots are the top-level folders that are symlinks into
// /private on macOS. Seatbelt matches the path of the file reached, after
// symlinks, so a rule must name the /private form.
var symlinkedRoots = []string{"/tmp", "/var", "/etc"}

// Canonical returns p as macOS names it after its top-level symlink:
// /tmp, /var and /etc (and anything below them) move under /private.
// Other symlinks are the caller's to resolve (Options.Programs carries
// resolved program paths); p is expected to be absolute and clean.
func Canonical(p string) string {
	for _, r := range symlinkedRoots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return "/private" + p
		}
	}
	return p
}

// isUnder reports whether p is root or inside it.
func isUnder(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}
