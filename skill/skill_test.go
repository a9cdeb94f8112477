package skill

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sharedSkills is the repository's folder of sample skills.
const sharedSkills = "../skills"

// writeSkill writes text as the SKILL.md of a new folder named x, the
// name the tests' skills take.
func writeSkill(t *testing.T, text string) string {
	t.Helper()
	return writeSkillIn(t, "x", text)
}

// writeSkillIn writes text as the SKILL.md of a new folder named folder.
func writeSkillIn(t *testing.T, folder, text string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadSharedSkills(t *testing.T) {
	for _, name := range []string{"api-a", "api-b", "plain", "python-data", "repo-review", "web-fetch"} {
		s, err := Load(filepath.Join(sharedSkills, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.Name != name {
			t.Errorf("name = %q, want %q", s.Name, name)
		}
		if (s.Permissions == nil) != (name == "plain") {
			t.Errorf("%s: permissions = %v", name, s.Permissions)
		}
	}
	s, err := Load(filepath.Join(sharedSkills, "python-data", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Memory: 256 << 20, Pids: 64, Timeout: 60 * time.Second}
	if s.Permissions.Limits != want {
		t.Errorf("limits = %+v, want %+v", s.Permissions.Limits, want)
	}
	if !strings.Contains(s.Body, "crunch.py") {
		t.Errorf("body lost: %q", s.Body)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // substring of the error, which also names the file
	}{
		{"no frontmatter", "# just markdown\n", "no frontmatter"},
		{"unclosed", "---\nname: x\n", "not closed"},
		{"malformed yaml", "---\nname: [x\n---\n", "malformed YAML"},
		{"unknown key", "---\nname: x\ncolour: red\n---\n", ":3: colour: unknown field"},
		{"unknown nested key", "---\nname: x\npermissions:\n  fs:\n    exec: [a]\n---\n", ":5: permissions.fs.exec: unknown field"},
		{"wrong type", "---\nname: x\npermissions:\n  exec: curl\n---\n", ":4: permissions.exec: must be a list"},
		{"wrong item type", "---\nname: x\npermissions:\n  exec: [1]\n---\n", "permissions.exec[0]: must be a string"},
		{"missing name", "---\ndescription: d\n---\n", "name: missing"},
		{"bad name", "---\nname: 'a b'\n---\n", ":2: name: \"a b\" breaks the Agent Skills name rule"},
		{"port 0", "---\nname: x\npermissions:\n  network:\n    allow: ['a.com:0']\n---\n", ":5: permissions.network.allow[0]"},
		{"port 70000", "---\nname: x\npermissions:\n  network:\n    allow: ['a.com:70000']\n---\n", "70000"},
		{"bad host *.", "---\nname: x\npermissions:\n  network:\n    allow: ['*.:443']\n---\n", "permissions.network.allow[0]"},
		{"bad host a*b", "---\nname: x\npermissions:\n  network:\n    allow: ['a*b.com:443']\n---\n", "permissions.network.allow[0]"},
		{"unclosed bracket", "---\nname: x\npermissions:\n  fs:\n    read: ['$WORK_DIR/[a']\n---\n", "permissions.fs.read[0]"},
		{"unknown var", "---\nname: x\npermissions:\n  fs:\n    read: ['$SECRET/x']\n---\n", "unknown variable $SECRET"},
		{"relative glob", "---\nname: x\npermissions:\n  fs:\n    read: ['data/**']\n---\n", "not an absolute path"},
		{"bad size", "---\nname: x\npermissions:\n  limits:\n    memory: lots\n---\n", ":5: permissions.limits.memory"},
		{"zero size", "---\nname: x\npermissions:\n  limits:\n    memory: 0\n---\n", "permissions.limits.memory"},
		{"bad duration", "---\nname: x\npermissions:\n  limits:\n    timeout: soon\n---\n", "permissions.limits.timeout"},
		{"negative pids", "---\nname: x\npermissions:\n  limits:\n    pids: -1\n---\n", "permissions.limits.pids"},
		{"bad env", "---\nname: x\npermissions:\n  env: ['A-B']\n---\n", "permissions.env[0]"},
		{"bad exec", "---\nname: x\npermissions:\n  exec: ['bin/curl']\n---\n", "relative path"},
		{"duplicate key", "---\nname: x\nname: y\n---\n", "name"},
		{"bad service access", "---\nname: x\npermissions:\n  services:\n    notifications: {access: all}\n---\n", "services.notifications.access"},
		{"top-level list", "---\n- a\n---\n", "must be a mapping"},
		{"empty", "---\n---\n", "empty frontmatter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSkill(t, tt.text)
			_, err := Load(dir)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "SKILL.md") {
				t.Errorf("error %q does not name the file and %q", err, tt.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("error is %T, want *skill.Error", err)
			}
		})
	}
}

func TestLoadNotASkill(t *testing.T) {
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a skill") {
		t.Errorf("err = %v", err)
	}
	if _, err := Load("/nonexistent/skill"); err == nil || !strings.Contains(err.Error(), "no such skill") {
		t.Errorf("err = %v", err)
	}
}

func TestHugeFrontmatter(t *testing.T) {
	text := "---\nname: x\ndescription: " + strings.Repeat("a", 10<<20) + "\n---\n"
	_, err := Load(writeSkill(t, text))
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("err = %v", err)
	}
	text = "---\nname: x\ndescription: " + strings.Repeat("a", 100<<10) + "\n---\n"
	_, err = Load(writeSkill(t, text))
	if err == nil || !strings.Contains(err.Error(), "frontmatter is larger") {
		t.Errorf("err = %v", err)
	}
}

func TestDuplicateNames(t *testing.T) {
	a := writeSkillIn(t, "same", "---\nname: same\ndescription: d\n---\n")
	b := writeSkillIn(t, "same", "---\nname: same\ndescription: d\n---\n")
	if _, err := LoadAll([]string{a, b}); err == nil || !strings.Contains(err.Error(), "two skills are named") {
		t.Errorf("err = %v", err)
	}
	if s, err := LoadAll([]string{a, a}); err != nil || len(s) != 1 {
		t.Errorf("the same skill twice: %v, %d skills", err, len(s))
	}
}

func TestParseSize(t *testing.T) {
	// Docker's and systemd's notation: every unit a power of 1024, in
	// either case, with an optional i, B or iB.
	good := map[string]int64{"256Mi": 256 << 20, "512MiB": 512 << 20, "1G": 1 << 30, "1Gi": 1 << 30, "1048576": 1 << 20,
		"2M": 2 << 20, "512m": 512 << 20, "512mb": 512 << 20, "1g": 1 << 30, "2GB": 2 << 30, "1.5g": 3 << 29, "1t": 1 << 40}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1Mi", "1Xi", "Mi", "i", "1i", "1ib", "1mbi", "1.5", "1.", ".5g", "1..5g", "1.5.5g", "99999999999999Ti", "9223372036854775808", "100", "0.0001k", "1e3m", "0x10m", "+1g"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
	if n, err := ParseBytes("4k"); err != nil || n != 4096 {
		t.Errorf("ParseBytes(4k) = %d, %v", n, err)
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{"90": 90 * time.Second, "1.5": 1500 * time.Millisecond, "30s": 30 * time.Second, "5m": 5 * time.Minute, "1h30m": 90 * time.Minute, " 2 ": 2 * time.Second}
	for in, want := range good {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "-5s", "5x", ".", "s", "1..5", "0s"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q): no error", in)
		}
	}
}
