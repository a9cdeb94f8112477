package main

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// check --stdin answers hundreds of thousands of questions a second, so
// the common shapes skip encoding/json's reflection: questions of the
// exact form {"kind":"K","arg":"A"} with no escapes are cut out directly,
// anything else goes through json.Unmarshal; answers are written by hand
// with encoding/json's escaping rules.

// parseQuestion decodes one question line.
func parseQuestion(line []byte, q *question) error {
	const pre, mid = `{"kind":"`, `","arg":"`
	s := string(line)
	if len(s) >= len(pre)+2 && strings.HasPrefix(s, pre) && strings.HasSuffix(s, `"}`) && !strings.ContainsRune(s, '\\') {
		rest := s[len(pre) : len(s)-2]
		if kind, arg, ok := strings.Cut(rest, mid); ok && plainJSON(kind) && plainJSON(arg) {
			*q = question{Kind: kind, Arg: arg}
			return nil
		}
	}
	*q = question{}
	return json.Unmarshal(line, q)
}

// plainJSON reports whether s can stand between JSON quotes as it is: no
// quote, backslash or control character, and valid UTF-8.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.ValidString(s)
}

// appendAnswer appends a as one JSON line, field for field as
// encoding/json would write it.
func appendAnswer(b []byte, a *answer) []byte {
	b = append(b, '{')
	if !a.ID.IsZero() {
		b = append(b, `"id":`...)
		b = append(b, a.ID.json...)
		b = append(b, ',')
	}
	b = append(b, `"action":`...)
	b = appendJSONString(b, string(a.Action))
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, a.Reason)
	if a.Rule != "" {
		b = append(b, `,"rule":`...)
		b = appendJSONString(b, a.Rule)
	}
	if a.Layer != "" {
		b = append(b, `,"layer":`...)
		b = appendJSONString(b, a.Layer)
	}
	if a.NotFound {
		b = append(b, `,"not_found":true`...)
	}
	if a.View != "" {
		b = append(b, `,"view":`...)
		b = appendJSONString(b, a.View)
	}
	if a.Path != "" {
		b = append(b, `,"path":`...)
		b = appendJSONString(b, a.Path)
	}
	if a.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, a.Error)
	}
	return append(b, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does without HTML escaping:
// control characters, quotes and backslashes escaped, invalid UTF-8 as
// U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
