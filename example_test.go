package corral_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"corral"
	"corral/policy"
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
	skills, _ := corral.LoadSkills([]string{"skills/web-fetch"}, corral.Dirs{WorkDir: os.TempDir()})
	p, err := policy.Parse("inline", []byte(`{"url": {"default": "deny", "allow": ["https://api.example.com/*"]}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ev, _ := policy.New(policy.Stack{{Name: "invocation", Source: "inline", Policy: p}}, policy.Options{})
	for _, u := range []string{"https://api.example.com/v1", "https://example.org/"} {
		d := policy.Combine(skills.Engine.CheckURL(u), ev.CheckURL(u))
		fmt.Println(u, d.Action)
	}
	// Output:
	// https://api.example.com/v1 allow
	// https://example.org/ deny
}

// Run a command in the sandbox and collect its output.
func ExampleRun() {
	work, _ := os.MkdirTemp("", "corral-example")
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
	// Output:
	// hello from corral
	// no shadow
	// exit 0
}
