package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
)

// TestStateDirGrantsRefused: a write grant of the folder where the
// program index lives, or of one inside it (the mount cache), would let a
// command plant the next run's index or root: it is refused.
func TestStateDirGrantsRefused(t *testing.T) {
	perms := policyengine.Permissions{Write: policyengine.NewEntries("t", []string{"/run/corral/**"}), Declared: []string{"t"}}
	facts := fakeFacts([]string{"/run/corral", "/ws"}, nil, "sh")
	facts.StateDirs = []string{"/run/corral"}
	if _, err := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts); err == nil || !strings.Contains(err.Error(), "program index") {
		t.Fatalf("a write grant of the index folder was not refused: %v", err)
	}
	// Nor one inside it, where the mount cache is.
	perms.Write = policyengine.NewEntries("t", []string{"/run/corral/mounts/**"})
	facts = fakeFacts([]string{"/run/corral", "/run/corral/mounts", "/ws"}, nil, "sh")
	facts.StateDirs = []string{"/run/corral"}
	if _, err := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts); err == nil || !strings.Contains(err.Error(), "mount cache") {
		t.Fatalf("a write grant inside the state folder was not refused: %v", err)
	}
}

func TestGitHooksPath(t *testing.T) {
	dir := t.TempDir()
	for config, want := range map[string]string{
		"[core]\n\thooksPath = .husky\n":                        ".husky",
		"[core]\n\thookspath = \".husky\" # husky\n":            ".husky",
		"[core]\n\tbare = false\n\thooksPath=hooks ; x\n":       "hooks",
		"[user]\n\thooksPath = no\n[core]\n\tfilemode = true\n": "",
		"[core \"x\"]\n\thooksPath = sub\n":                     "",
		"[core]\nhooksPath = a\nhooksPath = b\n":                "b",
	} {
		f := filepath.Join(dir, "config")
		if err := os.WriteFile(f, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := gitHooksPath(f); got != want {
			t.Errorf("%q: got %q, want %q", config, got, want)
		}
	}
}

func TestGlobalHooksPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	if got := GlobalHooksPath(home); got != "" {
		t.Errorf("no global config: got %q", got)
	}
	os.MkdirAll(filepath.Join(home, ".config/git"), 0o755)
	os.WriteFile(filepath.Join(home, ".config/git/config"), []byte("[core]\n\thooksPath = .xdghooks\n"), 0o644)
	if got := GlobalHooksPath(home); got != ".xdghooks" {
		t.Errorf("XDG config: got %q", got)
	}
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = .githooks\n"), 0o644)
	if got := GlobalHooksPath(home); got != ".githooks" {
		t.Errorf("~/.gitconfig, read after the XDG one: got %q", got)
	}
}

func TestGitconfigSecret(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]bool{
		"[user]\n\tname = a\n[safe]\n\tdirectory = *\n":                                false,
		"[credential]\n\thelper = cache\n":                                             false,
		"[http \"https://git.corp/\"]\n\textraHeader = Authorization: Basic eA==\n":    true,
		"[url \"https://bot:s3cret@git.corp/\"]\n\tinsteadOf = https://git.corp/\n":    true,
		"[url \"https://git@git.corp/\"]\n\tinsteadOf = https://git.corp/\n":           false,
		"[remote \"o\"]\n\turl = ssh://git@host:22/x\n":                                false,
		"[custom]\n\tapiToken = abc\n":                                                 true,
		"# password = not a setting\n":                                                 false,
		"[credential]\n\thelper = \"!f() { echo password=hunter2; }; f\"\n":            true,
		"[url \"https://ghp_abc@github.com/\"]\n\tinsteadOf = https://github.com/\n":   true,
		"[url \"https://org@dev.azure.com/\"]\n\tinsteadOf = https://dev.azure.com/\n": false,
		"[remote \"o\"]\n\turl = https://github.com/o/r\n":                             false,
	} {
		p := filepath.Join(dir, "gitconfig")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := gitconfigSecret(p) != ""; got != want {
			t.Errorf("gitconfigSecret(%q) = %q, want a reason: %v", content, gitconfigSecret(p), want)
		}
	}
}
