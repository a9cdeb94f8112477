package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

func FuzzAnswerJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "a \"quoted\" \\ path\n\t\r", "\x00\x1f\x7f", "bücher \u2028\u2029 <&>", "\xff\xfe bad utf8"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, reason, rule string) {
		a := answer{Decision: policyengine.Decision{Action: policyengine.Deny, Reason: reason, Rule: rule, Layer: rule, NotFound: len(rule)%2 == 1}, View: reason, Path: rule, Error: rule}
		if len(reason)%2 == 1 {
			a.ID = questionID{json: string(appendJSONString(nil, reason))}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(a)
		if got := appendAnswer(nil, &a); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendAnswer = %s, encoding/json = %s", got, want.Bytes())
		}
	})
}

func FuzzParseQuestion(f *testing.F) {
	for _, s := range []string{`{"kind":"net","arg":"a.com:443"}`, `{"arg":"x","kind":"read"}`, `{"id":7,"kind":"env","arg":"A"}`, `{"id":"q\u00e9","kind":"env","arg":"A"}`, `{"id":{},"kind":"env","arg":"A"}`, `{"kind":"exec","arg":"echo \"hi\""}`, `{"kind":"x","arg":"\u00e9"}`, `{"kind":"a","arg":"b","extra":1}`, `not json`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got, want question
		gerr := parseQuestion(line, &got)
		werr := json.Unmarshal(line, &want)
		if (gerr == nil) != (werr == nil) || got != want {
			t.Fatalf("parseQuestion(%q) = %+v, %v; json.Unmarshal = %+v, %v", line, got, gerr, want, werr)
		}
	})
}

// TestCheckStreamIDs: an answer echoes its question's id, a string or a
// number, also for a question that cannot be answered; a line without
// one gets none, and an id of another type makes the line bad input.
func TestCheckStreamIDs(t *testing.T) {
	e, err := policyengine.New(policyengine.Permissions{Network: policyengine.NewEntries("s", []string{"api.a.com:443"}), Declared: []string{"s"}}, policyengine.Options{WorkDir: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		`{"id":"q-1","kind":"net","arg":"api.a.com:443"}`,
		`{"kind":"net","arg":"api.b.com:443","id":42}`,
		`{"id":"x\"y","kind":"frob","arg":"z"}`,
		`{"kind":"net","arg":"api.a.com:443"}`,
		`{"id":null,"kind":"net","arg":"api.a.com:443"}`,
		`{"id":[1],"kind":"net","arg":"api.a.com:443"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := checkStream(&asker{engine: e}, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{`{"id":"q-1","action":"allow"`, `{"id":42,"action":"deny"`, `{"id":"x\"y","action":"deny","reason":"bad input: unknown kind`, `{"action":"allow"`, `{"action":"allow"`, `{"action":"deny","reason":"bad input: not a JSON question"`}
	if len(lines) != len(want) {
		t.Fatalf("%d answers for %d questions:\n%s", len(lines), len(want), out.String())
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, want[i]) || !json.Valid([]byte(l)) {
			t.Errorf("answer %d = %s, want it to start %s", i, l, want[i])
		}
	}
}
