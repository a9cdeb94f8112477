package main

import (
	"errors"
	"flag"
	"strings"

	"corral.dev/corral"
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

// load reads the skills, merges their permissions and builds the engine.
func (f *skillFlags) load() (*corral.Skills, error) {
	return corral.LoadSkills(f.skills, corral.Dirs{WorkDir: f.workDir, DataDir: f.dataDir})
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
