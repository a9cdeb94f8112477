package printable

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// dangerous are the runes and bytes a terminal acts on, or that make
// text read differently than it is stored.
var dangerous = []string{
	"\x1b", "\x00", "\r", "\n", "\a", "\b", "\x7f", // C0, DEL
	"\u0085", "\u009b", "\u0090", "\u009d", // C1 as runes (NEL, CSI, DCS, OSC)
	"\x9b", "\xc2", "\xff", // raw bytes: 0x9B is CSI to 8-bit terminals
	"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", // bidi embeddings and overrides
	"\u2066", "\u2067", "\u2068", "\u2069", // bidi isolates
	"\u200e", "\u200f", "\u061c", // marks
	"\u2028", "\u2029", "\ufeff", "\u200b", // separators, invisible
	"\U000e0001", // a tag character (format, beyond the BMP)
}

// raw reports whether out holds any of the dangerous runes or bytes.
func raw(out string) string {
	for _, d := range dangerous {
		if d == "\n" || d == "\x00" {
			continue // checked by the callers that must not keep them
		}
		if strings.Contains(out, d) {
			return d
		}
	}
	return ""
}

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/ws/repo/.git/commondir", "/ws/repo/.git/commondir"},
		{"héllo wörld 中文", "héllo wörld 中文"},
		{"", ""},
		{"a\x1b[2Jb", `"a\x1b[2Jb"`},
		{"a\x9bb", `"a\x9bb"`},
		{"a\u009bb", `"a\u009bb"`},
		{"\u202egnp.exe", `"\u202egnp.exe"`},
		{"two\nlines", `"two\nlines"`},
		{`back\slash`, `"back\\slash"`},
		{`"quoted"`, `"\"quoted\""`},
		{"\ufffd", `"` + "\ufffd" + `"`},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, d := range dangerous {
		got := String("x" + d + "y")
		if r := raw(got); r != "" || strings.ContainsAny(got, "\n\x00") {
			t.Errorf("String(%q) = %q keeps %q raw", "x"+d+"y", got, r)
		}
		if !utf8.ValidString(got) {
			t.Errorf("String(%q) = %q is not valid UTF-8", "x"+d+"y", got)
		}
	}
}

func TestText(t *testing.T) {
	msg := "corral: refused 2 request(s):\n\tGET " + String("evil\x1b]0;pwn\a.test") + "\n"
	if got := Text(msg); got != msg {
		t.Errorf("Text changed a message whose names were quoted:\n%q\n%q", msg, got)
	}
	for _, d := range dangerous {
		in := "line one\n\tx" + d + "y"
		got := Text(in)
		if r := raw(got); r != "" || strings.Contains(got, "\x00") {
			t.Errorf("Text(%q) = %q keeps %q raw", in, got, r)
		}
		if !strings.HasPrefix(got, "line one\n\tx") {
			t.Errorf("Text(%q) = %q lost the message's own newline or tab", in, got)
		}
	}
	if got := Text("a\x9bb\u009bc\u202ed"); got != `a\x9bb\u009bc\u202ed` {
		t.Errorf("Text escaped %q", got)
	}
}

func TestJSON(t *testing.T) {
	for _, d := range dangerous {
		if !utf8.ValidString(d) {
			continue // encoding/json already writes \ufffd
		}
		in := map[string]string{"url": "http://x.test/" + d + "/é中", "plain": "ok"}
		enc, _ := json.Marshal(in)
		got := JSON(enc)
		if r := raw(string(got)); r != "" || strings.ContainsAny(string(got), "\n\x00") {
			t.Errorf("JSON(%s) = %s keeps %q raw", enc, got, r)
		}
		var back map[string]string
		if err := json.Unmarshal(got, &back); err != nil || back["url"] != in["url"] || back["plain"] != "ok" {
			t.Errorf("JSON(%s) = %s does not decode to the same value: %v %q", enc, got, err, back)
		}
	}
	if got := JSON([]byte("{\"a\":\"\xff\"}")); string(got) != `{"a":"\ufffd"}` {
		t.Errorf("an invalid byte became %s", got)
	}
	plain := []byte(`{"a":"plain ascii"}`)
	if got := JSON(plain); &got[0] != &plain[0] {
		t.Error("JSON copied plain ASCII")
	}
}

func BenchmarkStringPlain(b *testing.B) {
	for range b.N {
		String("/home/user/work/repo/.git/commondir")
	}
}

func TestLine(t *testing.T) {
	if got := Line("no rule for a.test\n\tforged\x1b"); got != `no rule for a.test\n\tforged\x1b` {
		t.Errorf("Line kept a newline, tab or ESC: %q", got)
	}
	if got := Line(`plain "reason" \ ok`); got != `plain "reason" \ ok` {
		t.Errorf("Line changed a plain line: %q", got)
	}
}

func TestClip(t *testing.T) {
	if got := Clip("short", 10); got != "short" {
		t.Errorf("Clip changed a short string: %q", got)
	}
	if got := Clip("abcdefghij", 4); got != "abcd…[6 more bytes]" {
		t.Errorf("Clip = %q", got)
	}
	got := Clip("aé中", 3) // é is 2 bytes: the cut lands inside 中
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "aé…") {
		t.Errorf("Clip cut inside a rune: %q", got)
	}
}
