//go:build linux

package tests

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckBadInputAgrees: a question check cannot answer (an unknown
// kind, a malformed host:port, URL, command or variable, a missing
// argument) gets the same answer line from check and from check --stdin;
// check exits 125 with it and one line on stderr, --stdin goes on. An
// answer on --stdin echoes the question's id.
func TestCheckBadInputAgrees(t *testing.T) {
	t.Parallel()
	skill := sharedSkill(t, "api-a")
	for _, q := range [][]string{
		{"frob", "x"},
		{"net", "example.com:70000"},
		{"net", "no-port"},
		{"url", "::not a url"},
		{"exec", "  "},
		{"env", "A=B"},
		{"net"},
		{"net", "api.a.com:443"}, // a good one: the same answer too, exit 0
	} {
		single := asSelf.run(t, runOpts{args: append([]string{"check", "--skill", skill}, q...)})
		arg := ""
		if len(q) > 1 {
			arg = q[1]
		}
		line, _ := json.Marshal(map[string]string{"kind": q[0], "arg": arg})
		idLine, _ := json.Marshal(map[string]any{"kind": q[0], "arg": arg, "id": "q-7"})
		stream := asSelf.run(t, runOpts{args: []string{"check", "--skill", skill, "--stdin"}, stdin: string(line) + "\n" + string(idLine) + "\n"})
		answers := strings.SplitAfter(stream.stdout, "\n")
		if stream.code != 0 || len(answers) != 3 || answers[2] != "" {
			t.Fatalf("check --stdin %s: want exit 0 and two answers:\n%s", line, stream)
		}
		if single.stdout != answers[0] {
			t.Errorf("check %q answers\n%s--stdin answers\n%s", q, single.stdout, answers[0])
		}
		if want := `{"id":"q-7",` + strings.TrimPrefix(answers[0], "{"); answers[1] != want {
			t.Errorf("with an id: %s, want %s", answers[1], want)
		}
		var a struct{ Action, Error string }
		if err := json.Unmarshal([]byte(answers[0]), &a); err != nil {
			t.Fatalf("answer %q: %v", answers[0], err)
		}
		wantCode, stderrLines := 1, 0
		switch {
		case a.Error != "":
			wantCode, stderrLines = 125, 1
		case a.Action == "allow":
			wantCode = 0
		}
		if single.code != wantCode || strings.Count(single.stderr, "\n") != stderrLines {
			t.Errorf("check %q: exit %d, want %d with %d line(s) on stderr:\n%s", q, single.code, wantCode, stderrLines, single)
		}
	}
}
