package seatbelt

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/skill"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// sampleSkills are the sample skills kept in the repository's skills
// folder (copies of the shared reference skills).
var sampleSkills = []string{"api-a", "api-b", "plain", "python-data", "repo-review", "web-fetch"}

// goldenVars are the path variables of every golden profile: a macOS
// layout, with TMPDIR under /var so canonicalisation shows.
var goldenVars = skill.Variables{WorkDir: "/Users/u/ws", DataDir: "/Users/u/Library/corral", Home: "/Users/u", TmpDir: "/var/folders/zz/T"}

// samplePerms merges the named sample skills as the CLI does (the default
// sandbox when none declares permissions), with SKILL_DIR /skills/NAME.
func samplePerms(t testing.TB, names ...string) policyengine.Permissions {
	t.Helper()
	var list []*skill.Skill
	for _, n := range names {
		s, err := skill.Load(filepath.Join("..", "skills", n))
		if err != nil {
			t.Fatal(err)
		}
		s.Dir = "/skills/" + n
		list = append(list, s)
	}
	p, err := skill.Merge(list, goldenVars)
	if err != nil {
		t.Fatal(err)
	}
	if p.IsDefault() {
		p = p.Merge(skill.DefaultPermissions(goldenVars.WorkDir))
	}
	return p
}

type goldenCase struct {
	name   string
	skills []string
	opts   Options
}

func goldenCases() []goldenCase {
	var cases []goldenCase
	for _, s := range sampleSkills {
		cases = append(cases, goldenCase{s, []string{s}, Options{ProxyPort: 3128}})
	}
	return append(cases,
		goldenCase{"no-skills", nil, Options{ProxyPort: 3128}},
		goldenCase{"api-a+api-b", []string{"api-a", "api-b"}, Options{ProxyPort: 3128}},
		goldenCase{"web-fetch+python-data", []string{"web-fetch", "python-data"}, Options{ProxyPort: 3128}},
		goldenCase{"inline-python-data", []string{"python-data"}, Options{Inline: true}},
		// What corral exec renders on macOS: a private TMPDIR, the
		// resolved programs and the real path of a symlinked grant.
		goldenCase{"exec-web-fetch", []string{"web-fetch"}, Options{
			ProxyPort: 49152,
			TmpDir:    "/private/var/folders/zz/T/corral-run-1",
			Programs:  []string{"/bin/bash", "/usr/bin/curl"},
			RealPaths: map[string]string{"/Users/u/ws": "/Volumes/work/ws"},
		}},
	)
}

// TestGolden renders every sample skill (and a few combinations) and
// compares with testdata/golden; go test -update rewrites them.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			prof, err := Render(samplePerms(t, c.skills...), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			out.WriteString(prof.Text)
			for _, w := range prof.Warnings {
				out.WriteString(";; warning: " + w + "\n")
			}
			file := filepath.Join("testdata", "golden", c.name+".sb")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./seatbelt -update to write it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("%s differs from the rendered profile (go test ./seatbelt -update rewrites it); rendered:\n%s", file, firstDiff(out.String(), string(want)))
			}
			if _, err := checkProfile(prof.Text); err != nil {
				t.Errorf("not well-formed: %v", err)
			}
		})
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  got:  " + gl + "\n  want: " + wl
		}
	}
	return "(same lines)"
}
