package main

import (
	"io"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// BenchmarkCheckStream measures check --stdin on a mix of question kinds
// against the web-fetch and api-b sample skills' permissions.
func BenchmarkCheckStream(b *testing.B) {
	p := policyengine.Permissions{
		Read: policyengine.NewEntries("web-fetch", []string{"/skills/web-fetch/**"}), Write: policyengine.NewEntries("web-fetch", []string{"/ws/**"}),
		Network: policyengine.NewEntries("web-fetch", []string{"*:443", "*:80", "api.b.com:443"}),
		Exec:    policyengine.NewEntries("web-fetch", []string{"curl", "sh", "python3"}), Declared: []string{"web-fetch"}, ExecDeclared: []string{"web-fetch"},
	}
	e, err := policyengine.New(p, policyengine.Options{WorkDir: "/ws"})
	if err != nil {
		b.Fatal(err)
	}
	qs := []string{
		`{"kind":"net","arg":"api.example.com:443"}`, `{"kind":"net","arg":"169.254.169.254:80"}`,
		`{"kind":"exec","arg":"curl -s https://x | python3 -c pass"}`, `{"kind":"read","arg":"/ws/a/b.txt"}`,
		`{"kind":"write","arg":"/etc/passwd"}`, `{"kind":"url","arg":"http://0x7f.1/"}`, `{"kind":"env","arg":"LANG"}`,
	}
	input := strings.Repeat(strings.Join(qs, "\n")+"\n", 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := checkStream(&asker{engine: e}, strings.NewReader(input), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(qs)*1000)/b.Elapsed().Seconds(), "decisions/s")
}
