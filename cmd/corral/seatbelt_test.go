package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"corral.dev/corral"
	"corral.dev/corral/seatbelt"
)

// runCaptured runs the CLI with args and returns the exit code, stdout
// and stderr. Commands print to os.Stdout, so it is swapped for a file.
func runCaptured(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	saved := os.Stdout
	os.Stdout = out
	var stderr bytes.Buffer
	code := run(args, out, &stderr)
	os.Stdout = saved
	data, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(data), stderr.String()
}

// sampleSkill is a copy of a sample skill in seatbelt's testdata.
func sampleSkill(name string) string {
	return filepath.Join("..", "..", "skills", name)
}

// writeSkillFile writes a SKILL.md with frontmatter into a new folder
// named after the skill, as the Agent Skills format requires.
func writeSkillFile(t *testing.T, name, frontmatter string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	frontmatter = "name: " + name + "\n" + frontmatter
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\n"+frontmatter+"---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSeatbeltCommand(t *testing.T) {
	dir := t.TempDir()
	ws := seatbelt.Canonical(dir) // /tmp/... is /private/tmp/... on macOS
	base := []string{"seatbelt", "--global-policy=", "--work-dir", dir}
	t.Run("profile", func(t *testing.T) {
		code, out, errOut := runCaptured(t, append(base, "--skill", sampleSkill("web-fetch"))...)
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		for _, want := range []string{
			"(version 1)\n(deny default)\n",
			"WRITE_0 = " + ws + "\n",
			`(allow network-outbound (remote ip "localhost:3128"))`,
			`(subpath (param "WRITE_0"))`,
			`(deny file-write*`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	})
	t.Run("proxy port and inline", func(t *testing.T) {
		code, out, _ := runCaptured(t, append(base, "--skill", sampleSkill("web-fetch"), "--proxy-port", "41000", "--inline")...)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(out, `"localhost:41000"`) || strings.Contains(out, "(param ") || !strings.Contains(out, `(subpath "`+ws+`")`) {
			t.Errorf("--proxy-port 41000 --inline:\n%s", out)
		}
	})
	t.Run("no network", func(t *testing.T) {
		code, out, _ := runCaptured(t, append(base, "--skill", sampleSkill("python-data"))...)
		if code != 0 || strings.Contains(out, "(allow network") {
			t.Errorf("exit %d; python-data has no network rule:\n%s", code, out)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, _ := runCaptured(t, append(base, "--skill", sampleSkill("repo-review"), "--json")...)
		var v struct {
			Profile string                         `json:"profile"`
			Params  []struct{ Name, Value string } `json:"params"`
			Args    []string                       `json:"args"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
			t.Fatalf("exit %d, %v:\n%s", code, err, out)
		}
		if !strings.HasPrefix(v.Profile, "; Seatbelt profile") || len(v.Args) != 2*len(v.Params) || len(v.Params) == 0 || v.Args[0] != "-D" {
			t.Errorf("json: %+v", v)
		}
	})
	t.Run("default sandbox", func(t *testing.T) {
		code, out, _ := runCaptured(t, base...)
		if code != 0 || !strings.Contains(out, "WRITE_0 = "+ws+"\n") || !strings.Contains(out, "no exec list") {
			t.Errorf("exit %d; no skill: the work dir writable, no exec list:\n%s", code, out)
		}
	})
	t.Run("warnings on stderr", func(t *testing.T) {
		dir := writeSkillFile(t, "tmp-all", "description: x\npermissions:\n  fs:\n    write: [\"/tmp/**\"]\n  services:\n    pasteboard: {access: read}\n")
		code, out, errOut := runCaptured(t, append(base, "--skill", dir)...)
		if code != 0 || !strings.Contains(errOut, "corral seatbelt: warning: fs.write /tmp/**") || !strings.Contains(errOut, "pasteboard") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		if !strings.Contains(out, `com.apple.pasteboard.1`) {
			t.Errorf("pasteboard service not rendered:\n%s", out)
		}
	})
	for _, c := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"port zero", []string{"--proxy-port", "0"}, "must be a port number"},
		{"port word", []string{"--proxy-port", "http"}, "must be a port number"},
		{"port too big", []string{"--proxy-port", "65536"}, "must be a port number"},
		{"no such skill", []string{"--skill", filepath.Join(dir, "nope")}, "corral seatbelt: "},
		{"extra argument", []string{"extra"}, `unexpected arguments ["extra"]`},
		{"unknown flag", []string{"--nope"}, "unknown flag --nope"},
		{"unknown service", []string{"--skill", writeSkillFile(t, "cam", "description: x\npermissions:\n  services:\n    camera: {access: read}\n")}, `"camera" is not a service corral knows`},
		{"bad access", []string{"--skill", writeSkillFile(t, "note", "description: x\npermissions:\n  services:\n    notifications: {access: read}\n")}, "takes access send, full"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCaptured(t, append(base, c.args...)...)
			if code != corral.ExitFailed || out != "" || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q (want %q)", code, corral.ExitFailed, out, errOut, c.want)
			}
			if c.name == "unknown service" && strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("more than one line: %q", errOut)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		if code, _, _ := runCaptured(t, "seatbelt", "-h"); code != 0 {
			t.Errorf("-h: exit %d", code)
		}
	})
}
