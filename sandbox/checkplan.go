package sandbox

import (
	"path"
	"slices"

	"corral.dev/corral/policyengine"
)

// MissingHooks are the hooks folders exec creates before it builds the
// plan (CreateHooksFolders): one for every git folder found in a writable
// root, and the folders core.hooksPath names, where they are missing and
// their parent is a real folder (never through a planted link).
func (f *Facts) MissingHooks() []string {
	var folders, missing []string
	for _, git := range append(slices.Clone(f.Gits), f.Submodules...) {
		if info := f.Files[git]; info.Dir && info.Real == git {
			folders = append(folders, git+"/hooks")
		}
	}
	for _, hooks := range append(folders, f.HooksPaths...) {
		if parent := f.Files[path.Dir(hooks)]; !parent.Dir || parent.Real != path.Dir(hooks) {
			continue
		}
		if !f.Files[hooks].Exists {
			missing = append(missing, hooks)
		}
	}
	return missing
}

// assumeDir records dir as an existing folder, as it will be once exec
// has made it.
func (f *Facts) assumeDir(dir string) {
	h := ResolveHost(dir, "/")
	f.Files[dir] = FileInfo{Exists: true, Dir: true, Real: h.Real, Links: h.Links}
}

// CheckPlan builds the plan exec would build for p and spec without
// running or creating anything: made are the folders exec would create
// first (the write grants' missing roots), and the hooks
// folders it would create are taken as made too. `corral check` answers
// file questions from it, so it answers what the kernel will enforce.
func CheckPlan(p policyengine.Permissions, spec Spec, made []string) (*Plan, error) {
	spec.Argv = nil
	spec.BestEffort = true
	f := Probe(p, spec)
	// Nothing below a folder that is still to be made can exist, so
	// what Probe learned without it stands.
	for _, d := range made {
		f.assumeDir(d)
	}
	for _, h := range f.MissingHooks() {
		f.assumeDir(h)
	}
	return BuildPlan(p, spec, f)
}
