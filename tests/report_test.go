//go:build linux

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"corral.dev/corral"
	"corral.dev/corral/internal/jsonschema"
)

// The report (docs/report.md) as a machine interface: written for every
// outcome, flag errors included, conforming to docs/report.schema.json,
// equal to the Go API's Result, and reachable on its own descriptor with
// corral's messages on another, so the command's stdout and stderr stay
// its own.

// reportSchema is docs/report.schema.json, strict: a key the schema does
// not document is an error.
func reportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "report.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jsonschema.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	s.Strict = true
	return s
}

// checkReport fails t unless data is one report that conforms to the
// schema and reads back into a corral.Result that writes the very same
// bytes (the CLI writes nothing but the Result). It returns the Result.
func checkReport(t *testing.T, data string) corral.Result {
	t.Helper()
	var res corral.Result
	if err := json.Unmarshal([]byte(data), &res); err != nil {
		t.Fatalf("the report is not one JSON document: %v\n%q", err, data)
	}
	for _, p := range reportSchema(t).Validate([]byte(data)) {
		t.Errorf("report: %s", p)
	}
	for i, w := range res.Warnings {
		if slices.Contains(res.Warnings[:i], w) {
			t.Errorf("report: warning %q twice", w)
		}
	}
	again, _ := json.MarshalIndent(&res, "", "  ")
	if string(again)+"\n" != data {
		t.Errorf("the report is not a marshalled corral.Result:\n%s\nthe Result writes:\n%s", data, again)
	}
	return res
}

// runFDs runs corral with n files open as descriptors 3, 4, ... and
// returns the result and what each file got.
func runFDs(t *testing.T, u user, o runOpts, n int) (result, []string) {
	t.Helper()
	dir := t.TempDir()
	files := make([]*os.File, n)
	for i := range files {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint("fd", i+3)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	if o.timeout == 0 {
		o.timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cmd := u.command(ctx, o)
	cmd.ExtraFiles = files
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() < 0 {
		t.Fatalf("running corral %q: %v", o.args, err)
	}
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	got := make([]string, n)
	for i, f := range files {
		b, _ := os.ReadFile(f.Name())
		got[i] = string(b)
	}
	return r, got
}

// TestReportOutcomes ends runs at every stage corral has, each with
// --report-fd 3 and --log-fd 4: the report names the stage, the exit
// status corral exited with and, before the command ran its course, the
// error; corral's one line about it is on descriptor 4, and stderr holds
// only what the command wrote.
func TestReportOutcomes(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	work := newDir(t, asSelf, "work")
	skills := newDir(t, asSelf, "skills")
	onlySh := writeSkill(t, skills, "only-sh", "  exec: [sh]\n")
	broken := filepath.Join(skills, "broken")
	writeFile(t, filepath.Join(broken, "SKILL.md"), "---\nname: broken\npermissions: [\n---\n", 0o644)
	// cmd writes to both of its streams and exits with status 3.
	cmd := []string{"sh", "-c", "echo CMD-OUT; echo CMD-ERR >&2; exit 3"}
	cases := []struct {
		name  string
		flags []string // between the report flags and --
		argv  []string // nil: no -- at all
		code  int
		stage corral.Stage
		err   string // in the report's error and the line on fd 4
	}{
		{"the command's own status", nil, cmd, 3, corral.StageCommand, ""},
		{"success", nil, []string{"true"}, 0, corral.StageCommand, ""},
		{"timeout", []string{"--timeout", "300ms", "--kill-grace", "200ms"}, []string{"sleep", "30"}, corral.ExitTimeout, corral.StageCommand, ""},
		{"a bad flag value", []string{"--memory", "12XB"}, cmd, 125, corral.StageFlags, `--memory "12XB"`},
		{"an unknown flag", []string{"--no-such-flag"}, cmd, 125, corral.StageFlags, "unknown flag --no-such-flag"},
		{"no command", nil, []string{}, 125, corral.StageFlags, "no command"},
		{"an audit log corral refuses", []string{"--audit-log", filepath.Join(work, "audit.jsonl")}, cmd, 125, corral.StageFlags, "--audit-log"},
		{"a skill that does not load", []string{"--skill", broken}, cmd, 125, corral.StageSkills, "broken"},
		{"a bad agent policy", []string{"--policy-json", "{nope"}, cmd, 125, corral.StagePolicy, "policy"},
		{"a missing work dir", []string{"--work-dir", filepath.Join(work, "gone")}, cmd, 125, corral.StagePreflight, "not a folder"},
		{"a program the skills do not allow", []string{"--skill", onlySh}, []string{"curl", "http://x.test/"}, 126, corral.StagePreflight, "not permitted"},
		{"a program that is not there", nil, []string{"no-such-program-" + token("x")}, 127, corral.StagePlan, "not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"exec", "--work-dir", work, "--report-fd", "3", "--log-fd", "4"}, c.flags...)
			if c.argv != nil {
				args = append(append(args, "--"), c.argv...)
			}
			r, fds := runFDs(t, asSelf, runOpts{args: args, dir: work}, 2)
			if r.code != c.code {
				t.Errorf("exit %d, want %d:\n%s\n--- fd 4:\n%s", r.code, c.code, r, fds[1])
			}
			res := checkReport(t, fds[0])
			if res.Stage != c.stage || res.ExitCode != r.code || !strings.Contains(res.Error, c.err) || (c.err == "") != (res.Error == "") {
				t.Errorf("report: stage %q, exit %d, error %q; want stage %q, exit %d, error with %q", res.Stage, res.ExitCode, res.Error, c.stage, r.code, c.err)
			}
			if c.argv != nil && strings.Join(res.Argv, " ") != strings.Join(c.argv, " ") {
				t.Errorf("report: argv %q, want %q", res.Argv, c.argv)
			}
			wantErr := ""
			if len(c.argv) > 0 && c.argv[0] == "sh" && c.code == 3 {
				wantErr = "CMD-ERR\n"
			}
			if r.stderr != wantErr {
				t.Errorf("stderr has more than the command's own (%q):\n%s", wantErr, r)
			}
			if strings.Contains(r.stdout, "{") {
				t.Errorf("the report went to stdout:\n%s", r)
			}
			if c.err != "" {
				if line := strings.TrimSuffix(fds[1], "\n"); !strings.HasPrefix(line, "corral exec: ") || strings.Contains(line, "\n") || !strings.Contains(line, c.err) {
					t.Errorf("want one line on fd 4 saying %q, got %q", c.err, fds[1])
				}
			}
		})
	}
}

// TestReportFlagErrorFile: a flag error gets its --report file wherever
// --report stands, before the bad flag or after it.
func TestReportFlagErrorFile(t *testing.T) {
	t.Parallel()
	work := newDir(t, asSelf, "work")
	logs := newDir(t, asSelf, "logs")
	for i, flags := range [][]string{
		{"--report", filepath.Join(logs, "0.json"), "--pids", "many"},
		{"--pids", "many", "--report", filepath.Join(logs, "1.json")},
		{"--frobnicate=x", "--report=" + filepath.Join(logs, "2.json")},
	} {
		args := append(append([]string{"exec", "--work-dir", work}, flags...), "--", "touch", "ran")
		r := asSelf.run(t, runOpts{args: args, dir: work})
		if r.code != 125 {
			t.Errorf("%q: exit %d, want 125:\n%s", flags, r.code, r)
		}
		file := filepath.Join(logs, fmt.Sprint(i, ".json"))
		if !exists(file) {
			t.Errorf("%q: no report", flags)
			continue
		}
		res := checkReport(t, readFile(t, file))
		if res.Stage != corral.StageFlags || res.ExitCode != 125 || res.Error == "" || strings.Join(res.Argv, " ") != "touch ran" {
			t.Errorf("%q: report %+v, want stage flags, exit 125, the error and the command", flags, res)
		}
		if exists(filepath.Join(work, "ran")) {
			t.Fatalf("the command ran despite the flag error")
		}
	}
	// An unknown flag before a command written without --: the
	// command's own --report is its argument, never corral's, so the
	// file it names is not written (as root, anything outside the
	// write roots could be).
	victim := filepath.Join(logs, "victim.txt")
	writeFile(t, victim, "the user's\n", 0o644)
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--no-network", "cat", "--report", victim}, dir: work})
	if r.code != 125 || readFile(t, victim) != "the user's\n" {
		t.Errorf("an unknown flag, then cat --report FILE: exit %d, the file now %q; want 125 and the file untouched:\n%s", r.code, readFile(t, victim), r)
	}
}

// TestReportBadDescriptors: --report-fd and --log-fd refuse what is not
// a descriptor the caller opened for writing, 3 or more, with exit 125
// and one line on stderr; the report still goes where it can.
func TestReportBadDescriptors(t *testing.T) {
	t.Parallel()
	work := newDir(t, asSelf, "work")
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--report-fd", "1"}, "--report - writes the report to stdout"},
		{[]string{"--report-fd", "2"}, "0, 1 and 2"},
		{[]string{"--report-fd", "9"}, "not an open descriptor"},
		{[]string{"--log-fd", "2", "--report-fd", "3"}, "0, 1 and 2"},
		{[]string{"--log-fd", "9", "--report-fd", "3"}, "not an open descriptor"},
		{[]string{"--log-fd", "3", "--report-fd", "3"}, "both 3"},
		{[]string{"--log-fd", "4", "--report-fd", "3"}, "reading only"},
	} {
		args := append(append([]string{"exec", "--work-dir", work}, c.flags...), "--", "touch", "ran")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := asSelf.command(ctx, runOpts{args: args, dir: work})
		report := filepath.Join(t.TempDir(), "r.json")
		w, _ := os.Create(report)
		ro, _ := os.Open(report)
		cmd.ExtraFiles = []*os.File{w, ro}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		cancel()
		w.Close()
		ro.Close()
		code := cmd.ProcessState.ExitCode()
		line := strings.TrimSuffix(stderr.String(), "\n")
		if code != 125 || strings.Contains(line, "\n") || !strings.Contains(line, c.want) {
			t.Errorf("%q: exit %d, want 125 and one line saying %q:\n%s", c.flags, code, c.want, stderr.String())
		}
		if exists(filepath.Join(work, "ran")) {
			t.Fatalf("%q: the command ran", c.flags)
		}
		if c.flags[0] == "--log-fd" {
			res := checkReport(t, readFile(t, report))
			if res.Stage != corral.StageFlags || !strings.Contains(res.Error, c.want) {
				t.Errorf("%q: report stage %q error %q", c.flags, res.Stage, res.Error)
			}
		}
	}
}

// TestReportStdout: --report - writes the report to stdout, after the
// command's output, and makes no file named -.
func TestReportStdout(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	work := newDir(t, asSelf, "work")
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--report", "-", "--", "echo", "CMD-OUT"}, dir: work})
	out, report, ok := strings.Cut(r.stdout, "\n")
	if r.code != 0 || !ok || out != "CMD-OUT" {
		t.Fatalf("want the command's line, then the report:\n%s", r)
	}
	if res := checkReport(t, report); res.Stage != corral.StageCommand {
		t.Errorf("stage %q", res.Stage)
	}
	if exists(filepath.Join(work, "-")) {
		t.Errorf("--report - made a file named -")
	}
}

// TestReportDescriptorsNotInherited: the command cannot write into the
// report's or the messages' descriptor: it would forge corral's word.
func TestReportDescriptorsNotInherited(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	users(t, func(t *testing.T, u user) {
		attack(t, "outputs", "forge the report through an inherited --report-fd")
		work := newDir(t, u, "work")
		// (The report has the script in its argv: the words written are
		// put together by the shell.)
		args := []string{"exec", "--work-dir", work, "--report-fd", "3", "--log-fd", "4", "--", "sh", "-c",
			`f=FOR; echo "{\"${f}GED\":1}" >&3; echo "corral exec: ${f}GED" >&4; (echo "${f}GED" >&5; echo "${f}GED" >&6; echo "${f}GED" >&7; echo "${f}GED" >&8) 2>/dev/null; true`}
		r, fds := runFDs(t, u, runOpts{args: args, dir: work}, 2)
		if r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r)
		}
		if strings.Contains(fds[0], "FORGED") || strings.Contains(fds[1], "FORGED") {
			t.Errorf("the command wrote into corral's descriptors:\n--- fd 3:\n%s\n--- fd 4:\n%s", fds[0], fds[1])
		}
		checkReport(t, fds[0])
	})
}

// TestReportQuiet: --quiet drops corral's warnings and notices (the
// landlock tier's, the timeout's) but keeps the one line saying why it
// stopped a run; the report has the warnings.
func TestReportQuiet(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	work := newDir(t, asSelf, "work")
	loud := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--tier", "landlock", "--timeout", "300ms", "--kill-grace", "200ms", "--", "sleep", "30"}, dir: work, keepRefusal: true})
	if loud.code != corral.ExitTimeout || !strings.Contains(loud.stderr, "landlock tier") || !strings.Contains(loud.stderr, "timed out") {
		t.Skipf("no landlock tier warning and timeout notice to silence here:\n%s", loud)
	}
	r, fds := runFDs(t, asSelf, runOpts{args: []string{"exec", "--work-dir", work, "--quiet", "--report-fd", "3", "--tier", "landlock", "--timeout", "300ms", "--kill-grace", "200ms", "--", "sleep", "30"}, dir: work}, 1)
	if r.code != corral.ExitTimeout || r.stderr != "" {
		t.Errorf("--quiet: want exit 124 and nothing on stderr:\n%s", r)
	}
	if res := checkReport(t, fds[0]); !res.TimedOut || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "landlock tier") }) {
		t.Errorf("the report lost what --quiet did not print: timed out %v, warnings %q", res.TimedOut, res.Warnings)
	}
	r = asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--quiet", "--tier", "landlock", "--", "no-such-program-" + token("x")}, dir: work})
	if line := strings.TrimSuffix(r.stderr, "\n"); r.code != 127 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "corral exec: ") {
		t.Errorf("--quiet: want exit 127 and the one line saying why:\n%s", r)
	}
}

// TestReportMatchesAPI: the CLI's report and the Result corral.Run
// returns for the same run have the same keys, nested too, and the same
// stage, status, error and denial.
func TestReportMatchesAPI(t *testing.T) {
	t.Parallel()
	work := newDir(t, asSelf, "work")
	skill := writeSkill(t, newDir(t, asSelf, "skills"), "only-sh", "  exec: [sh]\n")
	argv := []string{"curl", "http://x.test/"}
	r, fds := runFDs(t, asSelf, runOpts{args: append([]string{"exec", "--work-dir", work, "--skill", skill, "--report-fd", "3", "--"}, argv...), dir: work}, 1)
	if r.code != 126 {
		t.Fatalf("want exit 126:\n%s", r)
	}
	cli := checkReport(t, fds[0])
	skills, err := corral.LoadSkills([]string{skill}, corral.Dirs{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	api, err := corral.Run(context.Background(), corral.Spec{Skills: skills, Argv: argv})
	if err == nil {
		t.Fatal("corral.Run ran a command the skill does not allow")
	}
	apiJSON, _ := json.Marshal(api)
	if a, c := keyPaths(t, apiJSON), keyPaths(t, []byte(fds[0])); a != c {
		t.Errorf("the API's Result has keys\n%s\nthe CLI's report\n%s", a, c)
	}
	if api.Stage != cli.Stage || api.ExitCode != cli.ExitCode || api.Error != cli.Error || len(api.Denials) != 1 || len(cli.Denials) != 1 || api.Denials[0].Reason != cli.Denials[0].Reason {
		t.Errorf("API %+v\nCLI %+v", api, cli)
	}
}

// keyPaths lists every key path of a JSON document, lists' elements as
// [], sorted, one a line.
func keyPaths(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				seen[at+"."+k] = true
				walk(x, at+"."+k)
			}
		case []any:
			for _, x := range v {
				walk(x, at+"[]")
			}
		}
	}
	walk(v, "")
	var paths []string
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return strings.Join(paths, "\n")
}

// TestMessagesSurviveNonblock: the command sets O_NONBLOCK on the stderr
// it shares with corral and fills the pipe, so that corral's own line
// (here the timeout notice) would fail with EAGAIN and be lost while the
// reader is slow: corral clears the flag and waits for room instead.
func TestMessagesSurviveNonblock(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	attack(t, "outputs", "drop corral's stderr lines with O_NONBLOCK on a full pipe")
	work := newDir(t, asSelf, "work")
	script := `import fcntl, os, time
fl = fcntl.fcntl(2, fcntl.F_GETFL)
fcntl.fcntl(2, fcntl.F_SETFL, fl | os.O_NONBLOCK)
try:
    while True:
        os.write(2, b"x" * 4096)
except BlockingIOError:
    pass
time.sleep(30)
`
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(corralBin, "exec", "--work-dir", work, "--timeout", "1", "--kill-grace", "1", "--", "python3", "-c", script)
	cmd.Dir, cmd.Env, cmd.Stderr = work, defaultEnv(), w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got := make(chan []byte)
	go func() {
		time.Sleep(3 * time.Second) // a slow reader: corral's line finds the pipe full
		data, _ := io.ReadAll(r)
		got <- data
	}()
	cmd.Wait()
	data := <-got
	if code := cmd.ProcessState.ExitCode(); code != 124 || !bytes.Contains(data, []byte("corral: timed out after 1s")) {
		t.Errorf("exit %d; corral's timeout line is missing from stderr (%d bytes, ends %q)", code, len(data), data[max(0, len(data)-200):])
	}
}

// TestReportOutputBytes: the report says how many bytes the command wrote
// to its standard output and error, so a runtime can tell the model its
// output was cut: through pipes (copied on through corral's own, a pipe
// still, with the bytes moved in the kernel), to files, and through one pipe given as both (2>&1), where each
// count is the total and the two streams keep their order.
func TestReportOutputBytes(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		logs := newDir(t, u, "logs")
		script := `head -c 1000000 /dev/zero; printf 'e1\n' >&2; printf 'o1\n'; printf 'e2\n' >&2`
		run := func(name string, stdout, stderr func() (*os.File, error)) corral.Result {
			t.Helper()
			report := filepath.Join(logs, name+".json")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := u.command(ctx, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--report", report, "--", "sh", "-c", script}, dir: work})
			var err error
			if cmd.Stdout, err = stdout(); err != nil {
				t.Fatal(err)
			}
			if cmd.Stderr, err = stderr(); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return checkReport(t, readFile(t, report))
		}
		count := func(p *int64) int64 {
			if p == nil {
				return -1
			}
			return *p
		}
		// Pipes: the exec package copies from them into the buffers.
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		report := filepath.Join(logs, "buffers.json")
		cmd := u.command(ctx, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--report", report, "--", "sh", "-c", script}, dir: work})
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		res := checkReport(t, readFile(t, report))
		if count(res.StdoutBytes) != 1000003 || count(res.StderrBytes) != 6 || out.Len() != 1000003 || errb.String() != "e1\ne2\n" {
			t.Errorf("pipes: report %d and %d bytes, got %d and %q; want 1000003 and 6", count(res.StdoutBytes), count(res.StderrBytes), out.Len(), errb.String())
		}
		// Files, one of them appending.
		outFile, errFile := filepath.Join(logs, "out.txt"), filepath.Join(logs, "err.txt")
		writeFile(t, errFile, "before\n", 0o644)
		own(t, u, errFile)
		res = run("files", func() (*os.File, error) { return os.Create(outFile) },
			func() (*os.File, error) { return os.OpenFile(errFile, os.O_WRONLY|os.O_APPEND, 0) })
		if count(res.StdoutBytes) != 1000003 || count(res.StderrBytes) != 6 {
			t.Errorf("files: report %d and %d bytes, want 1000003 and 6", count(res.StdoutBytes), count(res.StderrBytes))
		}
		// One pipe as both: the order holds, and each count is the total.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte)
		go func() { data, _ := io.ReadAll(r); got <- data }()
		res = run("shared", func() (*os.File, error) { return w, nil }, func() (*os.File, error) { return w, nil })
		w.Close()
		data := <-got
		if want := strings.Repeat("\x00", 1000000) + "e1\no1\ne2\n"; !strings.HasPrefix(string(data), want) {
			t.Errorf("one pipe as both: the streams' order changed: ends %q", data[max(0, len(data)-20):])
		}
		if count(res.StdoutBytes) != int64(len(data)) || count(res.StderrBytes) != int64(len(data)) {
			t.Errorf("one pipe as both: report %d and %d bytes, want %d each", count(res.StdoutBytes), count(res.StderrBytes), len(data))
		}
	})
}
