package sandbox

import (
	"errors"
	"strings"
	"testing"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox/progindex"
)

// fakeFacts is a host with Landlock ABI 7 where every path in dirs is a
// folder and every path in files a file; programs live in /usr/bin.
func fakeFacts(dirs, files []string, programs ...string) *Facts {
	f := &Facts{LandlockABI: 7, Seccomp: true, Files: map[string]FileInfo{}, Programs: map[string]Program{}}
	for _, d := range append(dirs, "/usr", "/usr/lib", "/usr/share", "/etc/ssl", "/etc/ssl/certs", "/usr/lib64") {
		f.Files[d] = FileInfo{Exists: true, Dir: true, Real: d}
	}
	for _, p := range files {
		f.Files[p] = FileInfo{Exists: true, Real: p}
	}
	f.Files["/bin"] = FileInfo{Exists: true, Dir: true, Real: "/usr/bin"}
	for _, p := range programs {
		real := "/usr/bin/" + p
		f.Programs[p] = Program{Path: real, Real: real, Interpreters: []string{"/usr/lib/ld.so"}}
		f.Files[real] = FileInfo{Exists: true, Real: real}
	}
	f.Files["/usr/lib/ld.so"] = FileInfo{Exists: true, Real: "/usr/lib/ld.so"}
	return f
}

func entries(v ...string) []policyengine.Entry { return policyengine.NewEntries("t", v) }

func findRule(p *Plan, path string) (PathRule, bool) {
	for _, r := range p.Landlock.Rules {
		if r.Path == path {
			return r, true
		}
	}
	return PathRule{}, false
}

func findMount(p *Plan, kind MountKind, target string) (Mount, bool) {
	for _, m := range p.Mounts {
		if m.Kind == kind && m.Target == target {
			return m, true
		}
	}
	return Mount{}, false
}

func TestPlanExecAllowlist(t *testing.T) {
	perms := policyengine.Permissions{
		Read: entries("/ws/data/**"), Write: entries("/ws/out/**"),
		Exec: entries("sh", "cat"), Declared: []string{"t"}, ExecDeclared: []string{"t"},
	}
	facts := fakeFacts([]string{"/ws", "/ws/data", "/ws/out"}, nil, "sh", "cat", "true")
	plan, err := BuildPlan(perms, Spec{Argv: []string{"sh", "-c", "x"}, WorkDir: "/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/usr/bin/sh", "/usr/bin/cat", "/usr/lib/ld.so"} {
		r, ok := findRule(plan, p)
		if !ok || r.Access&fsExecute == 0 {
			t.Errorf("%s: not executable: %+v", p, r)
		}
	}
	if r, ok := findRule(plan, "/usr/bin/true"); ok {
		t.Errorf("true is not allowed but has a rule: %+v", r)
	}
	for _, r := range plan.Landlock.Rules {
		if r.Access&fsExecute != 0 && !strings.HasPrefix(r.Path, "/usr/bin/") && r.Path != "/usr/lib/ld.so" {
			t.Errorf("%s is executable (%s)", r.Path, r.From)
		}
	}
	// /usr is one read-only bind; Landlock alone decides what in it can be
	// read: the library folders, and the allowed programs (above).
	if m, ok := findMount(plan, MountBind, "/usr"); !ok || !m.ReadOnly {
		t.Errorf("/usr: want one read-only bind, got %+v", m)
	}
	for _, r := range plan.Landlock.Rules {
		if r.Path == "/usr" || r.Path == "/usr/bin" {
			t.Errorf("%s is readable as a whole with an exec allowlist: %+v", r.Path, r)
		}
	}
	for _, dir := range []string{"/ws/data", "/ws/out"} {
		if m, ok := findMount(plan, MountBind, dir); !ok || !m.NoExec {
			t.Errorf("%s: want a noexec bind, got %+v", dir, m)
		}
	}
	if m, _ := findMount(plan, MountTmpfs, "/tmp"); !m.NoExec {
		t.Error("/tmp is executable with an exec allowlist")
	}
	memfd := false
	for _, r := range plan.Seccomp {
		memfd = memfd || r.Syscall == "memfd_create" && r.Arg == nil
	}
	if !memfd {
		t.Error("memfd_create is not refused with an exec allowlist")
	}
}

func TestPlanDefaultSandboxExecutesAnything(t *testing.T) {
	perms := policyengine.Permissions{Write: entries("/ws/**")}
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws"}, fakeFacts([]string{"/ws"}, nil, "true"))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := findMount(plan, MountBind, "/ws"); !ok || m.NoExec || m.ReadOnly {
		t.Errorf("/ws: %+v", m)
	}
	if r, _ := findRule(plan, "/usr"); r.Access&fsExecute == 0 {
		t.Errorf("/usr not executable in the default sandbox: %+v", r)
	}
}

// TestPlanUsrConfigFolders: the default sandbox's /usr rule goes to each
// folder in /usr and /usr/local but their etc.
func TestPlanUsrConfigFolders(t *testing.T) {
	dirs := []string{"/ws", "/usr/bin", "/usr/etc", "/usr/local", "/usr/local/etc", "/usr/local/go", "/usr/local/bin"}
	f := fakeFacts(dirs, nil, "true")
	// Symlinks get no rule of their own: one to a hidden folder, one above.
	f.Files["/usr/local/conf"] = FileInfo{Exists: true, Dir: true, Real: "/usr/local/etc"}
	f.Files["/usr/up"] = FileInfo{Exists: true, Dir: true, Real: "/"}
	f.Listings = map[string][]string{"/usr": {"bin", "etc", "lib", "local", "up"}, "/usr/local": {"bin", "conf", "etc", "go"}}
	plan, err := BuildPlan(policyengine.Permissions{}, Spec{Argv: []string{"true"}, WorkDir: "/ws"}, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/usr/bin", "/usr/lib", "/usr/local/bin", "/usr/local/go"} {
		if r, ok := findRule(plan, p); !ok || r.Access&fsExecute == 0 || r.Access&fsReadFile == 0 {
			t.Errorf("%s: %+v, want read and execute", p, r)
		}
	}
	for _, p := range []string{"/usr/etc", "/usr/local/etc", "/usr/local", "/"} {
		if r, ok := findRule(plan, p); ok {
			t.Errorf("%s has a rule: %+v", p, r)
		}
	}
	if r, ok := findRule(plan, "/usr"); ok {
		t.Errorf("/usr: %+v, want no rule (listing it would list /usr/local/etc)", r)
	}

	// /usr/local as a link (to /opt/local): its folders still get rules,
	// its etc still none.
	f = fakeFacts([]string{"/ws", "/usr/bin", "/opt/local/bin", "/opt/local/etc"}, nil, "true")
	f.Files["/usr/local"] = FileInfo{Exists: true, Dir: true, Real: "/opt/local"}
	f.Files["/usr/local/bin"] = FileInfo{Exists: true, Dir: true, Real: "/opt/local/bin"}
	f.Files["/usr/local/etc"] = FileInfo{Exists: true, Dir: true, Real: "/opt/local/etc"}
	f.Listings = map[string][]string{"/usr": {"bin", "local"}, "/usr/local": {"bin", "etc"}}
	if plan, err = BuildPlan(policyengine.Permissions{}, Spec{Argv: []string{"true"}, WorkDir: "/ws"}, f); err != nil {
		t.Fatal(err)
	}
	if _, ok := findRule(plan, "/opt/local/bin"); !ok {
		t.Error("a linked /usr/local's bin got no rule")
	}
	if r, ok := findRule(plan, "/opt/local/etc"); ok {
		t.Errorf("a linked /usr/local's etc: %+v", r)
	}
}

func TestPlanProtectedPaths(t *testing.T) {
	perms := policyengine.Permissions{Write: entries("/ws/**"), Declared: []string{"t"}}
	facts := fakeFacts([]string{"/ws", "/ws/.git/hooks"}, []string{"/ws/.git/config", "/ws/.bashrc"}, "true")
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for i, m := range plan.Mounts {
		if m.Target == "/ws" && m.Kind == MountBind {
			last = i
		}
	}
	for _, p := range []string{"/ws/.git/hooks", "/ws/.git/config", "/ws/.bashrc"} {
		found := false
		for i, m := range plan.Mounts {
			if m.Target == p && m.Kind == MountBind {
				found = true
				if !m.ReadOnly || i < last {
					t.Errorf("%s: read-only %v, mounted at %d before /ws at %d", p, m.ReadOnly, i, last)
				}
			}
		}
		if !found {
			t.Errorf("%s is not protected", p)
		}
	}
}

func TestPlanHidesHostTemp(t *testing.T) {
	perms := policyengine.Permissions{Read: entries("/tmp/**", "/run/**"), Write: entries("/tmp/ws/**"), Declared: []string{"t"}}
	facts := fakeFacts([]string{"/tmp", "/run", "/tmp/ws"}, nil, "true")
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/tmp/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range plan.Mounts {
		if m.Kind == MountBind && (m.Target == "/tmp" || m.Target == "/run") {
			t.Errorf("host %s is bound into the sandbox", m.Target)
		}
	}
	if _, ok := findMount(plan, MountBind, "/tmp/ws"); !ok {
		t.Error("a work dir inside /tmp is not bound")
	}
	tmp := -1
	for i, m := range plan.Mounts {
		if m.Kind == MountTmpfs && m.Target == "/tmp" {
			tmp = i
		}
		if m.Target == "/tmp/ws" && i < tmp {
			t.Error("the work dir is bound before the private /tmp that would hide it")
		}
	}
	if len(plan.Warnings) == 0 {
		t.Error("no warning that /tmp and /run are private")
	}
}

func TestPlanFailsClosed(t *testing.T) {
	perms := policyengine.Permissions{Write: entries("/ws/**")}
	facts := fakeFacts([]string{"/ws"}, nil, "true")
	facts.LandlockABI, facts.LandlockErr = 0, "no Landlock"
	_, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws"}, facts)
	if !errors.Is(err, ErrProtection) || !strings.Contains(err.Error(), "no Landlock") {
		t.Fatalf("err = %v, want ErrProtection naming Landlock", err)
	}
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws", BestEffort: true}, facts)
	if err != nil {
		t.Fatal(err)
	}
	dropped := false
	for _, p := range plan.Protections {
		if p.Name == "landlock-fs" && !p.Enforced {
			dropped = true
		}
	}
	if !dropped {
		t.Error("best effort does not name the dropped protection")
	}
	facts = fakeFacts([]string{"/ws"}, nil, "true")
	facts.UserNSErr = "AppArmor restricts unprivileged user namespaces"
	facts.LandlockABI = 6
	// Refused user namespaces: the landlock tier, saying why.
	plan, err = BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws"}, facts)
	if err != nil || plan.Tier.Name != TierLandlock || plan.Protections[0].Name != "tier" || !strings.Contains(plan.Protections[0].Detail, "AppArmor") {
		t.Errorf("err = %v, plan %+v: want the landlock tier with the AppArmor reason", err, plan)
	}
	// Asked for the namespaces tier, the refusal names AppArmor.
	if _, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws", Tier: TierNamespaces}, facts); err == nil || !strings.Contains(err.Error(), "AppArmor") {
		t.Errorf("err = %v, want the AppArmor reason", err)
	}
}

func TestPlanNotFound(t *testing.T) {
	_, err := BuildPlan(policyengine.Permissions{}, Spec{Argv: []string{"nosuch"}, WorkDir: "/ws"}, fakeFacts(nil, nil))
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want NotFoundError", err)
	}
}

func TestPlanEnv(t *testing.T) {
	perms := policyengine.Permissions{Env: entries("KEEP"), Declared: []string{"t"}}
	env := []string{"KEEP=1", "SECRET_TOKEN=x", "AWS_SECRET_ACCESS_KEY=y", "PATH=/evil", "LC_ALL=C", "HOME=/home/u"}
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws", Env: env}, fakeFacts([]string{"/ws"}, nil, "true"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(plan.Env, " ")
	for _, want := range []string{"KEEP=1", "LC_ALL=C", "PATH=" + policyengine.SandboxPATH, "TMPDIR=/tmp", "HOME=/home/u"} {
		if !strings.Contains(got, want) {
			t.Errorf("env lacks %s: %s", want, got)
		}
	}
	for _, bad := range []string{"SECRET", "AWS", "/evil"} {
		if strings.Contains(got, bad) {
			t.Errorf("env leaks %s: %s", bad, got)
		}
	}
}

func TestPlanIsPure(t *testing.T) {
	perms := policyengine.Permissions{Read: entries("/ws/a/**", "/ws/b/**"), Write: entries("/ws/out/**"), Exec: entries("sh"), Declared: []string{"t"}, ExecDeclared: []string{"t"}}
	facts := fakeFacts([]string{"/ws", "/ws/a", "/ws/b", "/ws/out"}, nil, "sh")
	a, _ := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts)
	b, _ := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts)
	if len(a.Mounts) != len(b.Mounts) || len(a.Landlock.Rules) != len(b.Landlock.Rules) {
		t.Fatal("two builds from the same inputs differ")
	}
	for i := range a.Mounts {
		if a.Mounts[i] != b.Mounts[i] {
			t.Errorf("mount %d differs: %+v vs %+v", i, a.Mounts[i], b.Mounts[i])
		}
	}
}

func TestPlanRefusesPlantedSymlinks(t *testing.T) {
	perms := policyengine.Permissions{Write: entries("/ws/out/**"), Read: entries("/ws/in/**"), Declared: []string{"t"}}
	facts := fakeFacts([]string{"/ws", "/etc"}, nil, "true")
	facts.Files["/ws/out"] = FileInfo{Exists: true, Dir: true, Real: "/etc", Links: []string{"/ws/out"}}
	facts.Files["/ws/in"] = FileInfo{Exists: true, Dir: true, Real: "/run", Links: []string{"/ws/in"}}
	_, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws"}, facts)
	if !errors.Is(err, ErrUnsafeGrant) || !strings.Contains(err.Error(), "/ws/out") || !strings.Contains(err.Error(), "/ws/in") {
		t.Fatalf("err = %v, want ErrUnsafeGrant naming both links", err)
	}
	// A symlink above the work dir (/home -> /data/home) is fine.
	facts = fakeFacts([]string{"/home/u/ws"}, nil, "true")
	facts.Files["/home/u/ws/out"] = FileInfo{Exists: true, Dir: true, Real: "/data/home/u/ws/out", Links: []string{"/home"}}
	perms = policyengine.Permissions{Write: entries("/home/u/ws/out/**"), Declared: []string{"t"}}
	if _, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/home/u/ws"}, facts); err != nil {
		t.Errorf("symlink above the work dir refused: %v", err)
	}
}

func TestPlanPinsGitDir(t *testing.T) {
	perms := policyengine.Permissions{Write: entries("/ws/**"), Declared: []string{"t"}}
	facts := fakeFacts([]string{"/ws", "/ws/.git", "/ws/.git/hooks"}, []string{"/ws/.git/config"}, "true")
	plan, err := BuildPlan(perms, Spec{Argv: []string{"true"}, WorkDir: "/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	git, hooks := -1, -1
	for i, m := range plan.Mounts {
		switch m.Target {
		case "/ws/.git":
			git = i
			if m.ReadOnly {
				t.Error(".git itself is read-only: git could not commit")
			}
		case "/ws/.git/hooks":
			hooks = i
		}
	}
	if git < 0 || hooks < git {
		t.Errorf(".git pinned at %d, hooks at %d", git, hooks)
	}
}

// TestPlanProgramFolders: with an exec allowlist every folder the program
// index lists is bound noexec (after /usr, so the bind lands on top), an
// allowed program inside one is bound again on its own, a folder an
// allowed program loads libraries from stays mappable, and the data roots
// and /etc's folders are noexec.
func TestPlanProgramFolders(t *testing.T) {
	perms := policyengine.Permissions{
		Write: entries("/ws/**"), Exec: entries("sh", "java"), Declared: []string{"t"}, ExecDeclared: []string{"t"},
	}
	facts := fakeFacts([]string{"/ws"}, nil, "sh")
	java := "/usr/lib/jvm/17/bin/java"
	facts.Programs["java"] = Program{Path: "/usr/bin/java", Real: java, Interpreters: []string{"/usr/lib/ld.so"},
		Links: map[string]string{"/usr/bin/java": java}, LibraryDirs: []string{"/usr/lib/jvm/17/lib"}}
	facts.Files[java] = FileInfo{Exists: true, Real: java}
	facts.ProgramIndex = &progindex.Index{Source: "test", Folders: []string{
		"/usr/lib/git-core", "/usr/lib/jvm/17/bin", "/usr/lib/jvm/17/lib", "/usr/lib/systemd", "/usr/lib/systemd/generators",
		"/usr/lib/xorg", "/usr/lib/xorg/modules/bin", "/usr/lib/app",
	}, Libraries: []string{"/usr/lib/xorg/modules"}}
	// An allowed program in a folder of programs, whose RPATH names a
	// folder below it.
	app := "/usr/lib/app/apptool"
	facts.Programs["apptool"] = Program{Path: app, Real: app, Interpreters: []string{"/usr/lib/ld.so"}, LibraryDirs: []string{"/usr/lib/app/lib"}}
	facts.Files[app] = FileInfo{Exists: true, Real: app}
	perms.Exec = entries("sh", "java", "apptool")
	plan, err := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	index := func(target string, noexec bool) int {
		for i, m := range plan.Mounts {
			if m.Kind == MountBind && m.Target == target && m.NoExec == noexec {
				return i
			}
		}
		return -1
	}
	usr := index("/usr", false)
	if usr < 0 {
		t.Fatalf("no /usr bind: %+v", plan.Mounts)
	}
	for _, f := range []string{"/usr/lib/git-core", "/usr/lib/jvm/17/bin", "/usr/lib/systemd", "/usr/share"} {
		if i := index(f, true); i < usr {
			t.Errorf("%s: want a noexec bind after /usr (at %d), got %d", f, usr, i)
		}
	}
	if index("/etc/ssl/certs", true) < 0 {
		t.Error("/etc/ssl/certs is not bound noexec")
	}
	if index("/etc/ssl", true) >= 0 || index("/etc/ssl", false) >= 0 {
		t.Error("/etc/ssl is bound whole: /etc/ssl/private holds TLS private keys")
	}
	if i := index("/usr/lib/systemd/generators", true); i >= 0 {
		t.Error("a folder inside a noexec folder got its own bind")
	}
	if i := index("/usr/lib/jvm/17/lib", true); i >= 0 {
		t.Error("the folder java loads its libraries from is noexec")
	}
	if i, bin := index(java, false), index("/usr/lib/jvm/17/bin", true); i < bin {
		t.Errorf("the allowed %s is not bound again after its noexec folder (%d, %d)", java, i, bin)
	}
	// Below a noexec folder: plugins and an RPATH folder mappable again,
	// and a folder of programs below those noexec again.
	for _, c := range []struct {
		inner, outer         string
		innerExec, outerExec bool
	}{
		{"/usr/lib/xorg/modules", "/usr/lib/xorg", true, false},
		{"/usr/lib/xorg/modules/bin", "/usr/lib/xorg/modules", false, true},
		{"/usr/lib/app/lib", "/usr/lib/app", true, false},
		{app, "/usr/lib/app", true, false},
	} {
		if o, i := index(c.outer, !c.outerExec), index(c.inner, !c.innerExec); o < 0 || i < o {
			t.Errorf("%s (exec %v) is not bound on top of %s (exec %v): %d, %d", c.inner, c.innerExec, c.outer, c.outerExec, i, o)
		}
	}
	warned := false
	for _, w := range plan.Warnings {
		warned = warned || strings.Contains(w, "/usr/lib/jvm/17/lib (for java)")
	}
	if !warned {
		t.Errorf("no warning names the folder left mappable for java: %q", plan.Warnings)
	}

	// Without an exec allowlist nothing of this applies.
	perms.Exec, perms.ExecDeclared = nil, nil
	plan, err = BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range plan.Mounts {
		if m.NoExec && m.Kind == MountBind {
			t.Errorf("default sandbox: %s is noexec", m.Target)
		}
	}
}

// TestPlanGrantAboveCodeRoot: with an exec allowlist, a read grant that
// holds a code root (/usr/local/** holds /usr/local/lib) keeps the code
// root mappable and binds the rest it exposes noexec.
func TestPlanGrantAboveCodeRoot(t *testing.T) {
	perms := policyengine.Permissions{Read: entries("/usr/local/**"), Exec: entries("sh"), Declared: []string{"t"}, ExecDeclared: []string{"t"}}
	facts := fakeFacts([]string{"/ws", "/usr/local", "/usr/local/lib", "/usr/local/bin"}, nil, "sh")
	facts.Listings = map[string][]string{"/usr/local": {"bin", "lib"}}
	plan, err := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range plan.Mounts {
		if m.Kind == MountBind && m.NoExec && (m.Target == "/usr/local" || m.Target == "/usr/local/lib") {
			t.Errorf("%s is noexec: the code root /usr/local/lib cannot be mapped (%s)", m.Target, m.Why)
		}
	}
	if m, ok := findMount(plan, MountBind, "/usr/local/bin"); !ok || !m.NoExec {
		t.Errorf("/usr/local/bin: want a noexec bind, got %+v", m)
	}
}

// TestPlanWriteGrantAboveCodeRoot: a write grant holding a code root
// (/usr/local/**) stays noexec as a whole, so nothing the command writes
// there maps, and keeps its writability under the restrictions inside.
func TestPlanWriteGrantAboveCodeRoot(t *testing.T) {
	perms := policyengine.Permissions{Write: entries("/usr/local/**"), Exec: entries("sh"), Declared: []string{"t"}, ExecDeclared: []string{"t"}}
	facts := fakeFacts([]string{"/ws", "/usr/local", "/usr/local/lib", "/usr/local/bin", "/usr/local/share"}, nil, "sh")
	facts.Listings = map[string][]string{"/usr/local": {"bin", "lib", "share"}}
	plan, err := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := findMount(plan, MountBind, "/usr/local"); !ok || !m.NoExec || m.ReadOnly {
		t.Errorf("/usr/local: want a writable noexec bind, got %+v", m)
	}
	for _, m := range plan.Mounts {
		if m.Kind == MountBind && isUnder(m.Target, "/usr/local") && (m.ReadOnly || !m.NoExec) {
			t.Errorf("%s: read-only %v, noexec %v inside the writable noexec grant (%s)", m.Target, m.ReadOnly, m.NoExec, m.Why)
		}
	}
}

// TestPlanRootGrantWithAllowlist: a read grant of / is not bound (it holds
// /tmp and /run), and nothing of it is bound piecewise either.
func TestPlanRootGrantWithAllowlist(t *testing.T) {
	perms := policyengine.Permissions{Read: entries("/**"), Exec: entries("sh"), Declared: []string{"t"}, ExecDeclared: []string{"t"}}
	facts := fakeFacts([]string{"/ws", "/", "/tmp", "/run", "/home"}, nil, "sh")
	facts.Listings = map[string][]string{"/": {"home", "run", "tmp", "usr"}}
	plan, err := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range plan.Mounts {
		if m.Kind == MountBind && (m.Target == "/tmp" || m.Target == "/run" || m.Target == "/home") {
			t.Errorf("%s is bound from the host: %+v", m.Target, m)
		}
	}
}

// TestPlanPrivateHome: a HOME no grant covers is a fresh tmpfs at the same
// path (tools write ~/.cache as a matter of course), writable, noexec
// with an exec list; a granted HOME is the real one, and a HOME that is
// /, the work dir or a system folder is left alone. The landlock tier,
// which has no mounts, drops the rule with the mount.
func TestPlanPrivateHome(t *testing.T) {
	plan := func(t *testing.T, perms policyengine.Permissions, home string, tier Tier) *Plan {
		t.Helper()
		facts := fakeFacts([]string{"/ws", "/home/u", "/home/u/proj"}, nil, "sh")
		p, err := BuildPlan(perms, Spec{Argv: []string{"sh"}, WorkDir: "/ws", Env: []string{"HOME=" + home}, Tier: tier}, facts)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan(t, policyengine.Permissions{}, "/home/u", TierNamespaces)
	m, ok := findMount(p, MountTmpfs, "/home/u")
	r, rok := findRule(p, "/home/u")
	if !ok || !rok || r.Access&fsWriteFile == 0 || r.Access&fsMakeReg == 0 || m.NoExec {
		t.Errorf("ungranted HOME: mount %+v (%v), rule %+v (%v); want a writable private tmpfs", m, ok, r, rok)
	}
	restricted := policyengine.Permissions{Exec: entries("sh"), ExecDeclared: []string{"t"}, Write: entries("/home/u/proj/**")}
	p = plan(t, restricted, "/home/u", TierNamespaces)
	if m, ok := findMount(p, MountTmpfs, "/home/u"); !ok || !m.NoExec {
		t.Errorf("HOME with an exec list: %+v (%v); want a noexec tmpfs", m, ok)
	}
	if r, _ := findRule(p, "/home/u"); r.Access&fsExecute != 0 {
		t.Errorf("HOME with an exec list is executable: %+v", r)
	}
	// The grant inside HOME is bound after (on top of) the tmpfs.
	tmpfsAt, bindAt := -1, -1
	for i, m := range p.Mounts {
		switch {
		case m.Kind == MountTmpfs && m.Target == "/home/u":
			tmpfsAt = i
		case m.Kind == MountBind && m.Target == "/home/u/proj":
			bindAt = i
		}
	}
	if tmpfsAt < 0 || bindAt < tmpfsAt {
		t.Errorf("the grant inside HOME is mount %d, the private HOME %d: the grant must come after", bindAt, tmpfsAt)
	}
	for _, c := range []struct {
		name  string
		perms policyengine.Permissions
		home  string
	}{
		{"read grant", policyengine.Permissions{Read: entries("/home/u/**")}, "/home/u"},
		{"write grant above", policyengine.Permissions{Write: entries("/home/**")}, "/home/u"},
		{"root", policyengine.Permissions{}, "/"},
		{"work dir", policyengine.Permissions{}, "/ws"},
		{"system folder", policyengine.Permissions{}, "/usr/lib"},
		{"above a system folder", policyengine.Permissions{}, "/opt/.."},
		{"run", policyengine.Permissions{}, "/run/u"},
		{"missing write grant", policyengine.Permissions{Write: entries("/home/u/log.txt")}, "/home/u"},
		{"long", policyengine.Permissions{}, "/home/" + strings.Repeat("x", 2000)},
		{"relative", policyengine.Permissions{}, "home"},
	} {
		p := plan(t, c.perms, c.home, TierNamespaces)
		for _, m := range p.Mounts {
			if m.Why == privateHomeWhy {
				t.Errorf("%s: HOME=%s got a private tmpfs", c.name, c.home)
			}
		}
	}
	p = plan(t, policyengine.Permissions{}, "/home/u", TierLandlock)
	for _, r := range p.Landlock.Rules {
		if r.From == privateHomeWhy {
			t.Errorf("landlock tier: the real HOME got the private HOME's rule %+v", r)
		}
	}
}
