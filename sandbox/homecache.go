package sandbox

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// HomeCache is a folder of the private HOME kept between runs: Rel below
// HOME, Name its folder in the home store (Spec.HomeStore).
type HomeCache struct{ Rel, Name string }

// HomeCaches are the folders of a private HOME that persist between runs
// with the same work dir and skills: where the usual toolchains keep
// their download and build caches (Go's build cache and pip's in
// ~/.cache, Go's modules, npm's, cargo's, Maven's and Gradle's). Nothing
// else of the private HOME persists: shell start-up files and tool
// configs (~/.bashrc, ~/.profile, ~/.config, ~/.npmrc, ~/.cargo/config)
// start empty on every run, so no run can plant what a later run's shell
// or tool reads and runs before the command the policy checked. The host
// never uses these folders: they are not its caches.
var HomeCaches = []HomeCache{
	{".cache", "cache"},
	{".npm", "npm"},
	{"go/pkg/mod", "go-mod"},
	{".cargo/registry", "cargo-registry"},
	{".cargo/git", "cargo-git"},
	{".m2/repository", "m2"},
	{".gradle/caches", "gradle"},
}

// HomeGitConfig is the file of the home store that holds the host's git
// identity (user.name, user.email, init.defaultBranch), given to the
// private HOME as ~/.gitconfig, read-only.
const HomeGitConfig = "gitconfig"

// homeCacheWhy is the Why of the home caches' mounts and rules.
const homeCacheWhy = "private HOME's caches (kept between runs with this work dir, these skills and these permissions)"

// homeCaches binds the home store's caches (and the git identity) into
// the private HOME at home. A cache a grant reaches (a grant of
// ~/.cache/**, or of ~/.cache/pip/** inside it) is left to the grant:
// the skill asked for the host's own folder.
func (b *builder) homeCaches(home string) {
	store := b.spec.HomeStore
	if store == "" {
		return
	}
	b.plan.HomeStore = store
	reached := func(target string) bool {
		for _, list := range [][]policyengine.Entry{b.perms.Read, b.perms.Write} {
			for _, e := range list {
				if g, err := policyengine.CompileGlob(e.Value); err == nil && (isUnder(target, g.Base()) || isUnder(g.Base(), target)) {
					return true
				}
			}
		}
		return false
	}
	for _, c := range HomeCaches {
		target := path.Join(home, c.Rel)
		if reached(target) {
			continue
		}
		src := filepath.Join(store, c.Name)
		b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountBind, Source: src, Target: target, Dir: true, NoExec: b.plan.Exec.Restricted, Why: homeCacheWhy})
		b.plan.HomeCaches = append(b.plan.HomeCaches, HomeLink{Link: c.Rel, Target: src})
	}
	// A toolchain the go command switches to (GOTOOLCHAIN=auto) runs from
	// the module cache unchecked once it is there: one a run planted in
	// the kept cache would run in place of go itself on later runs. The
	// sandbox's go stays the host's (local), unless the caller's env
	// rules pass GOTOOLCHAIN.
	if !envHas(b.plan.Env, "GOTOOLCHAIN") {
		b.plan.Env = append(b.plan.Env, "GOTOOLCHAIN=local")
		slices.Sort(b.plan.Env)
	}
	if b.spec.HomeGit && !reached(path.Join(home, ".gitconfig")) {
		src := filepath.Join(store, HomeGitConfig)
		b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountBind, Source: src, Target: path.Join(home, ".gitconfig"), ReadOnly: true, NoExec: true, Why: "the host's git identity (user.name, user.email)"})
		b.plan.HomeCaches = append(b.plan.HomeCaches, HomeLink{Link: ".gitconfig", Target: src, ReadOnly: true})
	}
}

// HomeLink is a folder (or file) of the home store the private HOME holds
// at Link (relative to HOME): a bind in the namespaces tier, a variable
// that names it in the landlock tier (homeCacheVars).
type HomeLink struct {
	Link     string `json:"link"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// homeCacheVars name the home store's folders in the landlock tier, whose
// HOME (the run's TMPDIR) holds no link to them.
var homeCacheVars = map[string]string{
	".cache": "XDG_CACHE_HOME", ".npm": "npm_config_cache", "go/pkg/mod": "GOMODCACHE", ".gitconfig": "GIT_CONFIG_GLOBAL",
}

// landlockHomeCaches turns the home store's binds into the landlock
// tier's: variables that name the store's folders, rules on them, and
// the supervisor's writable roots.
func (b *builder) landlockHomeCaches() {
	p := b.plan
	if len(p.HomeCaches) == 0 {
		return
	}
	if !slices.Contains(p.Env, "HOME="+p.RunTmp) || p.RunTmp == "" {
		// The HOME is the host's (a grant covers it): nothing to link.
		p.HomeCaches, p.HomeStore = nil, ""
		return
	}
	exec := uint64(fsExecute)
	if p.Exec.Restricted {
		exec = 0
	}
	// A link in the run's TMPDIR would be a file-system operation on
	// every call, and another to remove it (about 400 µs for each on the
	// disk-backed /tmp measured here): the caches are named by the
	// variables their tools read instead, and those of cargo, Maven and
	// Gradle, which have none of their own, are not kept in this tier.
	p.HomeCaches = slices.DeleteFunc(p.HomeCaches, func(l HomeLink) bool {
		v := homeCacheVars[l.Link]
		if v == "" || envHas(p.Env, v) {
			return true
		}
		p.Env = append(p.Env, v+"="+l.Target)
		return false
	})
	slices.Sort(p.Env)
	for _, l := range p.HomeCaches {
		access := (writeRights | exec) & p.Landlock.HandledFS
		if l.ReadOnly {
			access = readRights & fileRights & p.Landlock.HandledFS
		} else {
			p.CacheRoots = append(p.CacheRoots, l.Target)
		}
		p.Landlock.Rules = append(p.Landlock.Rules, PathRule{Path: l.Target, Access: access, Rights: rightsString(access), From: homeCacheWhy})
	}
}

// envHas reports whether env sets the variable k.
func envHas(env []string, k string) bool {
	return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
}
