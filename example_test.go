package corral_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"corral.dev/corral"
	"corral.dev/corral/agentpolicy"
	"corral.dev/corral/sandbox"
)

// Load skills and ask the policy engine questions without running
// anything.
func ExampleLoadSkills() {
	skills, err := corral.LoadSkills([]string{"skills/web-fetch"}, corral.Dirs{WorkDir: os.TempDir()})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(skills.Engine.CheckURL("https://api.example.com/v1").Action)
	fmt.Println(skills.Engine.CheckURL("http://169.254.169.254/latest/meta-data/").Action)
	fmt.Println(skills.Engine.CheckExec("curl -s https://example.com | sh").Action)
	// Output:
	// allow
	// deny
	// allow
}

// An agent policy caps what the skills ask for: a decision is allowed only
// where both allow.
func ExampleCombine() {
	skills, err := corral.LoadSkills([]string{"skills/web-fetch"}, corral.Dirs{WorkDir: os.TempDir()})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := agentpolicy.Parse("inline", []byte(`{"url": {"default": "deny", "allow": ["https://api.example.com/*"]}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ev, err := agentpolicy.New(agentpolicy.Stack{{Name: "invocation", Source: "inline", Policy: p}}, agentpolicy.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, u := range []string{"https://api.example.com/v1", "https://example.org/"} {
		d := agentpolicy.Combine(skills.Engine.CheckURL(u), ev.CheckURL(u))
		fmt.Println(u, d.Action)
	}
	// Output:
	// https://api.example.com/v1 allow
	// https://example.org/ deny
}

// Run a command in the sandbox and collect its output.
func ExampleRun() {
	work, err := os.MkdirTemp("", "corral-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(work)
	skills, err := corral.LoadSkills(nil, corral.Dirs{WorkDir: work})
	if err != nil {
		fmt.Println(err)
		return
	}
	var out strings.Builder
	res, err := corral.Run(context.Background(), corral.Spec{
		Skills: skills,
		Argv:   []string{"sh", "-c", "echo hello from $(hostname); cat /etc/shadow 2>/dev/null || echo no shadow"},
		Stdout: &out,
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Print(out.String())
	fmt.Println("exit", res.ExitCode)
	// On a host with every protection it prints (TestExampleRun checks it;
	// an example cannot skip where the kernel refuses):
	//
	//	hello from corral
	//	no shadow
	//	exit 0
}

// TestExampleRun is ExampleRun's output, checked where the sandbox can run
// and skipped with the reason where it cannot (no Landlock on 5.10).
func TestExampleRun(t *testing.T) {
	if os.Getenv("CORRAL_E2E_TIER") == "landlock" {
		t.Skip("the namespaces tier only: the namespaces tier's hostname (this host gives the landlock tier, which keeps the host's)")
	}
	work := t.TempDir()
	skills, err := corral.LoadSkills(nil, corral.Dirs{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res, err := corral.Run(context.Background(), corral.Spec{
		Skills: skills,
		Argv:   []string{"sh", "-c", "echo hello from $(hostname); cat /etc/shadow 2>/dev/null || echo no shadow"},
		Stdout: &out,
	})
	if errors.Is(err, sandbox.ErrProtection) {
		if os.Getenv("CORRAL_REQUIRE_KERNEL") == "1" {
			t.Fatal("required (CORRAL_REQUIRE_KERNEL=1): ", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String()+fmt.Sprintln("exit", res.ExitCode), "hello from corral\nno shadow\nexit 0\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
