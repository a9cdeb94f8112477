//go:build linux

package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cgroupsOf returns the memory and pids cgroup paths of a host process
// (on a hybrid host, the v1 hierarchies' paths win over the v2 one).
func cgroupsOf(t *testing.T, pid int) (memory, pids string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch parts[1] {
		case "": // cgroup v2: one path for every controller
			if parts[0] == "0" && memory == "" && pids == "" {
				memory, pids = parts[2], parts[2]
			}
		case "memory":
			memory = parts[2]
		case "pids":
			pids = parts[2]
		}
	}
	return memory, pids
}

// cgroupDirs are the folders of a run's cgroup, from its memory and pids
// paths (one folder on cgroup v2, named by the memory path).
func cgroupDirs(memory, pids string) []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{filepath.Join("/sys/fs/cgroup", memory)}
	}
	return []string{filepath.Join("/sys/fs/cgroup/memory", memory), filepath.Join("/sys/fs/cgroup/pids", pids)}
}

// TestLimitTimeoutLeavesNothing runs past --timeout with background jobs,
// double-forked setsid children and a daemon: corral exits 124 soon after
// the timeout and none of them survives.
func TestLimitTimeoutLeavesNothing(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "resources", "outlive --timeout by double-forking")
		f := newFS(t, u)
		marker := token("CORRALTIMEOUT")
		writeFile(t, filepath.Join(f.work, "attack.sh"), leftoverScript(marker)+"exec ./probe sleep "+marker+"-fg\n", 0o644)
		own(t, u, filepath.Join(f.work, "attack.sh"))
		args := []string{"exec", "--work-dir", f.work, "--timeout", "2s", "--kill-grace", "1s"}
		r := u.run(t, runOpts{args: append(args, "--", "sh", "attack.sh"), dir: f.work})
		if r.code != 124 || !strings.Contains(r.stderr, "timed out after 2s") {
			t.Errorf("exit %d, want 124 and \"timed out after 2s\":\n%s", r.code, r)
		}
		if r.wall > 20*time.Second {
			t.Errorf("took %v for a 2s timeout and 1s grace", r.wall)
		}
		noSurvivors(t, marker)
	})
}

// TestLimitTermIgnoredKilled ignores SIGTERM at the timeout: the grace
// period ends with SIGKILL.
func TestLimitTermIgnoredKilled(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	attack(t, "resources", "ignore SIGTERM at the timeout")
	work := newDir(t, asSelf, "work")
	marker := token("CORRALTERM")
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--timeout", "1s", "--kill-grace", "1s", "--",
		"sh", "-c", "trap '' TERM; while :; do sleep 0.1; done # " + marker}, dir: work})
	if r.code != 124 || r.wall > 15*time.Second {
		t.Errorf("exit %d after %v, want 124 within about 2s:\n%s", r.code, r.wall, r)
	}
	noSurvivors(t, marker)
}

// TestLimitForkBomb runs a fork bomb under --pids: it stops at the cap,
// the machine stays responsive, and nothing is left.
func TestLimitForkBomb(t *testing.T) {
	t.Parallel()
	if !isRoot {
		t.Skip("pids limits need a cgroup: root only here")
	}
	requireSandbox(t)
	attack(t, "resources", "fork bomb past --pids")
	work := newDir(t, asSelf, "work")
	marker := token("CORRALBOMB")
	start := time.Now()
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--pids", "64", "--timeout", "4s", "--kill-grace", "1s", "--",
		"sh", "-c", "b() { b | b & }; b; sleep 3 # " + marker}, dir: work})
	if !strings.Contains(r.stderr, "Cannot fork") || r.wall > 30*time.Second {
		t.Errorf("fork bomb: want it stopped at the cap (\"Cannot fork\"); exit %d after %v:\n%s", r.code, r.wall, r)
	}
	// The host kept forking fine meanwhile (this test's own processes ran),
	// and nothing of the bomb is left.
	if time.Since(start) > 40*time.Second {
		t.Errorf("the host was slow: %v", time.Since(start))
	}
	noSurvivors(t, marker)
}

// TestLimitMemoryReport checks the OOM report: exit 137, the limit on
// stderr, oom_killed and the peak in the report.
func TestLimitMemoryReport(t *testing.T) {
	t.Parallel()
	if !isRoot {
		t.Skip("memory limits need a cgroup: root only here")
	}
	requireSandbox(t)
	attack(t, "resources", "allocate past --memory")
	work := newDir(t, asSelf, "work")
	probe := installProbe(t, work)
	report := filepath.Join(newDir(t, asSelf, "report"), "r.json")
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--memory", "48Mi", "--report", report, "--", probe, "alloc", "256"}, dir: work})
	if r.code != 137 || !strings.Contains(r.stderr, "out of memory: limit 48 MiB (--memory)") {
		t.Errorf("exit %d, want 137 and the limit on stderr:\n%s", r.code, r)
	}
	var rep struct {
		OOMKilled bool  `json:"oom_killed"`
		Peak      int64 `json:"peak_memory_bytes"`
		Limits    struct {
			Memory int64 `json:"memory_bytes"`
		} `json:"limits"`
	}
	data, _ := os.ReadFile(report)
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, data)
	}
	// The kernel charges in batches: the recorded peak can pass the cap by
	// a few pages.
	if !rep.OOMKilled || rep.Peak < 40<<20 || rep.Peak > 49<<20 || rep.Limits.Memory != 48<<20 {
		t.Errorf("report: oom_killed %v, peak %d, limit %d", rep.OOMKilled, rep.Peak, rep.Limits.Memory)
	}
}

// TestLimitStaleCgroup SIGKILLs corral: its cgroup stays behind, and the
// next run removes it.
func TestLimitStaleCgroup(t *testing.T) {
	t.Parallel()
	if !isRoot {
		t.Skip("cgroups need root here")
	}
	requireSandbox(t)
	attack(t, "resources", "leave a cgroup behind by SIGKILLing corral")
	f := newFS(t, asSelf)
	marker := token("CORRALSTALE")
	cmd, _ := startCorral(t, asSelf, f.work, "echo READY\nexec ./probe sleep "+marker+"\n")
	var pids []int
	if !waitFor(30*time.Second, func() bool { pids = markedPIDs(marker); return len(pids) > 0 }) {
		t.Fatal("the sandboxed probe did not start")
	}
	memory, pidsPath := cgroupsOf(t, pids[0])
	if !strings.Contains(memory, "/corral/run-") || !strings.Contains(pidsPath, "/corral/run-") {
		t.Fatalf("the command is not in a corral cgroup: memory %q, pids %q", memory, pidsPath)
	}
	dirs := cgroupDirs(memory, pidsPath)
	cmd.Process.Kill()
	cmd.Wait()
	noSurvivors(t, marker)
	r := asSelf.exec(t, f.work, nil, "true")
	if r.code != 0 {
		t.Fatalf("the next run failed:\n%s", r)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("stale cgroup %s is still there after the next run (%v)", d, err)
		}
	}
}

// TestLimitUnprivileged runs without a writable cgroup: the implicit
// default cap degrades with a warning, a cap that was asked for fails
// closed.
func TestLimitUnprivileged(t *testing.T) {
	t.Parallel()
	if !isRoot {
		t.Skip("needs root to switch to the unprivileged user")
	}
	users(t, func(t *testing.T, u user) {
		if !u.unpriv {
			return
		}
		attack(t, "resources", "run uncapped without a cgroup")
		work := newDir(t, u, "work")
		r := u.exec(t, work, nil, "true")
		if r.code != 0 || !strings.Contains(r.stderr, "running without limits") {
			t.Errorf("default caps without a cgroup: exit %d, want 0 and a warning:\n%s", r.code, r)
		}
		r = u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--memory", "64Mi", "--", "true"}, dir: work})
		if r.code != 125 || !strings.Contains(r.stderr, "cannot enforce the memory and process limits") {
			t.Errorf("--memory without a cgroup: exit %d, want 125 and the reason:\n%s", r.code, r)
		}
		sk := limitSkill(t, "pids: 32")
		r = u.exec(t, work, []string{sk}, "true")
		if r.code != 125 {
			t.Errorf("limits.pids without a cgroup: exit %d, want 125:\n%s", r.code, r)
		}
		// Two skills asking for both caps: each is named once.
		skills := newDir(t, asSelf, "skills")
		a := writeSkill(t, skills, "mem-a", "  limits: {memory: 128Mi, pids: 64}\n")
		b := writeSkill(t, skills, "mem-b", "  limits: {memory: 128Mi, pids: 64}\n")
		r = u.exec(t, work, []string{a, b}, "true")
		if r.code != 125 || !strings.Contains(r.stderr, "(skills mem-a, mem-b)") || strings.Count(r.stderr, "mem-a") != 1 {
			t.Errorf("two skills' limits without a cgroup: exit %d, want 125 naming each skill once:\n%s", r.code, r)
		}
	})
}

// TestLimitCgroupRemoved leaves background jobs, double-forked setsid
// children and a daemon behind when the command exits: when corral
// returns, none of them runs and the run's cgroup is gone (PID 1 kills and
// reaps them before it reports, and leaves the cgroup once the command is
// in it, so corral need not wait for PID 1 itself to exit).
func TestLimitCgroupRemoved(t *testing.T) {
	t.Parallel()
	if !isRoot {
		t.Skip("cgroups need root here")
	}
	requireSandbox(t)
	attack(t, "resources", "keep processes in the run's cgroup past corral's exit")
	f := newFS(t, asSelf)
	marker := token("CORRALCGROUP")
	writeFile(t, filepath.Join(f.work, "attack.sh"), leftoverScript(marker)+"sleep 0.2\necho "+attackDone+"\n", 0o644)
	report := filepath.Join(newDir(t, asSelf, "report"), "report.json") // outside the work dir, as corral requires
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--report", report, "--", "sh", "attack.sh"}, dir: f.work})
	if r.code != 0 || !strings.Contains(r.stdout, attackDone) {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r)
	}
	// Checked at once: corral has returned.
	if pids := markedPIDs(marker); len(pids) != 0 {
		t.Errorf("processes of the sandbox still run when corral returns: %v", pids)
	}
	var rep struct {
		Cgroup string `json:"cgroup"`
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil || rep.Cgroup == "" {
		t.Fatalf("the report names no cgroup (%v):\n%s", err, data)
	}
	// The report names the memory cgroup; the pids one has the same name
	// under corral's pids cgroup (this test's, as corral is its child).
	_, ownPids := cgroupsOf(t, os.Getpid())
	dirs := cgroupDirs(rep.Cgroup, filepath.Join(ownPids, "corral", filepath.Base(rep.Cgroup)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Dir(d)); err != nil {
			t.Fatalf("control: the cgroup's parent %s is not there: %v", filepath.Dir(d), err)
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the run's cgroup %s is still there after corral returned (%v)", d, err)
		}
	}
	noSurvivors(t, marker)
}

// TestLimitDefaultTimeoutAndNotation: a run nobody gave a timeout gets
// the default (a hung command would hold its tool call forever), the
// report says so, and the notations Docker, systemd and timeout(1)
// users type are taken: --timeout 1 is one second, --memory 48m 48 MiB,
// and --timeout none removes the default.
func TestLimitDefaultTimeoutAndNotation(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	attack(t, "resources", "hang with no timeout given")
	work := newDir(t, asSelf, "work")
	reports := newDir(t, asSelf, "report")
	limitsOf := func(t *testing.T, args ...string) (res result, timeout time.Duration, from string, memory int64) {
		t.Helper()
		report := filepath.Join(reports, token("r")+".json")
		res = asSelf.run(t, runOpts{args: append([]string{"exec", "--work-dir", work, "--report", report}, args...), dir: work})
		var rep struct {
			Limits struct {
				Timeout time.Duration `json:"timeout_ns"`
				From    string        `json:"timeout_from"`
				Memory  int64         `json:"memory_bytes"`
			} `json:"limits"`
		}
		data, _ := os.ReadFile(report)
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatalf("report: %v\n%s\n%s", err, data, res)
		}
		return res, rep.Limits.Timeout, rep.Limits.From, rep.Limits.Memory
	}
	if r, d, from, _ := limitsOf(t, "--", "true"); r.code != 0 || d != 2*time.Minute || from != "default" {
		t.Errorf("no timeout given: exit %d, timeout %v from %q; want the 2m default:\n%s", r.code, d, from, r)
	}
	if r, d, from, _ := limitsOf(t, "--timeout", "none", "--", "true"); r.code != 0 || d != 0 || from != "--timeout none" {
		t.Errorf("--timeout none: exit %d, timeout %v from %q:\n%s", r.code, d, from, r)
	}
	args := []string{"--timeout", "1", "--kill-grace", "1"}
	if isRoot {
		args = append(args, "--memory", "48m")
	}
	r, d, _, mem := limitsOf(t, append(args, "--", "sleep", "30")...)
	if r.code != 124 || d != time.Second || r.wall > 15*time.Second {
		t.Errorf("--timeout 1: exit %d after %v, timeout %v; want 124 after about a second:\n%s", r.code, r.wall, d, r)
	}
	if isRoot && mem != 48<<20 {
		t.Errorf("--memory 48m: %d bytes, want %d", mem, 48<<20)
	}
}
