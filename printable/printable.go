// Package printable escapes text a sandboxed command chose (file names,
// argv[0], host names, URLs) before corral prints it on its own stderr or
// writes it to its logs and reports.
//
// The threat: a name with ESC, a C1 control (U+009B as a rune or a raw
// 0x9B byte, which many terminals read as CSI), a newline or a bidi
// override would, printed raw, drive the user's terminal, forge lines of
// corral's own output, or make a warning read as something else. The
// package does not touch what the command itself writes to its stdout
// and stderr: those streams are the command's.
package printable

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// String returns s unchanged when it is plain (every rune graphic, no
// quote or backslash), and otherwise as a Go string literal in which
// every non-graphic rune and invalid byte is escaped ("a\x1b[2Jb",
// "\u202egnp.exe"), so what a person reads is unambiguous. Use it for
// every name the command could have chosen, where it is put into a
// message.
func String(s string) string {
	if plain(s) {
		return s
	}
	return strconv.QuoteToGraphic(s)
}

func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return plainSlow(s)
		}
	}
	return true
}

func plainSlow(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '"' || r == '\\' || !unicode.IsGraphic(r) {
			return false // RuneError: an invalid byte, or U+FFFD itself
		}
	}
	return true
}

// Text escapes the non-graphic runes and invalid bytes of a whole
// message corral composed, keeping its newlines and tabs (and its
// backslashes, so names String already quoted stay as they are). It is
// the last line of defence at the place corral writes to stderr; names
// inside a message still go through String, since Text cannot tell a
// newline of corral's from one inside a name.
func Text(s string) string { return escape(s, true) }

// Line is Text for a part of one line (a reason that may hold a name):
// newlines and tabs are escaped too.
func Line(s string) string { return escape(s, false) }

func escape(s string, layout bool) string {
	if escaped(s, layout) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case layout && (r == '\n' || r == '\t') || unicode.IsGraphic(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToGraphic(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// escaped reports whether s needs no escaping.
func escaped(s string, layout bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			for _, r := range s {
				if !(layout && (r == '\n' || r == '\t')) && (r == utf8.RuneError || !unicode.IsGraphic(r)) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// JSON escapes, in encoded JSON, the runes encoding/json leaves raw but a
// terminal or an editor acts on: DEL, the C1 controls, bidi and other
// format characters, and every other non-graphic rune, as \uXXXX. The
// escapes decode to the same strings, so nothing is lost; an invalid
// byte (encoding/json never writes one) becomes \ufffd.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] < 0x7f {
		i++
	}
	if i == len(b) {
		return b
	}
	out := append(make([]byte, 0, len(b)+16), b[:i]...)
	for i < len(b) {
		if b[i] < 0x7f {
			out = append(out, b[i])
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case unicode.IsGraphic(r):
			out = append(out, b[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = appendU(appendU(out, r1), r2)
		default:
			out = appendU(out, r)
		}
		i += n
	}
	return out
}

func appendU(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// Clip shortens s to at most max bytes, cut at a rune boundary, and says
// how many bytes it left out: log entries carry URLs and command lines
// the sandbox chose, which must not fill a log or a report.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[" + strconv.Itoa(len(s)-cut) + " more bytes]"
}
