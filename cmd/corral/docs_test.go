package main

import (
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docOutput is what docs writes in format.
func docOutput(t *testing.T, format string) string {
	t.Helper()
	var b strings.Builder
	docWriters[format](&b, docCommands())
	return b.String()
}

// tableFlags are the flags each command registers, read from the table
// here rather than through docCommands, so a command or flag docs left
// out is caught.
func tableFlags(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range commands {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.setup(fs)
		out[c.name] = []string{}
		fs.VisitAll(func(f *flag.Flag) { out[c.name] = append(out[c.name], f.Name) })
	}
	if len(out) != len(commands) || len(out["exec"]) == 0 {
		t.Fatalf("the command table has %d commands (exec %d flags)", len(out), len(out["exec"]))
	}
	return out
}

// section is the part of s from the first start to the next end after
// it, or "".
func section(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestDocsCoverEveryCommandAndFlag: the man page and each completion
// name every command of the table, and under it every flag it takes.
func TestDocsCoverEveryCommandAndFlag(t *testing.T) {
	man, bash, zsh, fish := docOutput(t, "man"), docOutput(t, "bash"), docOutput(t, "zsh"), docOutput(t, "fish")
	top := strings.Fields(section(section(bash, "if [ \"$COMP_CWORD\" -le 1 ]; then", "return"), "-W '", "'"))
	for name, flags := range tableFlags(t) {
		manSec := section(man, ".SS "+name+"\n", ".S")
		bashSec := section(bash, "\n\t"+name+")\n", "\t\t;;\n")
		zshSec := section(zsh, "\n\t\t"+name+")\n", ";;\n")
		if manSec == "" || bashSec == "" || zshSec == "" {
			t.Errorf("%s: no section in the man page (%v), bash (%v) or zsh (%v)", name, manSec != "", bashSec != "", zshSec != "")
		}
		if !slices.Contains(top, name) || !strings.Contains(zsh, "\t\t'"+name+":") || !strings.Contains(fish, "-f -a "+name+" -d ") {
			t.Errorf("%s: not offered as a command by bash, zsh or fish", name)
		}
		bashFlags := strings.Fields(section(bashSec, "flags='", "'"))
		for _, f := range flags {
			if !strings.Contains(manSec, `.TP`+"\n"+`\fB\-\-`+roffText(f)+`\fR`) {
				t.Errorf("man page: corral %s --%s is missing", name, f)
			}
			if !slices.Contains(bashFlags, "--"+f) {
				t.Errorf("bash: corral %s --%s is missing", name, f)
			}
			if !strings.Contains(zshSec, "'--"+f+"[") && !strings.Contains(zshSec, "'--"+f+"=[") && !strings.Contains(zshSec, "'*--"+f+"=[") {
				t.Errorf("zsh: corral %s --%s is missing", name, f)
			}
			if !strings.Contains(fish, "complete -c corral -n '__corral_is "+name+"' -l "+f+" ") {
				t.Errorf("fish: corral %s --%s is missing", name, f)
			}
		}
	}
}

// TestDocFlagValues: each word docs offers for a flag is one the flag
// takes, and the flag refuses others (so the list is not a guess).
func TestDocFlagValues(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.setup(fs)
		for name, values := range flagValues {
			if fs.Lookup(name) == nil {
				continue
			}
			seen[name] = true
			for _, v := range values {
				if err := fs.Set(name, v); err != nil {
					t.Errorf("corral %s --%s %s: %v", c.name, name, v, err)
				}
			}
			if fs.Set(name, "no-such-value") == nil {
				t.Errorf("corral %s --%s takes any value: it is not a fixed set", c.name, name)
			}
		}
	}
	for name := range flagValues {
		if !seen[name] {
			t.Errorf("flagValues names --%s, which no command has", name)
		}
	}
}

func TestUsageWords(t *testing.T) {
	want := map[string][]string{
		"check":  {"read", "write", "net", "url", "exec", "env", "tool"},
		"policy": {"schema", "validate", "remember"},
		"setup":  {"apparmor"},
	}
	for _, c := range docCommands() {
		if !slices.Equal(c.words, want[c.name]) {
			t.Errorf("corral %s: first-argument words %q, want %q (synopsis %q)", c.name, c.words, want[c.name], c.synopsis)
		}
	}
}

// TestDocFlagKinds: what completes a flag's value, from the name its
// help gives the value.
func TestDocFlagKinds(t *testing.T) {
	want := map[string]valueKind{"skill": valueFile, "report": valueFile, "work-dir": valueDir, "tier": valueWord, "memory": valueText, "cgroup-parent": valueText, "best-effort": valueNone}
	for _, c := range docCommands() {
		if c.name != "exec" {
			continue
		}
		for _, f := range c.flags {
			if k, ok := want[f.name]; ok && f.kind != k {
				t.Errorf("corral exec --%s (value %q): kind %d, want %d", f.name, f.arg, f.kind, k)
			}
			delete(want, f.name)
		}
	}
	if len(want) > 0 {
		t.Errorf("corral exec has no flags %v", want)
	}
}

func TestVersionFlag(t *testing.T) {
	for _, name := range []string{"--version", "-version"} {
		if lookup(name) != &versionCommand {
			t.Errorf("corral %s is not corral version", name)
		}
	}
	if code := run([]string{"docs", "troff"}, io.Discard, io.Discard); code != 125 {
		t.Errorf("corral docs troff: exit %d, want 125", code)
	}
}

// writeDoc writes format's output to a file in a temporary folder.
func writeDoc(t *testing.T, format, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(docOutput(t, format)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// needTool skips when a shell or formatter the test runs is missing.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed", name)
	}
}

// TestBashCompletion runs the completion function as bash would, for
// command lines typed so far.
func TestBashCompletion(t *testing.T) {
	needTool(t, "bash")
	script := writeDoc(t, "bash", "corral.bash")
	for _, c := range []struct {
		line string // the words typed; the last one is being completed
		want string // COMPREPLY, one per line
	}{
		{"corral ex", "exec explain"},
		{"corral --v", "--version"},
		{"corral exec --sk", "--skill"},
		{"corral exec --tier l", "landlock"},
		{"corral exec --tier = n", "namespaces"}, // --tier=n: bash splits at =
		{"corral exec --memory ", ""},
		{"corral check r", "read"},
		{"corral check --work-dir /tmp --json", ""},
		{"corral check --work-dir /tmp t", "tool"},
		{"corral check read w", ""},
		{"corral policy v", "validate"},
		{"corral help se", "seatbelt setup"},
		{"corral exec -- sh -c tru", ""},
	} {
		words := strings.Split(c.line, " ")
		cmd := exec.Command("bash", "-c", `. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _corral 2>/dev/null; printf '%s\n' "${COMPREPLY[@]}"`, "bash", script)
		cmd.Args = append(cmd.Args, words...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if got := strings.Fields(string(out)); strings.Join(got, " ") != c.want {
			t.Errorf("%q completes to %q, want %q", c.line, got, c.want)
		}
	}
	// After exec's --, a command name (true, truncate, ...).
	out, err := exec.Command("bash", "-c", `. "$1"; COMP_WORDS=(corral exec --skill s -- tru); COMP_CWORD=5; _corral; printf '%s\n' "${COMPREPLY[@]}"`, "bash", script).Output()
	if err != nil || !slices.Contains(strings.Fields(string(out)), "true") {
		t.Errorf("corral exec --skill s -- tru: %v, completes to %q, not true", err, out)
	}
}

// TestFishCompletion asks fish what it would offer.
func TestFishCompletion(t *testing.T) {
	needTool(t, "fish")
	script := writeDoc(t, "fish", "corral.fish")
	for _, c := range []struct {
		line     string
		want     []string
		dontWant []string
	}{
		{"corral ch", []string{"check"}, nil},
		{"corral exec --ti", []string{"--tier"}, nil},
		{"corral exec --tier ", []string{"auto", "namespaces", "landlock"}, nil},
		{"corral check ", []string{"read", "tool"}, []string{"exec\tRun"}},
		{"corral check --work-dir /tmp ", []string{"read"}, nil},
		{"corral check read ", nil, []string{"write"}},
		{"corral setup --", []string{"--print", "--path", "--dir"}, []string{"--skill"}},
	} {
		out, err := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, script, c.line).Output()
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: fish offers %q, not %q", c.line, got, w)
			}
		}
		for _, w := range c.dontWant {
			if strings.Contains(string(out), w+"\n") || slices.Contains(got, w) {
				t.Errorf("%q: fish offers %q", c.line, w)
			}
		}
	}
}

// TestZshCompletionParses: zsh reads the script (its completion needs a
// terminal to be driven: it was tried by hand under zpty).
func TestZshCompletionParses(t *testing.T) {
	// A local named commands would hide zsh's own $commands, which
	// completing a command name after exec's -- reads.
	if strings.Contains(docOutput(t, "zsh"), "local -a commands") {
		t.Errorf("the zsh completion shadows $commands")
	}
	needTool(t, "zsh")
	if out, err := exec.Command("zsh", "-n", writeDoc(t, "zsh", "_corral")).CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v\n%s", err, out)
	}
}

// TestManPageFormats: groff reads corral.1 without a warning.
func TestManPageFormats(t *testing.T) {
	needTool(t, "groff")
	out, err := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z", writeDoc(t, "man", "corral.1")).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("groff -ww: %v\n%s", err, out)
	}
}
