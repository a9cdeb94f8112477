package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"corral/policyengine"
	"corral/skill"
)

// skillFlags are the flags every command that reads skills shares.
type skillFlags struct {
	skills  stringList
	workDir string
	dataDir string
}

func (f *skillFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.skills, "skill", "a skill folder or SKILL.md `path` (repeatable)")
	fs.StringVar(&f.workDir, "work-dir", "", "the workspace `dir`, $WORK_DIR (default: the current directory)")
	fs.StringVar(&f.dataDir, "data-dir", "", "the `dir` holding each skill's persistent $DATA_DIR (default: $XDG_DATA_HOME/corral or ~/.local/share/corral)")
}

// loaded is the result of reading and merging the skills.
type loaded struct {
	skills []*skill.Skill
	perms  policyengine.Permissions
	vars   skill.Variables
	engine *policyengine.Engine
}

// load reads the skills, merges their permissions and builds the engine.
func (f *skillFlags) load() (*loaded, error) {
	vars, err := f.variables()
	if err != nil {
		return nil, err
	}
	skills, err := skill.LoadAll(f.skills)
	if err != nil {
		return nil, err
	}
	perms, err := skill.Merge(skills, vars)
	if err != nil {
		return nil, err
	}
	if perms.IsDefault() {
		perms = perms.Merge(skill.DefaultPermissions(vars.WorkDir))
	}
	engine, err := policyengine.New(perms, policyengine.Options{WorkDir: vars.WorkDir})
	if err != nil {
		return nil, err
	}
	return &loaded{skills: skills, perms: perms, vars: vars, engine: engine}, nil
}

func (f *skillFlags) variables() (skill.Variables, error) {
	work := f.workDir
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
	home := os.Getenv("HOME")
	if home == "" {
		home = "/root"
		if os.Getuid() != 0 {
			home = "/nonexistent"
		}
	}
	data := f.dataDir
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
	tmp := os.Getenv("TMPDIR")
	if !strings.HasPrefix(tmp, "/") {
		tmp = "/tmp"
	}
	return skill.Variables{WorkDir: filepath.Clean(work), DataDir: data, Home: filepath.Clean(home), TmpDir: filepath.Clean(tmp)}, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	*l = append(*l, v)
	return nil
}
