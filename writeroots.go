package corral

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"corral.dev/corral/internal/nofollow"
	"corral.dev/corral/policyengine"
)

// writeRoot is a folder an fs.write glob grants whole, inside root (the
// work dir or the data dir), which exec creates when it is missing.
type writeRoot struct{ glob, root, dir string }

// createWriteRoots creates missing folders that fs.write grants as a whole
// (such as $WORK_DIR/out/**) inside the work dir, a $DATA_DIR or $HOME, so the
// kernel has something to attach the grant to. (Missing hooks folders in
// writable repositories are sandbox.CreateHooksFolders's.)
func createWriteRoots(s *Skills) ([]string, error) {
	var created []string
	for _, r := range s.writeRoots() {
		made, err := mkdirNoFollow(r.root, r.dir)
		created = append(created, made...)
		if err != nil {
			err = fmt.Errorf("creating %s for %s: %w", r.dir, r.glob, err)
			if r.root == s.Vars.DataDir {
				err = fmt.Errorf("%w; skills' $DATA_DIR folders live in %s, which this user cannot make or write%s: pass --data-dir DIR (or set XDG_DATA_HOME) with a folder this user can write", err, r.root, dataDirOrigin())
			}
			return created, err
		}
	}
	return created, nil
}

// dataDirOrigin says why the default data dir is where it is, when the
// environment explains it.
func dataDirOrigin() string {
	switch {
	case strings.HasPrefix(os.Getenv("XDG_DATA_HOME"), "/"):
		return " ($XDG_DATA_HOME/corral)"
	case os.Getenv("HOME") == "":
		return " (HOME is unset, so the default $HOME/.local/share/corral fell back to a home that does not exist)"
	}
	return ""
}

func (s *Skills) writeRoots() []writeRoot {
	var out []writeRoot
	for _, e := range s.Perms.Write {
		g, err := policyengine.CompileGlob(e.Value)
		if err != nil || !g.Subtree() {
			continue
		}
		dir := g.Base()
		// The home folder too: with no grant covering it whole, the
		// sandbox's HOME is a private tmpfs, where a write meant for a
		// granted folder that is missing would land and be lost.
		for _, root := range []string{s.Vars.WorkDir, s.Vars.DataDir, s.Vars.Home} {
			if root != "" && root != "/" && within(dir, root) {
				out = append(out, writeRoot{e.Value, root, dir})
				break
			}
		}
	}
	return out
}

// mkdirNoFollow creates dir and its missing parents below root without
// following symlinks (nofollow.MkdirBelow): a link planted by an earlier
// or concurrent sandboxed run must not send corral's own mkdir outside
// the work dir.
func mkdirNoFollow(root, dir string) ([]string, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return nil, err
	}
	return nofollow.MkdirBelow(root, rel)
}

func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
