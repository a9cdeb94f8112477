// Package corral runs untrusted commands in a kernel sandbox built from
// skills' permissions, capped by an agent policy. It is the Go API under
// the corral command: orchestrators written in Go load skills, ask
// decisions and run commands with it directly.
//
//	skills, _ := corral.LoadSkills([]string{"skills/web-fetch"}, corral.Dirs{WorkDir: "/ws"})
//	d := skills.Engine.CheckURL("https://api.example.com/v1")
//	res, err := corral.Run(ctx, corral.Spec{Skills: skills, Argv: []string{"curl", "-s", "https://api.example.com/v1"}})
//
// The kernel sandbox is Linux-only; see the README for what it enforces.
package corral

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"corral.dev/corral/agentpolicy"
	"corral.dev/corral/netns"
	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
	"corral.dev/corral/skill"
)

// Dirs are the folders skills' paths expand against. Empty fields take
// their defaults: WorkDir the current directory, DataDir
// $XDG_DATA_HOME/corral (or ~/.local/share/corral), Home $HOME, TmpDir
// $TMPDIR (or /tmp).
type Dirs struct {
	WorkDir, DataDir, Home, TmpDir string
}

// Skills are loaded skills with their merged permissions and the policy
// engine that answers questions about them.
type Skills struct {
	List   []*skill.Skill
	Perms  policyengine.Permissions
	Vars   skill.Variables
	Engine *policyengine.Engine
	// Exports are variables set in the command's environment: where the
	// skills' $DATA_DIR folders are (DATA_DIR, or DATA_DIR_<NAME> each).
	Exports []string
}

// Names are the names of the loaded skills.
func (s *Skills) Names() []string {
	names := make([]string, len(s.List))
	for i, sk := range s.List {
		names[i] = sk.Name
	}
	return names
}

// LoadSkills reads skill folders (or SKILL.md paths), merges their
// permissions and builds the engine. No skill, or skills that declare no
// permissions, give the default sandbox: the work dir writable.
func LoadSkills(paths []string, d Dirs) (*Skills, error) {
	vars, err := d.variables()
	if err != nil {
		return nil, err
	}
	list, err := skill.LoadAll(paths)
	if err != nil {
		return nil, err
	}
	perms, err := skill.Merge(list, vars)
	if err != nil {
		return nil, err
	}
	if perms.IsDefault() {
		perms = perms.Merge(skill.DefaultPermissions(vars.WorkDir))
	}
	perms = perms.Merge(hostCAs(os.Getenv, vars))
	return withPerms(list, perms, vars)
}

func withPerms(list []*skill.Skill, perms policyengine.Permissions, vars skill.Variables) (*Skills, error) {
	// The kernel's exec rule is on files: the engine asks what else it
	// lets run (links to an allowed program, #! interpreters).
	engine, err := policyengine.New(perms, policyengine.Options{WorkDir: vars.WorkDir, KernelExec: sandbox.KernelExec(perms, vars.WorkDir), Exists: sandbox.ProgramExists(perms, vars.WorkDir)})
	if err != nil {
		return nil, err
	}
	return &Skills{List: list, Perms: perms, Vars: vars, Engine: engine, Exports: dataDirExports(list, perms, vars)}, nil
}

// Capped returns the skills with their permissions intersected with the
// policy's caps (Evaluator.Narrow), and notes on what changed.
func (s *Skills) Capped(ev *agentpolicy.Evaluator) (*Skills, []string, error) {
	if ev == nil || ev.Empty() {
		return s, nil, nil
	}
	// The machine's own addresses: a cap naming one must not turn a
	// skill's wildcard, which never reaches them, into a grant that does.
	perms, notes := ev.WithHostAddrs(netns.SystemHostAddrs()).Narrow(s.Perms)
	c, err := withPerms(s.List, perms, s.Vars)
	return c, notes, err
}

// Policy loads the agent policy layers (see agentpolicy.LoadStack) and compiles
// them for these skills, with the commands their allowed-tools pre-approve.
// global "" skips the global file.
func (s *Skills) Policy(global, project, invocation string) (*agentpolicy.Evaluator, error) {
	stack, err := agentpolicy.LoadStack(global, project, invocation)
	if err != nil {
		return nil, err
	}
	return agentpolicy.New(stack, agentpolicy.Options{Vars: s.Vars, Skills: s.Names(), Preapproved: agentpolicy.Preapprovals(s.List)})
}

func (d Dirs) variables() (skill.Variables, error) {
	work := d.WorkDir
	if work == "" {
		wd, err := os.Getwd()
		if err != nil {
			return skill.Variables{}, fmt.Errorf("finding the current directory: %w", err)
		}
		work = wd
	}
	work, err := filepath.Abs(work)
	if err != nil {
		return skill.Variables{}, err
	}
	home := d.Home
	if home == "" {
		home = os.Getenv("HOME")
	}
	if home == "" {
		home = "/root"
		if os.Getuid() != 0 {
			home = "/nonexistent"
		}
	}
	data := d.DataDir
	if data == "" {
		if x := os.Getenv("XDG_DATA_HOME"); strings.HasPrefix(x, "/") {
			data = filepath.Join(x, "corral")
		} else {
			data = filepath.Join(home, ".local", "share", "corral")
		}
	}
	data, err = filepath.Abs(data)
	if err != nil {
		return skill.Variables{}, err
	}
	tmp := d.TmpDir
	if tmp == "" {
		tmp = os.Getenv("TMPDIR")
	}
	if !strings.HasPrefix(tmp, "/") {
		tmp = "/tmp"
	}
	return skill.Variables{WorkDir: filepath.Clean(work), DataDir: data, Home: filepath.Clean(home), TmpDir: filepath.Clean(tmp)}, nil
}

// Error is a run that ended before the command ran its course: Code is
// the exit status the corral command uses for it (125 corral failed, 126
// not permitted, 127 not found).
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Exit statuses of a run.
const (
	ExitTimeout    = 124 // the timeout ended the command
	ExitFailed     = 125 // corral failed: bad input, no sandbox
	ExitNotAllowed = 126 // the command is not permitted
	ExitNotFound   = 127 // the command was not found
	ExitOOM        = 137 // the memory cap ended the command
)

// ErrNotPermitted is wrapped by a run's error when a check refused the
// command before it started.
var ErrNotPermitted = errors.New("not permitted")

func failed(err error) error { return &Error{Code: ExitFailed, Err: err} }
