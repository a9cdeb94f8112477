//go:build linux

package tests

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// execFixture is a skill with an exec allowlist of sh, cat and the probe
// (by absolute path, in a folder of its own), and the work dir writable.
type execFixture struct {
	work, tools, probe, skill string
}

func newExec(t *testing.T, u user) execFixture {
	t.Helper()
	f := execFixture{work: newDir(t, u, "work"), tools: newDir(t, asSelf, "tools")}
	f.probe = installProbe(t, f.tools)
	f.skill = writeSkill(t, newDir(t, asSelf, "skills"), "sh-cat", fmt.Sprintf(`  fs:
    write: ["$WORK_DIR/**"]
  exec: [sh, cat, %s]
`, f.probe))
	return f
}

// ldso is the ELF interpreter the host's /bin/sh names (the dynamic
// loader), "" if there is none.
func ldso(t *testing.T) string {
	t.Helper()
	f, err := elf.Open("/bin/sh")
	if err != nil {
		t.Skipf("cannot read /bin/sh: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				return strings.TrimRight(string(b), "\x00")
			}
		}
	}
	t.Skip("/bin/sh is not dynamically linked: there is no dynamic loader to attack through")
	return ""
}

// hostRuns is a control: the program prints want when run on the host,
// so its absence inside the sandbox means something.
func hostRuns(t *testing.T, want string, name string, args ...string) {
	t.Helper()
	if out, _ := runHost(name, args...); !strings.Contains(out, want) {
		t.Fatalf("control: %s %q on the host does not print %q: %s", name, args, want, out)
	}
}

// TestExecNotGranted runs programs outside the exec list from a script,
// and with execve() from an allowed program.
func TestExecNotGranted(t *testing.T) {
	t.Parallel()
	hostRuns(t, "uid=", "/usr/bin/id")
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "run a program that is not in the exec list")
		f := newExec(t, u)
		r := runScript(t, u, f.work, []string{f.skill}, fmt.Sprintf(`
/usr/bin/id; id; /bin/id; env id
%[1]s exec /usr/bin/id
%[1]s exec /bin/id
`, f.probe))
		noSecret(t, r, "uid=", "running id")
	})
}

// TestExecLibraryFolderProgram executes, with execve(), a program that
// lives in a readable library folder (/usr/lib/...).
func TestExecLibraryFolderProgram(t *testing.T) {
	t.Parallel()
	progs := libraryPrograms()
	if len(progs) == 0 {
		t.Skip("no ELF program found in the library folders")
	}
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "execve a program from a library folder")
		f := newExec(t, u)
		var script strings.Builder
		for _, p := range progs {
			fmt.Fprintf(&script, "%s %s\n%s exec %s %s\n", p.path, p.args, f.probe, p.path, p.args)
		}
		r := runScript(t, u, f.work, []string{f.skill}, script.String())
		for _, p := range progs {
			noSecret(t, r, p.want, "running "+p.path)
		}
	})
}

// TestExecDynamicLoader starts a program that is not allowed through the
// allowed dynamic loader (ld.so PROGRAM), which maps instead of executing.
func TestExecDynamicLoader(t *testing.T) {
	t.Parallel()
	ld := ldso(t)
	hostRuns(t, "uid=", ld, "/usr/bin/id")
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "run a program through the dynamic loader")
		f := newExec(t, u)
		r := runScript(t, u, f.work, []string{f.skill}, fmt.Sprintf(`
%[1]s /usr/bin/id
%[1]s /bin/id
%[2]s exec %[1]s /usr/bin/id
`, ld, f.probe))
		noSecret(t, r, "uid=", "running id through "+ld)
	})
}

// libraryProgram is an ELF program in a folder the exec allowlist leaves
// readable for libraries, with arguments and what it prints.
type libraryProgram struct{ path, args, want string }

func libraryPrograms() []libraryProgram {
	var out []libraryProgram
	if exists("/usr/lib/git-core/git") {
		out = append(out, libraryProgram{"/usr/lib/git-core/git", "--version", "git version"})
	}
	javas, _ := filepath.Glob("/usr/lib/jvm/*/bin/java")
	if len(javas) > 0 {
		out = append(out, libraryProgram{javas[0], "-version", "Runtime Environment"})
	}
	return out
}

// firstLibraryProgram is a library-folder program to copy (readable with
// an exec allowlist); t is skipped when the host has none.
func firstLibraryProgram(t *testing.T) libraryProgram {
	t.Helper()
	progs := libraryPrograms()
	if len(progs) == 0 {
		t.Skip("no ELF program in the library folders to copy (readable with an exec allowlist)")
	}
	return progs[0]
}

// TestExecDynamicLoaderLibraryFolder starts, through the dynamic loader,
// a program that lives in a library folder (git in /usr/lib/git-core, a
// JVM in /usr/lib/jvm): those folders stay readable for libraries.
func TestExecDynamicLoaderLibraryFolder(t *testing.T) {
	t.Parallel()
	ld := ldso(t)
	progs := libraryPrograms()
	if len(progs) == 0 {
		t.Skip("no ELF program found in the library folders")
	}
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "run a library-folder program through the dynamic loader")
		f := newExec(t, u)
		var script strings.Builder
		for _, p := range progs {
			fmt.Fprintf(&script, "%s %s %s 2>&1\n", ld, p.path, p.args)
		}
		r := runScript(t, u, f.work, []string{f.skill}, script.String())
		var ran []string
		for _, p := range progs {
			if strings.Contains(r.output(), p.want) {
				ran = append(ran, p.path)
			}
		}
		if len(ran) > 0 {
			t.Errorf("with exec [sh, cat] the command ran %v through the allowed dynamic loader (%s PROGRAM): their folders were not bound noexec\n%s", ran, ld, r)
		}
		if !strings.Contains(r.output(), "failed to map segment") {
			t.Errorf("want the loader's \"failed to map segment\" (the folders are noexec):\n%s", r)
		}
	})
}

// usrLocalLibPath skips t unless it runs as root and returns a fresh
// /usr/local/lib/corral-test-X path (not made yet), removed after t.
func usrLocalLibPath(t *testing.T, why string) string {
	t.Helper()
	if !isRoot {
		t.Skip(why + " in /usr/local/lib needs root")
	}
	if err := os.MkdirAll("/usr/local/lib", 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join("/usr/local/lib", token("corral-test"))
	t.Cleanup(func() { os.RemoveAll(p) })
	return p
}

// hostID is the host's /usr/bin/id, to install as a program.
func hostID(t *testing.T) string {
	t.Helper()
	id, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Fatal(err)
	}
	return string(id)
}

// TestExecDynamicLoaderNewProgram installs a program after corral has
// indexed the library folders, first in a new folder of a library root,
// then two levels further down, and runs each through the dynamic loader.
func TestExecDynamicLoaderNewProgram(t *testing.T) {
	if !isRoot {
		t.Skip("installing a program in /usr/local/lib needs root")
	}
	t.Parallel()
	ld := ldso(t)
	hostRuns(t, "uid=", ld, "/usr/bin/id")
	id := hostID(t)
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "run a program installed after the index was built through the dynamic loader")
		f := newExec(t, u)
		pkg := usrLocalLibPath(t, "installing a program")
		// Build (or check) the index before each install.
		runScript(t, u, f.work, []string{f.skill}, "cat /dev/null")
		for _, dir := range []string{pkg + "/bin", pkg + "/tools/x/bin"} {
			writeFile(t, filepath.Join(dir, "id"), id, 0o755)
			r := runScript(t, u, f.work, []string{f.skill}, fmt.Sprintf("%s %s/id 2>&1", ld, dir))
			noSecret(t, r, "uid=", "running "+dir+"/id, installed after the index was built, through "+ld)
		}
	})
}

// TestExecProgramFolderVanishes removes and installs a folder of programs
// over and over while runs index, plan and mount it: a folder removed
// between the plan and its mount is left out (its place is read-only, so
// nothing in the sandbox can make it), and no run fails for it. What the
// host installs during a run can be loaded until the next run (README).
func TestExecProgramFolderVanishes(t *testing.T) {
	if !isRoot {
		t.Skip("installing a program in /usr/local/lib needs root")
	}
	t.Parallel()
	id := hostID(t)
	users(t, func(t *testing.T, u user) {
		f := newExec(t, u)
		pkg := usrLocalLibPath(t, "installing a program")
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(1+i%7) * time.Millisecond):
				}
				if i%2 == 0 {
					os.MkdirAll(pkg+"/bin", 0o755)
					os.WriteFile(pkg+"/bin/id", []byte(id), 0o755)
				} else {
					os.RemoveAll(pkg)
				}
			}
		}()
		defer func() { close(stop); <-done }()
		// Every other run builds the new root the older way (bind, then
		// flags), where the plan, not the mount, says what is read-only.
		for i := range 8 {
			env := defaultEnv()
			if i%2 == 1 {
				env = append(env, "CORRAL_MOUNTS=legacy")
			}
			r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--skill", f.skill, "--", "sh", "-c", "echo " + attackDone}, dir: f.work, env: env})
			if !strings.Contains(r.stdout, attackDone) {
				t.Fatalf("a run failed while %s was removed and installed:\n%s", pkg, r)
			}
		}
	})
}

// TestExecAllowedProgramInProgramFolder allows a program that lives in a
// folder of programs (a JVM's bin, next to its lib): it still runs, with
// the libraries it names in its RPATH; its neighbours are its toolchain's
// (the JDK's jar runs as java would), but a program outside that tree
// does not, even through the dynamic loader.
func TestExecAllowedProgramInProgramFolder(t *testing.T) {
	t.Parallel()
	javas, _ := filepath.Glob("/usr/lib/jvm/*/bin/java")
	if len(javas) == 0 {
		t.Skip("no JVM in /usr/lib/jvm: nothing to allow")
	}
	java := javas[0]
	jar := filepath.Join(filepath.Dir(java), "jar")
	hostRuns(t, "Runtime Environment", java, "-version")
	ld := ldso(t)
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "run the neighbours of an allowed program in a program folder")
		work := newDir(t, u, "work")
		sd := writeSkill(t, newDir(t, asSelf, "skills"), "java", fmt.Sprintf(`  fs:
    read: ["$WORK_DIR/**"]
  exec: [sh, %s]
`, java))
		id := "/usr/bin/id"
		r := runScript(t, u, work, []string{sd}, fmt.Sprintf("%s -version 2>&1\n%s --version 2>&1\n%s %s -u 2>&1 && echo ID-RAN", java, jar, ld, id))
		if !strings.Contains(r.output(), "Runtime Environment") {
			t.Errorf("the allowed %s did not run:\n%s", java, r)
		}
		// jar is a JVM launcher: it runs, and its JVM may stop early at a
		// configuration the sandbox does not have.
		if !strings.Contains(r.output(), "jar 1") && !strings.Contains(r.output(), "sun.tools.jar") {
			t.Errorf("%s, in the allowed java's toolchain, did not run:\n%s", jar, r)
		}
		if !strings.Contains(r.output(), id+": ") || strings.Contains(r.output(), "ID-RAN") {
			t.Errorf("%s, outside the allowed java's toolchain, was mapped through %s:\n%s", id, ld, r)
		}
	})
}

// TestExecWrittenCopy writes a program into the writable work dir, /tmp
// and /dev/shm and runs it: directly, through execve() and through the
// dynamic loader.
func TestExecWrittenCopy(t *testing.T) {
	t.Parallel()
	ld := ldso(t)
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "run a program the command wrote")
		f := newExec(t, u)
		payload := token("PAYLOAD")
		writeFile(t, filepath.Join(f.work, "payload.txt"), payload, 0o644)
		own(t, u, filepath.Join(f.work, "payload.txt"))
		var script strings.Builder
		name := token("copy")
		for _, dir := range []string{".", "/tmp", "/dev/shm"} {
			p, c := dir+"/"+name, dir+"/"+name+"-cat"
			if dir != "." {
				// The sandbox's /tmp and /dev/shm are private: nothing may
				// land on the host's.
				t.Cleanup(func() {
					for _, f := range []string{p, c} {
						if exists(f) {
							os.Remove(f)
							t.Errorf("the copy %s landed on the host", f)
						}
					}
				})
			}
			fmt.Fprintf(&script, `
%[1]s copy %[1]s %[2]s
%[2]s echo %[3]s
%[1]s exec %[2]s echo %[3]s
%[1]s copy /usr/bin/cat %[4]s
%[4]s payload.txt
%[5]s %[4]s payload.txt
`, f.probe, p, payload, c, ld)
		}
		r := runScript(t, u, f.work, []string{f.skill}, script.String())
		noSecret(t, r, "OK "+payload, "running a copy of the probe")
		noSecret(t, r, payload, "running a copy of cat")
		if !strings.Contains(r.stdout, "OK copy to /tmp/"+name) {
			t.Errorf("control: the copies were not written, so the test proves nothing:\n%s", r)
		}
	})
}

// TestExecMemfd copies a program into a memfd and executes it, with and
// without MFD_EXEC, through execveat(AT_EMPTY_PATH) and /proc/self/fd.
func TestExecMemfd(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		t.Run("sysctl lowered first", func(t *testing.T) {
			attack(t, "exec", "lower vm.memfd_noexec, then execute a memfd copy")
			f := newExec(t, u)
			payload := token("PAYLOAD")
			r := runScript(t, u, f.work, []string{f.skill}, fmt.Sprintf(`
echo 0 > /proc/sys/vm/memfd_noexec
cat /proc/sys/vm/memfd_noexec
%[1]s memfd-exec %[1]s none echo %[2]s
%[1]s memfd-exec %[1]s exec echo %[2]s
`, f.probe, payload))
			noSecret(t, r, payload, "executing a memfd")
		})
		// (MFD_NOEXEC_SEAL memfds cannot be executed anywhere: see
		// TestExecMemfdDynamicLoader for what they can do.)
		for _, mode := range []string{"none", "exec"} {
			t.Run(mode, func(t *testing.T) {
				attack(t, "exec", "execute a memfd copy ("+mode+")")
				f := newExec(t, u)
				payload := token("PAYLOAD")
				r := u.exec(t, f.work, []string{f.skill}, f.probe, "memfd-exec", f.probe, mode, "echo", payload)
				noSecret(t, r, payload, "executing a memfd")
				if lines := probeLines(r.stdout); len(lines) != 1 || !strings.HasPrefix(lines[0], "ERR ") {
					t.Errorf("want one ERR line from the probe:\n%s", r)
				}
			})
		}
	})
}

// TestExecMemfdDynamicLoader puts a program that is not allowed into a
// memfd sealed against exec (allowed) and has the allowed dynamic loader
// map it from /proc/self/fd: nothing is executed, so neither the memfd
// seal nor Landlock's EXECUTE right applies.
func TestExecMemfdDynamicLoader(t *testing.T) {
	t.Parallel()
	ld := ldso(t)
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "map a memfd copy through the dynamic loader")
		f := newExec(t, u)
		// The command could write these bytes itself; the test saves it
		// the trouble.
		id, err := os.ReadFile("/usr/bin/id")
		if err != nil {
			t.Skip(err)
		}
		writeFile(t, filepath.Join(f.work, "idcopy"), string(id), 0o644)
		own(t, u, filepath.Join(f.work, "idcopy"))
		r := u.exec(t, f.work, []string{f.skill}, f.probe, "memfd-ldso", ld, "./idcopy")
		if strings.Contains(r.stdout, "uid=") {
			knownBug(t, "with exec [sh, cat, probe] an allowed program runs any binary: it copies it into a memfd with MFD_NOEXEC_SEAL (allowed by seccomp and by vm.memfd_noexec=2) and runs %s /proc/self/fd/N; the memfd is not on a noexec mount and Landlock does not check mmap(PROT_EXEC)", ld)
		}
		if lines := probeLines(r.stdout); len(lines) != 1 || !strings.HasPrefix(lines[0], "ERR ") {
			t.Errorf("want one ERR line from the probe:\n%s", r)
		}
	})
}

// TestExecPreflight checks that command lines naming programs outside
// the exec list are refused before anything starts, with one line naming
// the program and saying how to grant it.
func TestExecPreflight(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		argv []string
		prog string
	}{
		{"python3", []string{"python3", "-c", "1"}, "python3"},
		{"sh -c id", []string{"sh", "-c", "id"}, "id"},
		{"pipeline", []string{"sh", "-c", "cat /etc/hostname | id"}, "id"},
		{"command substitution", []string{"sh", "-c", "echo $(id -u)"}, "id"},
		{"absolute path", []string{"/usr/bin/id"}, "id"},
	}
	users(t, func(t *testing.T, u user) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				attack(t, "exec", "preflight: "+c.name)
				f := newExec(t, u)
				report := filepath.Join(newDir(t, u, "report"), "report.json") // outside the work dir, as corral requires
				args := append([]string{"exec", "--work-dir", f.work, "--skill", f.skill, "--report", report, "--"}, c.argv...)
				r := u.run(t, runOpts{args: args, dir: f.work})
				if r.code != 126 {
					t.Errorf("exit %d, want 126:\n%s", r.code, r)
				}
				if r.stdout != "" {
					t.Errorf("something ran and printed:\n%s", r)
				}
				line := strings.TrimSuffix(r.stderr, "\n")
				if strings.Contains(line, "\n") || !strings.Contains(line, c.prog) || !strings.Contains(line, "permissions.exec") {
					t.Errorf("want one stderr line naming %s and saying how to grant it (permissions.exec):\n%s", c.prog, r)
				}
				var rep struct {
					ExitCode int               `json:"exit_code"`
					Denials  []json.RawMessage `json:"denials"`
				}
				data, err := os.ReadFile(report)
				if err != nil || json.Unmarshal(data, &rep) != nil {
					t.Fatalf("no readable report: %v\n%s", err, data)
				}
				if rep.ExitCode != 126 || len(rep.Denials) == 0 {
					t.Errorf("report: exit_code %d with %d denials, want 126 and the preflight's denial:\n%s", rep.ExitCode, len(rep.Denials), data)
				}
			})
		}
	})
}

// TestExecNotFound runs a program that does not exist in the default
// sandbox: 127, and nothing else runs.
func TestExecNotFound(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "run a program that does not exist")
		work := newDir(t, u, "work")
		name := token("no-such-program")
		r := u.exec(t, work, nil, name, "--help")
		if r.code != 127 || !strings.Contains(r.stderr, name) {
			t.Errorf("exit %d, want 127 and a line naming %s:\n%s", r.code, name, r)
		}
		// Under an exec list too, directly, by path and through a shell:
		// a missing program is not found (127, as a shell says), not one
		// to add to the list (126). A present one stays 126.
		sk := writeSkill(t, newDir(t, asSelf, "skills"), "only-sh", "  exec: [sh]\n  fs:\n    read: [\"$WORK_DIR/**\"]\n")
		for _, argv := range [][]string{{name}, {"/usr/bin/" + name}, {"./" + name}, {"sh", "-c", name + " --help"}} {
			r := u.exec(t, work, []string{sk}, argv...)
			if r.code != 127 || !strings.Contains(r.stderr, "command not found") {
				t.Errorf("%q under an exec list: exit %d, want 127 and \"command not found\":\n%s", argv, r.code, r)
			}
		}
		// A path the sandbox does not show is refused the same way
		// whether it exists or not: 126 would otherwise tell the command
		// which of the host's hidden files exist.
		hidden := newDir(t, asSelf, "hidden")
		writeFile(t, filepath.Join(hidden, "there"), "#!/bin/sh\n", 0o755)
		for _, p := range []string{filepath.Join(hidden, "there"), filepath.Join(hidden, name)} {
			if r := u.exec(t, work, []string{sk}, p); r.code != 126 || strings.Contains(r.stderr, "not found") {
				t.Errorf("%s outside the grants: exit %d, want 126 whether it exists or not:\n%s", p, r.code, r)
			}
		}
		if r := u.exec(t, work, []string{sk}, "sh", "-c", "ls"); r.code != 126 || !strings.Contains(r.stderr, "add \"ls\" to permissions.exec") {
			t.Errorf("ls under an exec list of sh: exit %d, want 126 and the grant:\n%s", r.code, r)
		}
	})
}

// TestExecSkillWithoutWorkDir runs an allowed, installed program under a
// skill that grants no folder (like an API skill: network and exec only).
// Not an attack: a correctness check of the exit-code contract.
func TestExecSkillWithoutWorkDir(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		sk := writeSkill(t, newDir(t, asSelf, "skills"), "no-folders", "  exec: [sh]\n  env: [LANG]\n")
		r := u.exec(t, work, []string{sk}, "sh", "-c", "echo started")
		if r.code == 127 && strings.Contains(r.stderr, "command not found") {
			knownBug(t, "a skill that grants no folder cannot run anything: `sh -c 'echo started'` ends with 127 %q; the init chdirs into the work dir, which is not in the sandbox (ENOENT), and execFailure reports ENOENT as command not found", strings.TrimSpace(r.stderr))
		}
		if r.code != 0 || !strings.Contains(r.stdout, "started") {
			t.Errorf("want the command to run:\n%s", r)
		}
	})
}

// TestExecDynamicLoaderProtectedPath writes a program into a protected
// path that does not exist yet (.profile) in one run, and runs it through
// the dynamic loader in the next, when the protected path is bound
// read-only on top of the noexec work dir.
func TestExecDynamicLoaderProtectedPath(t *testing.T) {
	t.Parallel()
	ld := ldso(t)
	p := firstLibraryProgram(t)
	users(t, func(t *testing.T, u user) {
		attack(t, "exec", "run a program written into a protected path through the dynamic loader")
		f := newExec(t, u)
		// A .profile a run creates is quarantined after it (homepersist_test.go),
		// so the copy is planted from the host, as an earlier run could
		// have before that.
		writeFile(t, filepath.Join(f.work, ".profile"), readFile(t, p.path), 0o644)
		own(t, u, filepath.Join(f.work, ".profile"))
		script := fmt.Sprintf("%s ./.profile %s 2>&1", ld, p.args)
		r := runScript(t, u, f.work, []string{f.skill}, script)
		noSecret(t, r, p.want, fmt.Sprintf("a copy of %s in .profile run through %s", p.path, ld))
	})
}

// TestExecDynamicLoaderUsrGrant grants read of all of /usr (and of
// /usr/bin) with an exec allowlist: the programs there become readable,
// and must still not be mappable.
func TestExecDynamicLoaderUsrGrant(t *testing.T) {
	t.Parallel()
	ld := ldso(t)
	hostRuns(t, "uid=", ld, "/usr/bin/id")
	for _, grant := range []string{"/usr/**", "/usr/bin/**"} {
		users(t, func(t *testing.T, u user) {
			attack(t, "exec", "run a program through the dynamic loader with read: ["+grant+"]")
			work := newDir(t, u, "work")
			sd := writeSkill(t, newDir(t, asSelf, "skills"), "usr", fmt.Sprintf(`  fs:
    read: [%q, "$WORK_DIR/**"]
  exec: [sh, cat]
`, grant))
			r := runScript(t, u, work, []string{sd}, fmt.Sprintf("cat /usr/bin/id > /dev/null && echo readable\n%s /usr/bin/id 2>&1", ld))
			if !strings.Contains(r.stdout, "readable") {
				t.Fatalf("control: /usr/bin/id is not readable with read: [%s]:\n%s", grant, r)
			}
			noSecret(t, r, "uid=", "running /usr/bin/id through "+ld+" with read: ["+grant+"]")
		})
	}
}

// TestExecProgramIndexWriteGrant: a skill may not write where corral
// keeps its program index; a sandbox that could would empty it for the
// runs after it.
func TestExecProgramIndexWriteGrant(t *testing.T) {
	if !isRoot {
		t.Skip("root's program index is /run/corral; the user variant has no XDG_RUNTIME_DIR here")
	}
	t.Parallel()
	attack(t, "exec", "write a grant over the program index folder")
	if err := os.MkdirAll("/run/corral", 0o755); err != nil {
		t.Fatal(err)
	}
	work := newDir(t, asSelf, "work")
	sd := writeSkill(t, newDir(t, asSelf, "skills"), "index", `  fs:
    write: ["/run/corral/**"]
  exec: [sh]
`)
	r := asSelf.exec(t, work, []string{sd}, "sh", "-c", "echo ran")
	if r.code != 125 || !strings.Contains(r.stderr, "program index") || strings.Contains(r.stdout, "ran") {
		t.Fatalf("a write grant of /run/corral was not refused with 125 naming the program index:\n%s", r)
	}
}

// TestExecProgramFolderWriteGrant grants write on a folder of programs
// with an exec allowlist: the grant holds (the command can write there),
// and the folder stays noexec (the programs in it cannot be mapped).
func TestExecProgramFolderWriteGrant(t *testing.T) {
	pkg := usrLocalLibPath(t, "installing a folder of programs")
	t.Parallel()
	requireSandbox(t)
	ld := ldso(t)
	attack(t, "exec", "run a program in a write-granted folder of programs through the dynamic loader")
	writeFile(t, filepath.Join(pkg, "bin", "id"), hostID(t), 0o755)
	work := newDir(t, asSelf, "work")
	sd := writeSkill(t, newDir(t, asSelf, "skills"), "pkgwrite", fmt.Sprintf(`  fs:
    read: ["$WORK_DIR/**"]
    write: ["%s/bin/**"]
  exec: [sh]
`, pkg))
	r := runScript(t, asSelf, work, []string{sd}, fmt.Sprintf("echo written > %[1]s/bin/note && echo WROTE\n%[2]s %[1]s/bin/id 2>&1", pkg, ld))
	if !strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the write grant of %s/bin did not hold:\n%s", pkg, r)
	}
	noSecret(t, r, "uid=", "running "+pkg+"/bin/id through "+ld)
}

// TestExecWrittenCodeRoot grants write on a folder inside a code root
// (/usr/local/lib/X) with an exec allowlist and runs a program the command
// copies there through the dynamic loader, in the same run.
func TestExecWrittenCodeRoot(t *testing.T) {
	dir := usrLocalLibPath(t, "making a folder")
	t.Parallel()
	requireSandbox(t)
	ld := ldso(t)
	p := firstLibraryProgram(t)
	attack(t, "exec", "write a program into a writable folder inside a code root and map it")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	work := newDir(t, asSelf, "work")
	sd := writeSkill(t, newDir(t, asSelf, "skills"), "codewrite", fmt.Sprintf(`  fs:
    read: ["$WORK_DIR/**"]
    write: ["%s/**"]
  exec: [sh, cat]
`, dir))
	r := runScript(t, asSelf, work, []string{sd}, fmt.Sprintf("cat %[1]s > %[2]s/libcopy.so.1 && echo COPIED\n%[3]s %[2]s/libcopy.so.1 %[4]s 2>&1", p.path, dir, ld, p.args))
	if !strings.Contains(r.stdout, "COPIED") {
		t.Fatalf("control: the copy into %s failed:\n%s", dir, r)
	}
	noSecret(t, r, p.want, "a copy of "+p.path+" written to "+dir+" and run through "+ld)
}

// TestExecRelativeCommand runs ./prog: a relative path starts in the work
// dir, wherever corral was started (it used to send the probe into an
// endless recursion, and corral died of a stack overflow).
func TestExecRelativeCommand(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "bad-input", "crash corral with a relative command path")
		f := newFS(t, u)
		writeFile(t, filepath.Join(f.work, "prog"), "#!/bin/sh\necho RELATIVE \"$@\"\n", 0o755)
		own(t, u, filepath.Join(f.work, "prog"))
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--", "./prog", "a"}})
		if r.code != 0 || !strings.Contains(r.stdout, "RELATIVE a") {
			t.Errorf("./prog from the work dir: exit %d, want 0 and its output:\n%s", r.code, r)
		}
		r = u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--", "./missing"}})
		if r.code != 127 || !strings.Contains(r.stderr, "./missing") {
			t.Errorf("./missing: exit %d, want 127 and the name:\n%s", r.code, r)
		}
	})
}

// TestExecEntryMissingSaid: an exec entry the sandbox's PATH does not
// have is said on stderr, not only in the report (issue 28, item 4).
func TestExecEntryMissingSaid(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		sk := writeSkill(t, newDir(t, u, "skills"), "missing", "  fs:\n    write: [\"$WORK_DIR/**\"]\n  exec: [sh, nosuchtool-corral]\n")
		r := u.exec(t, work, []string{sk}, "sh", "-c", "echo ran")
		if r.code != 0 || r.stdout != "ran\n" || !strings.Contains(r.stderr, "exec entry nosuchtool-corral (missing) is not installed on the sandbox's PATH") {
			t.Errorf("want the run, and the missing entry named on stderr:\n%s", r)
		}
	})
}
