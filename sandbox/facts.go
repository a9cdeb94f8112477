package sandbox

import "corral.dev/corral/sandbox/progindex"

// Facts are what Probe learned about the host: kernel features and the
// files the plan refers to. BuildPlan reads only Facts, never the host.
type Facts struct {
	// OS is "darwin" when the plan is for macOS's Seatbelt sandbox;
	// empty (Linux) otherwise.
	OS          string `json:"os,omitempty"`
	LandlockABI int    `json:"landlock_abi"`
	LandlockErr string `json:"landlock_error,omitempty"` // why Landlock is unavailable
	UserNSErr   string `json:"userns_error,omitempty"`   // why user namespaces are refused
	Seccomp     bool   `json:"seccomp"`
	Uid         int    `json:"uid"`

	Files    map[string]FileInfo `json:"files"`
	Programs map[string]Program  `json:"programs"`
	// Matches holds, for read globs a kernel rule cannot express, the
	// paths that match them now.
	Matches map[string][]string `json:"matches,omitempty"`
	// Submodules are the submodules' git folders (.git/modules/NAME, at
	// any depth) and Worktrees the linked worktrees' (.git/worktrees/X)
	// inside writable roots.
	Submodules []string `json:"submodules,omitempty"`
	Worktrees  []string `json:"worktrees,omitempty"`
	// HooksPaths are the folders core.hooksPath names in the git
	// folders' configs.
	HooksPaths []string `json:"hooks_paths,omitempty"`
	// Gits are the .git folders and files in writable roots, at their top
	// and nested (vendor/lib/.git); NestedCut the roots whose search
	// stopped at its budget.
	Gits      []string `json:"gits,omitempty"`
	NestedCut []string `json:"nested_cut,omitempty"`
	// ProgramIndex, with an exec allowlist, lists the folders the
	// sandbox could map code from that hold programs.
	ProgramIndex *progindex.Index `json:"program_index,omitempty"`
	// StateDirs hold what later runs trust: the program index and the
	// mount cache. No write grant may cover them or reach into them.
	StateDirs []string `json:"state_dirs,omitempty"`
	// Listings are the folders directly inside folders that a grant
	// covers together with a code root (a grant of /usr/**), with an
	// exec allowlist: all but the code roots' ancestors are bound noexec.
	Listings map[string][]string `json:"listings,omitempty"`
	// GitconfigSecret says why the host's /etc/gitconfig looks like it
	// holds a credential (an Authorization header, a URL with a password);
	// empty when it does not.
	GitconfigSecret string `json:"gitconfig_secret,omitempty"`
	// Home is the real path of Spec.Home ("" when it does not exist).
	Home string `json:"home,omitempty"`
	// SSHSecrets are the files in $HOME/.ssh (and its folders) that may
	// hold private keys, when a grant reaches them: the sandbox sees them
	// empty.
	SSHSecrets []string `json:"ssh_secrets,omitempty"`
	// Denied are the paths inside the granted trees that fs.deny globs
	// match at launch; DenyCut says where the walk for them stopped
	// short (the plan then refuses to run).
	Denied  []DeniedPath `json:"denied,omitempty"`
	DenyCut []string     `json:"deny_cut,omitempty"`

	// Path is the PATH the command gets (RunPATH), where its name is
	// looked up.
	Path []string `json:"path,omitempty"`
	// Toolchains are the folders of programs outside the system folders
	// that the sandbox reads and runs, with the trees they need
	// (toolchain.go).
	Toolchains []Toolchain `json:"toolchains,omitempty"`

	resolver *resolver           // Linux: cached symlink resolution while probing
	workDir  string              // where a relative command path starts from
	rpaths   map[string][]string // Linux: the RPATH/RUNPATH strings of the ELF files read
}

// FileInfo describes one path.
type FileInfo struct {
	Exists bool     `json:"exists"`
	Dir    bool     `json:"dir"`
	Size   int64    `json:"size,omitempty"`  // bytes (Linux)
	Real   string   `json:"real"`            // symlinks resolved
	Links  []string `json:"links,omitempty"` // the symlinks followed to get there
}

// Program is a program name or path resolved on the sandbox's PATH.
type Program struct {
	Path string `json:"path"` // where PATH found it
	Real string `json:"real"` // symlinks resolved
	// Interpreters are the real paths of the ELF interpreter (ld.so) and,
	// for scripts, the #! interpreter and its ELF interpreter.
	Interpreters []string `json:"interpreters,omitempty"`
	// Links are the symlinks from Path to Real, so the sandbox can
	// recreate them.
	Links map[string]string `json:"links,omitempty"`
	// LibraryDirs are the real folders the program and its interpreters
	// name in their RPATH or RUNPATH.
	LibraryDirs []string `json:"library_dirs,omitempty"`
	Err         string   `json:"error,omitempty"`
}

// file returns the facts for p (the zero FileInfo when unknown).
func (f *Facts) file(p string) FileInfo {
	return f.Files[p]
}
