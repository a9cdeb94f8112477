package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"corral.dev/corral/policyengine"
)

func FuzzAnswerJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "a \"quoted\" \\ path\n\t\r", "\x00\x1f\x7f", "bücher \u2028\u2029 <&>", "\xff\xfe bad utf8"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, reason, rule string) {
		a := answer{Decision: policyengine.Decision{Action: policyengine.Deny, Reason: reason, Rule: rule, Layer: rule}, View: reason, Path: rule, Error: rule}
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
	for _, s := range []string{`{"kind":"net","arg":"a.com:443"}`, `{"arg":"x","kind":"read"}`, `{"kind":"exec","arg":"echo \"hi\""}`, `{"kind":"x","arg":"\u00e9"}`, `{"kind":"a","arg":"b","extra":1}`, `not json`} {
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
