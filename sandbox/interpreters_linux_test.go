package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"corral/policyengine"
)

// TestScriptInterpreters: the #! interpreter of an exec entry (and what
// #!/usr/bin/env finds, and an interpreter's own interpreter) is found
// with the symlinks leading to it; ELF programs bring none.
func TestScriptInterpreters(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inner := write("inner", "#!/bin/sh\necho\n")
	if err := os.Symlink("inner", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	outer := write("outer", "#!"+filepath.Join(dir, "link")+" -x\n")
	envScript := write("envy", "#!/usr/bin/env sh\n")
	p := policyengine.Permissions{Exec: policyengine.NewEntries("t", []string{outer, envScript, "ls"}), ExecDeclared: []string{"t"}}
	got := ScriptInterpreters(p, dir)
	sh, _ := filepath.EvalSymlinks("/bin/sh")
	for _, want := range []string{filepath.Join(dir, "link"), inner, "/bin/sh", sh, "/usr/bin/env"} {
		if got[want] == "" {
			t.Errorf("ScriptInterpreters lacks %s: %v", want, got)
		}
	}
	if got[inner] != outer {
		t.Errorf("%s is brought by %q, want %s", inner, got[inner], outer)
	}
	for k := range got {
		if filepath.Base(k) == "ls" {
			t.Errorf("ls is an ELF program, yet %s is an interpreter", k)
		}
	}
	p.ExecDeclared = nil
	if got := ScriptInterpreters(p, dir); got != nil {
		t.Errorf("without an exec list: %v", got)
	}
}
