//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"corral.dev/corral"
	"corral.dev/corral/sandbox"
)

// The file denial report (docs/denials.md): what the command tried beyond
// its grants, as the kernel's Landlock audit records tell corral, which
// needs audit enabled and root. The tests turn audit on for their runs
// and put back the host's setting after.

var (
	auditMu    sync.Mutex
	auditUsers int
	auditWas   auditState
)

// auditState is what the tests change of the kernel's audit settings.
type auditState struct{ enabled, backlog uint32 }

// auditStatus reads the kernel's audit settings (AUDIT_GET), or sets
// them (AUDIT_SET) when set is not nil.
func auditStatus(set *auditState) (auditState, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return auditState{}, err
	}
	defer unix.Close(fd)
	// struct nlmsghdr, then struct audit_status: mask, enabled, failure,
	// pid, rate_limit, backlog_limit, lost, ...
	req := make([]byte, unix.NLMSG_HDRLEN+40)
	h := (*unix.NlMsghdr)(unsafe.Pointer(&req[0]))
	*h = unix.NlMsghdr{Len: uint32(len(req)), Type: unix.AUDIT_GET, Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK, Seq: 1}
	field := func(b []byte, i int) *uint32 { return (*uint32)(unsafe.Pointer(&b[4*i])) }
	body := req[unix.NLMSG_HDRLEN:]
	if set != nil {
		h.Type = unix.AUDIT_SET
		*field(body, 0) = unix.AUDIT_STATUS_ENABLED | unix.AUDIT_STATUS_BACKLOG_LIMIT
		*field(body, 1), *field(body, 5) = set.enabled, set.backlog
	}
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return auditState{}, err
	}
	buf := make([]byte, 8192)
	for range 4 {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return auditState{}, err
		}
		typ := *(*uint16)(unsafe.Pointer(&buf[4]))
		data := buf[unix.NLMSG_HDRLEN:n]
		switch {
		case typ == unix.NLMSG_ERROR && len(data) >= 4:
			if e := *(*int32)(unsafe.Pointer(&data[0])); e != 0 {
				return auditState{}, unix.Errno(-e)
			}
			if set != nil {
				return *set, nil
			}
		case typ == unix.AUDIT_GET && len(data) >= 24:
			return auditState{*field(data, 1), *field(data, 5)}, nil
		}
	}
	return auditState{}, fmt.Errorf("no answer from audit")
}

// withAudit turns the kernel's audit on for t (root only), with room for
// a burst of records (a backlog of 8192: without auditd the kernel also
// prints each record on the console, slowly, and drops what does not
// fit), and back to what it was once the last test that asked is done.
func withAudit(t *testing.T) {
	t.Helper()
	requireKernel(t, landlockABI >= 7, fmt.Sprintf("Landlock ABI %d < 7: no audit records of its denials", landlockABI))
	if !isRoot {
		t.Skip("reading the kernel's audit records needs root (CAP_AUDIT_READ)")
	}
	auditMu.Lock()
	defer auditMu.Unlock()
	if auditUsers == 0 {
		was, err := auditStatus(nil)
		requireKernel(t, err == nil, fmt.Sprintf("the kernel's audit cannot be read: %v", err))
		auditWas = was
		on := auditState{1, max(was.backlog, 8192)}
		if was.enabled == 2 {
			on.enabled = 2 // locked: leave it
		}
		if _, err := auditStatus(&on); err != nil {
			t.Fatalf("enabling audit: %v", err)
		}
	}
	auditUsers++
	t.Cleanup(func() {
		auditMu.Lock()
		defer auditMu.Unlock()
		if auditUsers--; auditUsers == 0 {
			auditStatus(&auditWas)
		}
	})
}

// denialRun runs script (sh -s) with the given flags and skills, and
// returns the result and its report.
func denialRun(t *testing.T, u user, work string, flags []string, script string) (result, corral.Result) {
	t.Helper()
	report := filepath.Join(newDir(t, u, "report"), "report.json")
	args := append([]string{"exec", "--work-dir", work, "--report", report}, flags...)
	r := u.run(t, runOpts{args: append(args, "--", "sh", "-s"), dir: work, stdin: script, keepRefusal: true})
	data := readFile(t, report)
	if !strings.Contains(data, `\u202e`) {
		return r, checkReport(t, data)
	}
	// checkReport compares with json.Marshal, which writes U+202E as is;
	// the report escapes it (printable.JSON).
	var res corral.Result
	if err := json.Unmarshal([]byte(data), &res); err != nil {
		t.Fatal(err)
	}
	for _, p := range reportSchema(t).Validate([]byte(data)) {
		t.Errorf("report: %s", p)
	}
	return r, res
}

// findDenial returns the report's denial of path with access, or fails.
func findDenial(t *testing.T, res corral.Result, path, access string) corral.FSDenial {
	t.Helper()
	for _, d := range res.FSDenials {
		if d.Path == path && d.Access == access {
			return d
		}
	}
	t.Fatalf("no %s denial of %s in the report: %+v", access, path, res.FSDenials)
	return corral.FSDenial{}
}

// outsideGrants is a folder outside every grant holding a secret file
// and an empty folder.
func outsideGrants(t *testing.T) (dir, secret, out string) {
	dir = t.TempDir()
	secret, out = filepath.Join(dir, "secret"), filepath.Join(dir, "out")
	writeFile(t, secret, "s3cret\n", 0o644)
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, secret, out
}

// TestFSDenialsLandlockTier: a read, a write outside the write grants and
// a program outside the exec list are each reported with the access, the
// program and the grant that allows it, in the report and on stderr.
func TestFSDenialsLandlockTier(t *testing.T) {
	requireSandbox(t)
	withAudit(t)
	_, secret, out := outsideGrants(t)
	work := newDir(t, asSelf, "work")
	skill := writeSkill(t, t.TempDir(), "den", "  fs:\n    read: [\"$WORK_DIR/**\"]\n    write: [\"$WORK_DIR/out/**\"]\n  exec: [sh, cat, touch]\n")
	script := fmt.Sprintf("cat %s\necho x > %s/new\ntouch %s/top\n/usr/bin/id\n", secret, out, work)
	r, res := denialRun(t, asSelf, work, []string{"--tier", "landlock", "--best-effort", "--skill", skill}, script)
	if strings.Contains(r.stdout, "s3cret") {
		t.Fatalf("the secret was read: %s", r)
	}
	d := findDenial(t, res, secret, "read")
	if d.Program != "cat" || d.Exe != "/usr/bin/cat" || d.Grant != `add "`+secret+`" to permissions.fs.read` || d.Source != "landlock" || !slices.Contains(d.Rights, "fs.read_file") {
		t.Errorf("read denial: %+v", d)
	}
	d = findDenial(t, res, out, "create")
	if d.Program != "sh" || d.Grant != `add "`+out+`/**" to permissions.fs.write` || !slices.Contains(d.Rights, "fs.make_reg") {
		t.Errorf("create denial: %+v", d)
	}
	d = findDenial(t, res, work, "create")
	if d.Program != "touch" || d.Grant != `add "$WORK_DIR/**" to permissions.fs.write` {
		t.Errorf("create in the work dir: %+v", d)
	}
	d = findDenial(t, res, "/usr/bin/id", "exec")
	if d.Grant != `add "id" to permissions.exec` || !slices.Contains(d.Rights, "fs.execute") {
		t.Errorf("exec denial: %+v", d)
	}
	if slices.ContainsFunc(res.DenialsUnobservable, func(u sandbox.Unobservable) bool { return u.Kind == "landlock" }) {
		t.Errorf("landlock denials said unobservable with audit on: %+v", res.DenialsUnobservable)
	}
	for _, want := range []string{
		"corral: the sandbox refused",
		"  read " + secret + " (cat): add \"" + secret + "\" to permissions.fs.read",
		"  create " + out + " (sh): add \"" + out + "/**\" to permissions.fs.write",
		"  exec /usr/bin/id (sh): add \"id\" to permissions.exec",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestFSDenialsNamespacesTier: in the namespaces tier a program outside
// the exec list is a Landlock denial, reported; a path outside the grants
// is absent from the new root and a write under a read-only bind fails
// before Landlock, which the report says it cannot see.
func TestFSDenialsNamespacesTier(t *testing.T) {
	requireSandbox(t)
	namespacesOnly(t, "the new root")
	withAudit(t)
	_, secret, _ := outsideGrants(t)
	work := newDir(t, asSelf, "work")
	skill := writeSkill(t, t.TempDir(), "den", "  exec: [sh, cat]\n")
	r, res := denialRun(t, asSelf, work, []string{"--tier", "namespaces", "--skill", skill}, fmt.Sprintf("cat %s\n/usr/bin/id\necho x > /usr/x\n", secret))
	d := findDenial(t, res, "/usr/bin/id", "exec")
	if d.Program != "sh" || d.Grant != `add "id" to permissions.exec` {
		t.Errorf("exec denial: %+v", d)
	}
	if !strings.Contains(r.stderr, "exec /usr/bin/id (sh): add \"id\" to permissions.exec") {
		t.Errorf("stderr lacks the exec denial:\n%s", r.stderr)
	}
	var kinds []string
	for _, u := range res.DenialsUnobservable {
		kinds = append(kinds, u.Kind)
		if u.Reason == "" {
			t.Errorf("%s unobservable without a reason", u.Kind)
		}
	}
	if !slices.Contains(kinds, "absent-paths") || !slices.Contains(kinds, "read-only-mounts") || slices.Contains(kinds, "landlock") {
		t.Errorf("unobservable kinds %v, want absent-paths and read-only-mounts", kinds)
	}
	for _, d := range res.FSDenials {
		if d.Path == secret {
			t.Errorf("an absent path reported: %+v", d)
		}
	}
}

// TestFSDenialsPreflight: a program the preflight refuses (126, 127) is
// in the list too, with its grant.
func TestFSDenialsPreflight(t *testing.T) {
	requireSandbox(t)
	work := newDir(t, asSelf, "work")
	skill := writeSkill(t, t.TempDir(), "den", "  exec: [cat]\n")
	report := filepath.Join(t.TempDir(), "report.json")
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", skill, "--report", report, "--", "id"}, dir: work, keepRefusal: true})
	if r.code != 126 {
		t.Fatalf("want 126: %s", r)
	}
	res := checkReport(t, readFile(t, report))
	d := findDenial(t, res, "id", "exec")
	if d.Source != "preflight" || d.Grant != `add "id" to permissions.exec` {
		t.Errorf("preflight denial: %+v", d)
	}
}

// TestFSDenialsConcurrent: two runs at once each see their own denials
// only (attributed by the Landlock domain each run's init creates).
func TestFSDenialsConcurrent(t *testing.T) {
	requireSandbox(t)
	withAudit(t)
	dir := t.TempDir()
	var scripts [2]string
	for i, side := range []string{"a", "b"} {
		for j := range 30 {
			p := filepath.Join(dir, fmt.Sprintf("%s%02d", side, j))
			writeFile(t, p, "x", 0o644)
			scripts[i] += "cat " + p + " 2>/dev/null\n"
		}
	}
	var wg sync.WaitGroup
	var reports [2]corral.Result
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := newDir(t, asSelf, fmt.Sprintf("work%d", i))
			_, reports[i] = denialRun(t, asSelf, work, []string{"--tier", "landlock"}, scripts[i])
		}()
	}
	wg.Wait()
	for i, side := range []string{"a", "b"} {
		n := 0
		for _, d := range reports[i].FSDenials {
			if filepath.Dir(d.Path) != dir {
				continue
			}
			if !strings.HasPrefix(filepath.Base(d.Path), side) {
				t.Errorf("run %s reports the other run's %s", side, d.Path)
			}
			n++
		}
		if n != 30 {
			t.Errorf("run %s reports %d of its 30 denials", side, n)
		}
	}
}

// TestFSDenialsBounded: 1005 denied paths: the report keeps 1000 and
// counts the rest; the stderr summary is 20 lines and a count; --quiet
// drops it.
func TestFSDenialsBounded(t *testing.T) {
	requireSandbox(t)
	withAudit(t)
	dir := t.TempDir()
	for j := range 1005 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%04d", j)), "x", 0o644)
	}
	work := newDir(t, asSelf, "work")
	script := "cat"
	for j := range 1005 {
		script += fmt.Sprintf(" %s/f%04d", dir, j)
	}
	script += " 2>/dev/null\n"
	r, res := denialRun(t, asSelf, work, []string{"--tier", "landlock"}, script)
	ours := 0
	for _, d := range res.FSDenials {
		if filepath.Dir(d.Path) == dir {
			ours++
		}
	}
	if len(res.FSDenials) != 1000 || ours != 1000 || res.FSDenialsMore < 5 || res.FSDenialsLost {
		t.Errorf("report: %d denials (%d of the files), %d more, lost %v; want 1000 and >= 5 more", len(res.FSDenials), ours, res.FSDenialsMore, res.FSDenialsLost)
	}
	lines := strings.Count(r.stderr, "\n  read "+dir)
	if lines != 20 || !strings.Contains(r.stderr, "more (the report, --report, lists up to 1000)") || len(r.stderr) > 8000 {
		t.Errorf("summary: %d lines of the files, %d bytes:\n%s", lines, len(r.stderr), r.stderr)
	}
	r, _ = denialRun(t, asSelf, work, []string{"--tier", "landlock", "--quiet"}, script)
	if r.stderr != "" {
		t.Errorf("--quiet printed:\n%s", r.stderr)
	}
}

// TestFSDenialsEscapes: a denied path holding terminal escapes is quoted
// on stderr, and kept exact in the report.
func TestFSDenialsEscapes(t *testing.T) {
	requireSandbox(t)
	withAudit(t)
	dir := t.TempDir()
	evil := filepath.Join(dir, "evil\x1b[2J\x1b]0;owned\a\u202ename")
	writeFile(t, evil, "x", 0o644)
	work := newDir(t, asSelf, "work")
	r, res := denialRun(t, asSelf, work, []string{"--tier", "landlock"}, "cat '"+evil+"' 2>/dev/null\n")
	findDenial(t, res, evil, "read")
	if strings.ContainsAny(r.stderr, "\x1b\a\u202e") {
		t.Errorf("raw escapes on stderr: %q", r.stderr)
	}
	if !strings.Contains(r.stderr, `evil\x1b[2J\x1b]0;owned\a\u202ename`) {
		t.Errorf("stderr does not quote the path: %q", r.stderr)
	}
}

// TestFSDenialsUnobservable: where corral cannot read the audit records
// (audit disabled, an ordinary user), the report says so and why.
func TestFSDenialsUnobservable(t *testing.T) {
	requireSandbox(t)
	requireKernel(t, landlockABI >= 7, fmt.Sprintf("Landlock ABI %d < 7: no audit records of its denials", landlockABI))
	reason := func(res corral.Result) string {
		for _, u := range res.DenialsUnobservable {
			if u.Kind == "landlock" {
				return u.Reason
			}
		}
		return ""
	}
	t.Run("user", func(t *testing.T) {
		if !isRoot {
			t.Skip("needs root to run as another user")
		}
		withAudit(t)
		work := newDir(t, asNobody, "work")
		_, res := denialRun(t, asNobody, work, []string{"--tier", "landlock"}, "cat /etc/shadow\n")
		if got := reason(res); !strings.Contains(got, "needs root") {
			t.Errorf("unprivileged: reason %q", got)
		}
		if len(res.FSDenials) != 0 {
			t.Errorf("an ordinary user's run reports %+v", res.FSDenials)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		if !isRoot {
			t.Skip("reading audit's status needs root")
		}
		auditMu.Lock()
		was, err := auditStatus(nil)
		busy := auditUsers > 0
		auditMu.Unlock()
		if err != nil || was.enabled != 0 || busy {
			t.Skipf("audit is enabled on this host (or by another test): %v", err)
		}
		work := newDir(t, asSelf, "work")
		_, res := denialRun(t, asSelf, work, []string{"--tier", "landlock"}, "cat /etc/shadow\n")
		if got := reason(res); !strings.Contains(got, "audit is disabled") {
			t.Errorf("audit off: reason %q", got)
		}
	})
}
