//go:build linux

// Package tests holds corral's end-to-end attack tests. They build the
// corral binary and a static attack helper (testdata/probe), run hostile
// commands inside `corral exec` as root and as an unprivileged user, and
// check from the host that every attack failed.
//
// Each attack subtest calls attack(t, class, name); after the run TestMain
// prints one line per threat class:
//
//	attacks: filesystem tried 40 held 38 (known bugs 2, skipped 0)
//
// held counts subtests that passed. An attack that works because of a bug
// already reported is skipped with a message starting with "KNOWN BUG:"
// and counted as a known bug, not as held.
//
// Set CORRAL_REQUIRE_KERNEL=1 (as CI does) to make a missing kernel
// feature fail the test instead of skipping it, CORRAL_E2E_BIN=FILE to
// test a prebuilt corral (built with -tags corral_testhooks) instead of
// building ./cmd/corral, and
// CORRAL_E2E_PROBE=FILE to use a prebuilt attack helper. CORRAL_E2E_NOBODY=0
// leaves out the variants that run as nobody (the CI VM runs the whole
// suite as an ordinary user instead).
package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nobody is the unprivileged user the user variants run as.
const nobody = 65534

var (
	baseDir   string // 0755 folder holding binaries and every test folder
	corralBin string // world-executable corral binary
	probeBin  string // world-executable static attack helper
	// nousernsBin runs a program under Docker's refusal of user
	// namespaces (tests/testdata/nouserns).
	nousernsBin string
	setpriv     string // path of setpriv, "" when missing
	isRoot      = os.Getuid() == 0

	landlockABI int    // 0 when Landlock is missing
	userNSErr   string // why the unprivileged user (or, run as one, the tests' own) cannot make user namespaces
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests: setup:", err)
		os.Exit(1)
	}
	printTally(os.Stdout)
	os.RemoveAll(baseDir)
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	repo, err := filepath.Abs("..")
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(filepath.Join(repo, "cmd", "corral")); err != nil {
		return 0, fmt.Errorf("repository root not found at %s: %w", repo, err)
	}
	baseDir, err = os.MkdirTemp("", "corral-e2e-")
	if err != nil {
		return 0, err
	}
	// Everything under baseDir must be reachable by the unprivileged user.
	if err := os.Chmod(baseDir, 0o755); err != nil {
		return 0, err
	}
	bin := filepath.Join(baseDir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return 0, err
	}
	corralBin = filepath.Join(bin, "corral")
	probeBin = filepath.Join(bin, "probe")
	nousernsBin = filepath.Join(bin, "nouserns")
	build := func(out, pkg string, env ...string) error {
		// The tests' windows and switches (CORRAL_MOUNTS=legacy, the
		// pauses, CORRAL_EARLY_INIT=0) exist only in a test-hooks build.
		cmd := exec.Command("go", "build", "-tags", "corral_testhooks", "-o", out, pkg)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		return os.Chmod(out, 0o755)
	}
	// Prebuilt binaries are copied in: a release build, a deliberately
	// broken one to check that the attacks can fail, or those a VM of
	// the matrix gets from the host (it has no Go toolchain).
	for _, b := range []struct {
		env, out, pkg string
		buildEnv      []string
	}{
		{"CORRAL_E2E_BIN", corralBin, "./cmd/corral", nil},
		{"CORRAL_E2E_PROBE", probeBin, "./tests/testdata/probe", []string{"CGO_ENABLED=0"}},
		{"CORRAL_E2E_NOUSERNS", nousernsBin, "./tests/testdata/nouserns", []string{"CGO_ENABLED=0"}},
	} {
		if prebuilt := os.Getenv(b.env); prebuilt != "" {
			data, err := os.ReadFile(prebuilt)
			if err != nil {
				return 0, err
			}
			if err := os.WriteFile(b.out, data, 0o755); err != nil {
				return 0, err
			}
			continue
		}
		if err := build(b.out, b.pkg, b.buildEnv...); err != nil {
			return 0, err
		}
	}
	// A prebuilt corral without the test hooks would ignore them, and the
	// tests of legacy mounts, of the spawned init and of the host changing
	// mid-launch would pass without testing anything.
	if out, err := exec.Command(corralBin, "version").Output(); err != nil || !strings.Contains(string(out), "(test hooks") {
		return 0, fmt.Errorf("%s is not built with -tags corral_testhooks (corral version: %q, %v)", corralBin, out, err)
	}
	if p, err := exec.LookPath("setpriv"); err == nil {
		setpriv = p
	}
	probeKernel()
	return m.Run(), nil
}

// probeKernel reads the kernel facts the tests skip on.
func probeKernel() {
	const createRulesetVersion = 1
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if e == 0 {
		landlockABI = int(abi)
	}
	switch {
	case !isRoot:
		// The tests already run unprivileged; the user variants are
		// the main ones, and need user namespaces for themselves
		// (kernel.unprivileged_userns_clone=0, AppArmor's restriction
		// on Ubuntu, a container's seccomp profile refuse them).
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			break // let corral itself say it
		}
		if out, err := exec.Command(unshare, "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
			userNSErr = fmt.Sprintf("this user cannot create user namespaces here: %v %s", err, bytes.TrimSpace(out))
		}
	case setpriv == "":
		userNSErr = "setpriv (util-linux) is not installed"
	default:
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			break // let corral itself say it
		}
		out, err := exec.Command(setpriv, "--reuid", fmt.Sprint(nobody), "--regid", fmt.Sprint(nobody), "--clear-groups",
			unshare, "--user", "--map-root-user", "true").CombinedOutput()
		if err != nil {
			userNSErr = fmt.Sprintf("an unprivileged user cannot create user namespaces here: %v %s", err, bytes.TrimSpace(out))
		}
	}
}

// requireKernel skips the test when a kernel feature it needs is missing,
// or fails it when CORRAL_REQUIRE_KERNEL=1.
func requireKernel(t *testing.T, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CORRAL_REQUIRE_KERNEL") == "1" {
		t.Fatal("kernel feature required (CORRAL_REQUIRE_KERNEL=1): " + reason)
	}
	t.Skip(reason)
}

// requireSandbox checks what every `corral exec` run needs.
func requireSandbox(t *testing.T) {
	t.Helper()
	if !isRoot && e2eTier != "landlock" {
		requireKernel(t, userNSErr == "", userNSErr+" (corral exec refuses to run without them)")
	}
	requireKernel(t, landlockABI >= 1, "Landlock is not available (corral exec refuses to run without it)")
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	requireKernel(t, err == nil, "seccomp is not available")
}

// ---- tally of attacks per threat class ----

type tally struct{ tried, held, refused, known, skipped int }

var (
	tallyMu   sync.Mutex
	tallies   = map[string]*tally{}
	knownBugs = map[string]bool{} // test names skipped as KNOWN BUG
	// refusedRuns are tests whose run the landlock tier refused: held.
	refusedRuns = map[string]bool{}
)

// attack registers t as one attempt of threat class; it counts as held
// when t passes.
func attack(t *testing.T, class, name string) {
	t.Helper()
	t.Logf("attack [%s]: %s", class, name)
	tallyMu.Lock()
	c := tallies[class]
	if c == nil {
		c = &tally{}
		tallies[class] = c
	}
	c.tried++
	tallyMu.Unlock()
	t.Cleanup(func() {
		tallyMu.Lock()
		defer tallyMu.Unlock()
		refused := false
		for name := range refusedRuns {
			refused = refused || name == t.Name() || strings.HasPrefix(name, t.Name()+"/")
		}
		switch {
		case knownBugs[t.Name()]:
			c.known++
		case refused:
			c.held++
			c.refused++
		case t.Skipped():
			c.skipped++
		case !t.Failed():
			c.held++
		}
	})
}

// e2eTier is the tier the whole suite runs against (CORRAL_E2E_TIER;
// "": auto, the namespaces tier here). Each exec gets --tier, unless
// CORRAL_E2E_TIER_AUTO=1 says auto picks that tier by itself (the VM box
// whose users cannot make user namespaces).
var e2eTier = os.Getenv("CORRAL_E2E_TIER")

// tierRefusal reports whether r is the landlock tier refusing a run for
// what it cannot enforce, when the suite runs against that tier.
func tierRefusal(r result) bool {
	var out string
	switch {
	case e2eTier != "landlock":
		return false
	case r.code == 125:
		out = r.stderr // exec refused
	case r.code == 1 && strings.Contains(r.stdout, "exec would refuse to run"):
		out = r.stdout // check says exec would refuse
	default:
		return false
	}
	for _, s := range []string{"in the landlock tier (", "the landlock tier has no read-only bind", "the landlock tier cannot hide", "the landlock tier cannot carve"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// requireLandlockTier skips a test that runs the landlock tier itself
// where the kernel cannot give it (signal scoping needs Landlock ABI 6).
func requireLandlockTier(t *testing.T) {
	t.Helper()
	requireKernel(t, landlockABI >= 6, fmt.Sprintf("the landlock tier needs Landlock ABI 6 (signal scoping), the kernel has %d", landlockABI))
}

// namespacesOnly skips a test of what only the namespaces tier does (a
// PID 1 of its own, the mount cache, a private /proc) when the suite
// runs against the landlock tier, whose own attacks are in tier_test.go.
func namespacesOnly(t *testing.T, what string) {
	t.Helper()
	if e2eTier == "landlock" {
		t.Skip("the namespaces tier only: " + what)
	}
}

// knownBug skips t as a reported bug of corral: the attack worked.
func knownBug(t *testing.T, format string, args ...any) {
	t.Helper()
	tallyMu.Lock()
	knownBugs[t.Name()] = true
	tallyMu.Unlock()
	t.Skipf("KNOWN BUG: "+format, args...)
}

func printTally(w io.Writer) {
	tallyMu.Lock()
	defer tallyMu.Unlock()
	classes := make([]string, 0, len(tallies))
	for c := range tallies {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		n := tallies[c]
		tier := ""
		if e2eTier != "" {
			tier = e2eTier + " tier: "
		}
		fmt.Fprintf(w, "attacks: %s%s tried %d held %d (%d by refusing to run; known bugs %d, skipped %d)\n", tier, c, n.tried, n.held, n.refused, n.known, n.skipped)
	}
}

// ---- users ----

// user says who runs corral: the test's own user, or (when the tests run
// as root) the unprivileged user nobody through setpriv.
type user struct {
	name   string
	unpriv bool // run through setpriv as nobody
}

var (
	asSelf   = user{name: "root"}
	asNobody = user{name: "user", unpriv: true}
)

func init() {
	if !isRoot {
		asSelf.name = "self"
	}
}

// users runs fn as a parallel subtest for root and for the unprivileged
// user.
func users(t *testing.T, fn func(t *testing.T, u user)) {
	t.Helper()
	for _, u := range []user{asSelf, asNobody} {
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			if u.unpriv {
				if !isRoot {
					t.Skip("the tests already run unprivileged: the other variant covers it")
				}
				if os.Getenv("CORRAL_E2E_NOBODY") == "0" {
					t.Skip("CORRAL_E2E_NOBODY=0: a separate pass runs the suite as an ordinary user (the CI VM)")
				}
				if e2eTier != "landlock" {
					requireKernel(t, userNSErr == "", userNSErr)
				}
			}
			requireSandbox(t)
			fn(t, u)
		})
	}
}

// ---- running corral ----

type runOpts struct {
	args    []string
	dir     string        // working directory; default baseDir
	stdin   string        // fed to stdin; empty means /dev/null
	env     []string      // environment; nil means defaultEnv
	timeout time.Duration // default 90s (loaded CI machines); the process is killed after it
	bin     string        // the corral binary; default corralBin (built with the test hooks)
	// keepRefusal returns a landlock tier refusal like any result (the
	// tier's own tests), instead of skipping the test as held.
	keepRefusal bool
}

type result struct {
	stdout, stderr string
	code           int // exit code; -1 when killed by a signal or not started
	wall           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s", r.code, r.stdout, r.stderr)
}

func (r result) output() string { return r.stdout + r.stderr }

func defaultEnv() []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=" + baseDir}
}

// command builds the exec.Cmd that runs corral (through setpriv for the
// unprivileged user).
func (u user) command(ctx context.Context, o runOpts) *exec.Cmd {
	bin := o.bin
	if bin == "" {
		bin = corralBin
	}
	args := o.args
	if t := e2eTier; t != "" && os.Getenv("CORRAL_E2E_TIER_AUTO") != "1" && len(args) > 0 && (args[0] == "exec" || args[0] == "check") && o.bin == "" {
		// The whole suite against one tier (scripts/test.sh runs it
		// with landlock); the tests that expect what only the
		// namespaces tier does say so with namespacesOnly.
		args = append([]string{args[0], "--tier", t}, args[1:]...)
	}
	argv := append([]string{bin}, args...)
	if u.unpriv {
		argv = append([]string{setpriv, "--reuid", fmt.Sprint(nobody), "--regid", fmt.Sprint(nobody), "--clear-groups"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = o.dir
	if cmd.Dir == "" {
		cmd.Dir = baseDir
	}
	cmd.Env = o.env
	if cmd.Env == nil {
		cmd.Env = defaultEnv()
	}
	if o.stdin != "" {
		cmd.Stdin = strings.NewReader(o.stdin)
	}
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// run runs corral with o and returns what it printed and its exit code.
func (u user) run(t *testing.T, o runOpts) result {
	t.Helper()
	if o.timeout == 0 {
		o.timeout = 90 * time.Second
	}
	if e2eTier == "landlock" {
		// Files a test planted just before the run would share its
		// start's coarse clock tick, and the git sweep, which in this
		// tier checks everything, would take them for the command's.
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cmd := u.command(ctx, o)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), wall: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		r.code = -1
		t.Errorf("running corral %q: %v", o.args, err)
	}
	if ctx.Err() != nil {
		t.Errorf("corral %q did not end within %v and was killed", o.args, o.timeout)
	}
	if !o.keepRefusal && tierRefusal(r) {
		// The whole suite against the landlock tier: a run that tier
		// refuses (an exec list, a path only a read-only bind could
		// keep) is an attack held by refusing to run at all.
		tallyMu.Lock()
		refusedRuns[t.Name()] = true
		tallyMu.Unlock()
		t.Skipf("held: the landlock tier refuses this run: %s", strings.TrimSpace(r.stderr+r.stdout))
	}
	return r
}

// exec runs `corral exec --work-dir work [--skill S]... -- argv...` from
// inside work.
func (u user) exec(t *testing.T, work string, skills []string, argv ...string) result {
	t.Helper()
	args := []string{"exec", "--work-dir", work}
	for _, s := range skills {
		args = append(args, "--skill", s)
	}
	args = append(append(args, "--"), argv...)
	return u.run(t, runOpts{args: args, dir: work})
}

// ---- folders, files, skills ----

var nameClean = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// newDir makes a fresh folder under baseDir, readable by everyone and, for
// the unprivileged user, owned by it. It is removed after the test.
func newDir(t *testing.T, u user, name string) string {
	t.Helper()
	d, err := os.MkdirTemp(baseDir, nameClean.ReplaceAllString(t.Name(), "_")+"-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	own(t, u, d)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// own hands paths (recursively; missing ones are ignored) to the
// unprivileged user when u is it, so that what the sandbox may not do is
// not already refused by plain file permissions.
func own(t *testing.T, u user, paths ...string) {
	t.Helper()
	if !u.unpriv {
		return
	}
	for _, p := range paths {
		if !exists(p) {
			continue
		}
		// A file may go away during the walk: git (2.47 and later)
		// runs its maintenance detached after a commit, which makes
		// and removes .git/objects/maintenance.lock.
		err := filepath.Walk(p, func(path string, _ os.FileInfo, err error) error {
			if err == nil {
				err = os.Lchown(path, nobody, nobody)
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// token returns a unique string with prefix, to find in outputs.
func token(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// writeSkill writes dir/name/SKILL.md with the given permissions block
// (YAML lines indented by two spaces under "permissions:"; empty for a
// skill without permissions) and returns the skill folder.
func writeSkill(t *testing.T, dir, name, permissions string) string {
	t.Helper()
	fm := "---\nname: " + name + "\ndescription: attack test skill " + name + "\n"
	if permissions != "" {
		fm += "permissions:\n" + permissions
		if !strings.HasSuffix(fm, "\n") {
			fm += "\n"
		}
	}
	fm += "---\nTest skill.\n"
	sd := filepath.Join(dir, name)
	writeFile(t, filepath.Join(sd, "SKILL.md"), fm, 0o644)
	return sd
}

// installProbe copies the probe binary into dir (a copy, not a link: the
// sandboxed command may write to it) and returns its path.
func installProbe(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "probe")
	data, err := os.ReadFile(probeBin)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, string(data), 0o755)
	return p
}

// attackDone is echoed at the end of every attack script: its presence
// shows the script ran to its end inside the sandbox, so a missing secret
// in the output is the sandbox's doing and not a script that never ran.
const attackDone = "ATTACK-SCRIPT-DONE"

// runScript writes script into work/attack.sh and runs `sh attack.sh`
// through corral: the preflight sees only `sh`, so the kernel layers face
// every line. It fails the test unless the script ran to its end.
func runScript(t *testing.T, u user, work string, skills []string, script string) result {
	t.Helper()
	writeFile(t, filepath.Join(work, "attack.sh"), script+"\necho "+attackDone+"\n", 0o644)
	own(t, u, filepath.Join(work, "attack.sh"))
	r := u.exec(t, work, skills, "sh", "attack.sh")
	if !strings.Contains(r.stdout, attackDone) {
		t.Fatalf("the attack script did not run to its end:\n%s", r)
	}
	return r
}

// probeLines returns the probe's result lines ("OK ..." / "ERR ...") in
// order.
func probeLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "OK ") || strings.HasPrefix(l, "ERR ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// noSecret fails the test when needle shows up in the run's output.
func noSecret(t *testing.T, r result, needle, what string) {
	t.Helper()
	if strings.Contains(r.output(), needle) {
		t.Errorf("%s: the sandboxed command got %q:\n%s", what, needle, r)
	}
}

// runHost runs a program on the host (outside any sandbox) for at most
// 30 seconds and returns its combined output.
func runHost(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// waitFor polls cond every 20ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
