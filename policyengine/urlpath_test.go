package policyengine

import (
	"errors"
	"strings"
	"testing"
)

// TestReadPath: the readings of a path an origin may take: the canonical
// one (RFC 3986, WHATWG, what the proxy sends) and the most lenient
// origin's (every escape decoded, ';' parameters cut, slashes merged
// before dot segments).
func TestReadPath(t *testing.T) {
	for _, tt := range []struct{ raw, canonical, decoded string }{
		{"", "/", "/"},
		{"/", "/", "/"},
		{"/admin/x", "/admin/x", "/admin/x"},
		{"//admin/x", "/admin/x", "/admin/x"},
		{"/a///b//", "/a/b/", "/a/b/"},
		{"/./admin/x", "/admin/x", "/admin/x"},
		{"/x/../admin/x", "/admin/x", "/admin/x"},
		{"/../../admin", "/admin", "/admin"},
		{"/x/%2e%2E/admin", "/admin", "/admin"},
		{"/x/.%2e/admin", "/admin", "/admin"},
		{"/%61dmin/x", "/admin/x", "/admin/x"},
		{"/%2561dmin/x", "/%2561dmin/x", "/admin/x"},
		{"/x/..%2fadmin/x", "/x/..%2Fadmin/x", "/admin/x"},
		{"/x/..%2Fadmin", "/x/..%2Fadmin", "/admin"},
		{"/a%2fb", "/a%2Fb", "/a/b"},
		{"/a%5cb/../c", "/c", "/a/c"},
		{`/a\b`, "/a/b", "/a/b"},
		{"/admin;x/y", "/admin;x/y", "/admin/y"},
		{"/admin/..;/x", "/admin/..;/x", "/x"},
		{"/a//../b", "/a/b", "/b"},
		{"/a/;x/../b", "/a/b", "/b"},
		{"/public/x%00/../../admin", "/admin", "/public/x"},
		{"/caf%C3%A9", "/caf%C3%A9", "/caf%C3%A9"},
		{"/caf\u00e9", "/caf%C3%A9", "/caf%C3%A9"},
		{"/a%20b%3fc", "/a%20b%3Fc", "/a%20b%3Fc"},
		{"/100%", "/100%25", "/100%25"},
		{"/ADMIN", "/ADMIN", "/ADMIN"},
	} {
		r := ReadPath(tt.raw)
		if r.Canonical != tt.canonical || r.Decoded != tt.decoded {
			t.Errorf("ReadPath(%q) = %q, %q; want %q, %q", tt.raw, r.Canonical, r.Decoded, tt.canonical, tt.decoded)
		}
		readsAsItself(t, tt.raw, r)
	}
}

// readsAsItself fails unless each reading of raw reads as itself: the
// agent policy matches a reading by reading it again.
func readsAsItself(t *testing.T, raw string, r PathReadings) {
	t.Helper()
	for _, p := range []string{r.Canonical, r.Decoded} {
		if again := ReadPath(p); again.Canonical != p {
			t.Fatalf("ReadPath(%q): the reading %q reads as %q", raw, p, again.Canonical)
		}
	}
	if again := ReadPath(r.Decoded); again.Decoded != r.Decoded {
		t.Fatalf("ReadPath(%q): the decoded reading %q decodes to %q", raw, r.Decoded, again.Decoded)
	}
}

// TestRequestPath: the proxy sends a plain-HTTP path resolved, with its
// escapes as written, and refuses the forms origins read in ways it
// cannot all check.
func TestRequestPath(t *testing.T) {
	for _, raw := range []string{"/public/..%2fsecret", "/public/%2e%2e/secret", "/a%5cb", "/public/#/../secret",
		"/public/..;/admin", "/x/.;/y", `/a\b`, "/a%2Fb", "/a%00b", "/a%0ab", "/%2561dmin", "/a%7f",
		"/a//../b", "/a/;x/../b"} {
		if p, err := RequestPath(raw); !errors.Is(err, ErrAmbiguousPath) {
			t.Errorf("RequestPath(%q) = %q, %v; want it refused", raw, p, err)
		}
	}
	for _, tt := range []struct{ raw, want string }{
		{"/public/../secret//x", "/secret/x"},
		{"//admin/x", "/admin/x"},
		{"/%61dmin", "/%61dmin"},
		{"/admin;x/y", "/admin;x/y"},
		{"/a b", "/a%20b"},
		{"/100%25.txt", "/100%25.txt"},
		{"/../x", "/x"},
		{"", "/"},
	} {
		if p, err := RequestPath(tt.raw); err != nil || p != tt.want {
			t.Errorf("RequestPath(%q) = %q, %v; want %q", tt.raw, p, err, tt.want)
		}
	}
}

// TestCheckURLAmbiguousPlainHTTP: a plain http:// URL whose path the
// proxy refuses is denied by check url too; through a CONNECT tunnel
// (https) the path is not the proxy's to refuse.
func TestCheckURLAmbiguousPlainHTTP(t *testing.T) {
	e := perms(t, nil, nil, []string{"a.test:8080", "a.test:443"}, nil, nil)
	for _, tt := range []struct {
		url  string
		want Action
	}{
		{"http://a.test:8080/x/..%2fadmin", Deny},
		{"http://a.test:8080/a%2561", Deny},
		{"http://a.test:8080/a//../b", Deny},
		{`http://a.test:8080/a\b`, Deny},
		{"http://a.test:8080//admin/x", Allow},
		{"http://a.test:8080/admin;x/y", Allow},
		{"https://a.test/x/..%2fadmin", Allow},
	} {
		if d := e.CheckURL(tt.url); d.Action != tt.want {
			t.Errorf("CheckURL(%q) = %s (%s), want %s", tt.url, d.Action, d.Reason, tt.want)
		}
	}
}

// FuzzReadPath: reading never fails; each reading reads as itself, has
// no repeated slash and no dot segment; and a path the proxy accepts
// reads, once sent, as it read before (so check url of a plain http://
// URL decides what the proxy decides for it).
func FuzzReadPath(f *testing.F) {
	for _, s := range []string{"/", "//a/../b", "/x/..%2fadmin", "/%2561", "/a;b/../c", "/a/;x/../b", "/a%00/../b",
		`/a\..\b`, "/%2e%2e/x", "/./.././a", "/a%zz", "/caf\u00e9", "/a%3b/../b", "/..%3bx/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !strings.HasPrefix(raw, "/") {
			raw = "/" + raw
		}
		r := ReadPath(raw)
		readsAsItself(t, raw, r)
		for _, p := range []string{r.Canonical, r.Decoded} {
			if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
				t.Fatalf("ReadPath(%q) reading %q is out of shape", raw, p)
			}
		}
		for _, seg := range strings.Split(r.Decoded, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("ReadPath(%q): decoded reading %q keeps a dot segment", raw, r.Decoded)
			}
		}
		sent, err := RequestPath(raw)
		if err != nil {
			return
		}
		if s := ReadPath(sent); s != r {
			t.Fatalf("RequestPath(%q) = %q reads as %+v, the path as written as %+v", raw, sent, s, r)
		}
	})
}
