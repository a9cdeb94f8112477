package corral

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"corral/policy"
	"corral/printable"
	"corral/sandbox"
)

// Quarantined is a protected path the command created, or sent elsewhere
// through a symlink it replaced, and the name corral moved it to.
type Quarantined struct {
	Path string `json:"path"`
	To   string `json:"to"`
	Why  string `json:"why"`
}

// KeptPaths are the files and folders a run must not change: the active
// skills' folders (and skill files named directly), the policy files ev
// was read from and more (a global policy file that does not exist yet),
// absolute and clean. explain shows what exec keeps.
func KeptPaths(sk *Skills, ev *policy.Evaluator, more ...string) []string {
	var out []string
	for _, s := range sk.List {
		out = append(out, s.Dir)
		if filepath.Base(s.File) != "SKILL.md" {
			out = append(out, s.File)
		}
	}
	if ev != nil {
		out = append(out, ev.Files()...)
	}
	for _, k := range more {
		if k == "" {
			continue
		}
		if abs, err := filepath.Abs(k); err == nil {
			out = append(out, abs)
		}
	}
	for i, p := range out {
		out[i] = filepath.Clean(p)
	}
	return out
}

// quarantine renames, after the run, what the command left at the
// protected paths that did not exist at launch (or whose symlinks it
// replaced), so no host tool reads it; nothing is deleted. Nothing of the
// sandbox runs any more, so the paths cannot change under it. About 1 µs
// a path.
func quarantine(list []sandbox.Quarantine, warn func(string)) []Quarantined {
	var out []Quarantined
	move := func(p, why string) {
		to, err := moveAside(p)
		if err != nil {
			warn(fmt.Sprintf("the command created %s (%s); moving it aside failed: %v: remove it before a host tool reads it", printable.String(p), why, err))
			return
		}
		out = append(out, Quarantined{Path: p, To: to, Why: why})
		warn(fmt.Sprintf("the command created %s (%s): moved to %s, where no tool reads it", printable.String(p), why, printable.String(to)))
	}
	for _, q := range list {
		if q.Real != "" {
			if real, err := filepath.EvalSymlinks(q.Path); err == nil && real != q.Real {
				move(q.Path, q.Why+"; it led to "+q.Real+" at launch")
			}
			continue
		}
		// Below From everything was made by the run: the first symlink
		// on the way (which could lead anywhere) or the path itself.
		cur := q.From
		parts := strings.Split(strings.TrimPrefix(q.Path, q.From+"/"), "/")
		for i, part := range parts {
			cur = filepath.Join(cur, part)
			st, err := os.Lstat(cur)
			if err != nil {
				break
			}
			if st.Mode()&os.ModeSymlink != 0 || i == len(parts)-1 {
				move(cur, q.Why)
				break
			}
			if !st.IsDir() {
				break
			}
		}
	}
	return out
}

// moveAside renames p to p.corral-quarantined (or .2, .3... after it),
// never over an existing file.
func moveAside(p string) (string, error) {
	for i := 1; i <= 100; i++ {
		to := p + sandbox.QuarantineSuffix
		if i > 1 {
			to += "." + strconv.Itoa(i)
		}
		err := renameNoReplace(p, to)
		if err == nil {
			return to, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", &os.LinkError{Op: "rename", Old: p, New: to, Err: err}
		}
	}
	return "", fmt.Errorf("renaming %s: 100 quarantined copies are there already", p)
}
