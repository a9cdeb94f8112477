package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// RunPATH is the PATH a run's command gets: the sandbox's own folders
// (policyengine.SandboxPATH), and, where no skill declares an exec list,
// after them the folders of the caller's PATH (env's) that the system
// baseline already lets every command read: a Go under /usr/local/go/bin,
// a JDK under /usr/lib/jvm/*/bin. Nothing is granted for them; a folder
// outside the baseline (~/.cargo/bin, /opt/...) stays out until a skill
// grants it. With an exec list the PATH is the sandbox's own, as the exec
// list is resolved on it.
func RunPATH(execRestricted bool, env []string) []string {
	dirs := strings.Split(policyengine.SandboxPATH, ":")
	if execRestricted {
		return dirs
	}
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, d := range strings.Split(v, ":") {
			if baselineToolDir(d) && !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// baselineToolDir reports whether d is a folder inside the system
// baseline's reads (/usr but its configuration folders, /bin, /sbin,
// /lib*), as written and with its symlinks resolved.
func baselineToolDir(d string) bool {
	if !filepath.IsAbs(d) || filepath.Clean(d) != d || !inBaselineTree(d) {
		return false
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil || !inBaselineTree(real) {
		return false
	}
	st, err := os.Stat(real)
	return err == nil && st.IsDir()
}

func inBaselineTree(p string) bool {
	for _, h := range policyengine.SystemHidden {
		if p == h || strings.HasPrefix(p, h+"/") {
			return false
		}
	}
	for _, root := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64"} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}
