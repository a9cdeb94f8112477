package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// TestKernelExec: the kernel's exec rule is on files, so a link to an
// allowed program, the #! interpreter of an allowed script (also through
// #!/usr/bin/env and a symlinked interpreter) and that one's interpreter
// run; other programs, a copy, and a file in a noexec folder do not.
func TestKernelExec(t *testing.T) {
	// Not under /tmp, which the sandbox replaces with its own: beside the
	// test, or in the home folder when the repository is in /tmp.
	base, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if hiddenRootOf(base) != "" {
		if base, err = os.UserHomeDir(); err != nil || hiddenRootOf(base) != "" {
			t.Skipf("both the package folder and the home folder (%q, %v) lie in folders the sandbox keeps private", base, err)
		}
	}
	dir, err := os.MkdirTemp(base, "kernelexec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
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
	envScript := write("envy", "#!/usr/bin/env bash\n")
	if _, err := os.Stat("/usr/bin/ls"); err != nil {
		t.Skipf("the cases name /usr/bin/ls, as on a merged /usr; this host has none (%v): Debian 11's /bin is its own folder", err)
	}
	if err := os.Symlink("/usr/bin/ls", filepath.Join(work, "myls")); err != nil {
		t.Fatal(err)
	}
	lsCopy, _ := os.ReadFile("/usr/bin/ls")
	if err := os.WriteFile(filepath.Join(work, "lscopy"), lsCopy, 0o755); err != nil {
		t.Fatal(err)
	}
	p := policyengine.Permissions{Exec: policyengine.NewEntries("t", []string{outer, envScript, "ls"}), ExecDeclared: []string{"t"},
		Write: policyengine.NewEntries("t", []string{work + "/**"})}
	kernel := KernelExec(p, work)
	for _, tt := range []struct {
		prog string
		want string // "" for refused
	}{
		{inner, "#! interpreter of exec entry " + outer},
		{filepath.Join(dir, "link"), "#! interpreter of exec entry " + outer},
		{"sh", "#! interpreter"}, // inner's own interpreter
		{"/bin/sh", "#! interpreter"},
		{"dash", "#! interpreter"},
		{"bash", "#! interpreter of exec entry " + envScript},
		{"/usr/bin/env", "#! interpreter of exec entry " + envScript},
		{"/usr/bin/ls", "the file of exec entry ls"},
		{"./myls", "the file of exec entry ls"},
		{"./lscopy", ""},
		{"cat", ""},
		{"/usr/bin/cat", ""},
		{"/tmp/../usr/bin/ls", "the file of exec entry ls"},
		{"nonexistent-program", ""},
	} {
		why, ok := kernel(tt.prog)
		if ok != (tt.want != "") || !strings.Contains(why, tt.want) {
			t.Errorf("KernelExec(%q) = %q, %v; want %q", tt.prog, why, ok, tt.want)
		}
	}
	p.ExecDeclared = nil
	if KernelExec(p, work) != nil {
		t.Errorf("without an exec list KernelExec answers")
	}
}

// TestKernelExecUnderTmp: an allowed program the exec list names under
// /tmp is bound executable where it is, so a path to it through a
// symlinked folder runs, as it does under /var/tmp (issue 27, item 4);
// a hard link of it elsewhere in /tmp, the sandbox's own noexec /tmp,
// or in the work dir does not.
func TestKernelExecUnderTmp(t *testing.T) {
	dir := t.TempDir()
	if hiddenRootOf(dir) != "/tmp" {
		t.Skipf("the test's temporary folder %s is not under /tmp", dir)
	}
	for _, d := range []string{"pbin", "outside", "work"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tool := filepath.Join(dir, "pbin", "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "pbin"), filepath.Join(dir, "outside", "l-pbin")); err != nil {
		t.Fatal(err)
	}
	for _, hard := range []string{filepath.Join(dir, "hard"), filepath.Join(dir, "work", "hard")} {
		if err := os.Link(tool, hard); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(dir, "work")
	p := policyengine.Permissions{Exec: policyengine.NewEntries("t", []string{tool}), ExecDeclared: []string{"t"}}
	kernel := KernelExec(p, work)
	for _, tt := range []struct {
		prog string
		ok   bool
	}{
		{filepath.Join(dir, "outside", "l-pbin", "tool"), true},
		{filepath.Join(dir, "hard"), false},
		{"./hard", false},
	} {
		if why, ok := kernel(tt.prog); ok != tt.ok {
			t.Errorf("KernelExec(%q) = %q, %v; want %v", tt.prog, why, ok, tt.ok)
		}
	}
}
