//go:build linux

package tests

// The ask channel (--ask-fd; docs/ask.md), through the real binary: a host
// no rule lists is put to the caller, and only the caller's answer over
// its own socket lets it through; hard-denied hosts are never asked about;
// an agent-policy confirm in the preflight is asked too; nobody answering
// (timeout, EOF, garbage) is a denial; the sandboxed command cannot reach
// the channel.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// askServer is a 127.0.0.1 HTTP origin counting the requests it gets.
type askServer struct {
	port int
	hits atomic.Int32
}

func newAskServer(t *testing.T) *askServer {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &askServer{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.hits.Add(1)
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nOK\n")
			}()
		}
	}()
	return s
}

// askQuestion is a question as the tests read it.
type askQuestion struct {
	V         int               `json:"v"`
	Type      string            `json:"type"`
	ID        string            `json:"id"`
	Kind      string            `json:"kind"`
	Host      string            `json:"host"`
	Port      int               `json:"port"`
	Method    string            `json:"method"`
	URL       string            `json:"url"`
	Command   string            `json:"command"`
	Skills    []string          `json:"skills"`
	Program   string            `json:"program"`
	Reason    string            `json:"reason"`
	Grants    map[string]string `json:"grants"`
	TimeoutMS int64             `json:"timeout_ms"`
}

// caller is the test's end of the ask channel: answer says what to reply
// to the n-th question (0-based): an answer word, "" for no answer,
// "close" to close the channel, anything starting with "raw:" sent as is.
type caller struct {
	mu        sync.Mutex
	questions []askQuestion
	bad       []string // lines that were not one whole question
}

// runAsk runs corral exec with args (after "exec") and the ask channel on
// descriptor 3, answering with answer.
func runAsk(t *testing.T, work string, args []string, answer func(n int, q askQuestion) string) (result, *caller) {
	t.Helper()
	return runAskAs(t, asSelf, work, args, answer)
}

// runAskAs is runAsk as user u.
func runAskAs(t *testing.T, u user, work string, args []string, answer func(n int, q askQuestion) string) (result, *caller) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "caller"), os.NewFile(uintptr(fds[1]), "corral")
	defer mine.Close()
	c := &caller{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReader(mine)
		for n := 0; ; n++ {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			var q askQuestion
			if err := json.Unmarshal([]byte(line), &q); err != nil || q.Type != "question" {
				c.mu.Lock()
				c.bad = append(c.bad, line)
				c.mu.Unlock()
				continue
			}
			c.mu.Lock()
			c.questions = append(c.questions, q)
			c.mu.Unlock()
			switch a := answer(n, q); {
			case a == "":
			case a == "close":
				mine.Close()
				return
			case strings.HasPrefix(a, "raw:"):
				io.WriteString(mine, a[4:]+"\n")
			default:
				fmt.Fprintf(mine, `{"v":1,"id":%q,"answer":%q,"by":"the test"}`+"\n", q.ID, a)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	o := runOpts{args: append([]string{"exec", "--work-dir", work, "--ask-fd", "3"}, args...), dir: work}
	cmd := u.command(ctx, o)
	cmd.ExtraFiles = []*os.File{theirs}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	theirs.Close()
	r := result{stdout: stdout.String(), stderr: stderr.String(), wall: time.Since(start), code: cmd.ProcessState.ExitCode()}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("running corral: %v", err)
	}
	mine.SetReadDeadline(time.Now())
	<-done
	if tierRefusal(r) {
		t.Skipf("held: the landlock tier refuses this run: %s", r.stderr)
	}
	return r, c
}

// askSetup is a work dir and a skill allowing allowed.test:PORT (and the
// loopback port the pinned names reach), curl and sh.
func askSetup(t *testing.T) (work, skill string, s *askServer) {
	requireSandbox(t)
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("needs /usr/bin/curl")
	}
	s = newAskServer(t)
	work = newDir(t, asSelf, "work")
	skill = writeSkill(t, newDir(t, asSelf, "skills"), "fetcher", fmt.Sprintf(
		"  fs:\n    write: [\"$WORK_DIR/**\"]\n  network:\n    allow: [\"allowed.test:%d\", \"preset:loopback:%d\"]\n", s.port, s.port))
	return work, skill, s
}

// curls is a script fetching each URL once, printing CODE <status>.
func curls(urls ...string) string {
	var b strings.Builder
	for _, u := range urls {
		// (--noproxy '': NO_PROXY would send 127.0.0.1 past the proxy.)
		fmt.Fprintf(&b, "curl --noproxy '' -s -o /dev/null -w 'CODE %%{http_code}\\n' %s\n", u)
	}
	return b.String()
}

func codes(out string) []string {
	var c []string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "CODE "); ok {
			c = append(c, v)
		}
	}
	return c
}

func TestAskNetwork(t *testing.T) {
	t.Parallel()
	work, skill, s := askSetup(t)
	other := fmt.Sprintf("http://other.test:%d/x", s.port)
	pins := []string{"--resolve", "other.test=127.0.0.1", "--resolve", "allowed.test=127.0.0.1"}
	report := func(t *testing.T) (string, func() map[string]any) {
		p := filepath.Join(newDir(t, asSelf, "out"), "report.json")
		return p, func() map[string]any {
			var m map[string]any
			if err := json.Unmarshal([]byte(readFile(t, p)), &m); err != nil {
				t.Fatalf("report: %v", err)
			}
			return m
		}
	}
	for _, tc := range []struct {
		name    string
		answers []string // by question
		fetches int
		want    []string // the status of each fetch
		asked   int
		hits    int
		says    string // in the report's reason of the refusal
		extra   []string
		records int // questions in the report: also those a broken channel denied unsent
	}{
		{"allow-once", []string{"allow-once", "deny"}, 2, []string{"200", "403"}, 2, 1, "answered deny", nil, 2},
		{"allow-run", []string{"allow-run"}, 3, []string{"200", "200", "200"}, 1, 3, "", nil, 1},
		{"deny", []string{"deny"}, 1, []string{"403"}, 1, 0, "answered deny (by the test)", nil, 1},
		{"timeout", []string{""}, 1, []string{"403"}, 1, 0, "no answer within 1s", []string{"--ask-timeout", "1s"}, 1},
		{"eof", []string{"close"}, 2, []string{"403", "403"}, 1, 0, "the caller closed the ask channel", nil, 2},
		{"garbage", []string{"raw:yes please"}, 2, []string{"403", "403"}, 1, 0, "not an answer", nil, 2},
		{"bad-answer", []string{"raw:{\"v\":1,\"id\":\"q1\",\"answer\":\"allow-forever\"}"}, 1, []string{"403"}, 1, 0, "is none of allow-once", nil, 1},
		{"wrong-version", []string{"raw:{\"v\":2,\"id\":\"q1\",\"answer\":\"allow-once\"}"}, 1, []string{"403"}, 1, 0, "protocol version 1", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.hits.Load()
			urls := make([]string, tc.fetches)
			for i := range urls {
				urls[i] = other
			}
			rep, read := report(t)
			writeFile(t, filepath.Join(work, tc.name+".sh"), curls(urls...), 0o644)
			args := append(append(append([]string{"--skill", skill, "--report", rep}, pins...), tc.extra...), "--", "sh", tc.name+".sh")
			start := time.Now()
			r, c := runAsk(t, work, args, func(n int, q askQuestion) string {
				if n < len(tc.answers) {
					return tc.answers[n]
				}
				return "deny"
			})
			if got := codes(r.stdout); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("statuses %v, want %v\n%s", got, tc.want, r)
			}
			if len(c.questions) != tc.asked || len(c.bad) != 0 {
				t.Errorf("%d questions (%d bad lines), want %d: %+v %q", len(c.questions), len(c.bad), tc.asked, c.questions, c.bad)
			}
			if got := int(s.hits.Load() - before); got != tc.hits {
				t.Errorf("the origin got %d requests, want %d", got, tc.hits)
			}
			q := c.questions[0]
			if q.V != 1 || q.Kind != "network" || q.Host != "other.test" || q.Port != s.port || q.Method != "GET" || q.URL != other ||
				q.ID == "" || q.Program != "sh" || len(q.Skills) != 1 || q.Grants["allow-run"] == "" || !strings.Contains(q.Reason, "not in the network allow list") {
				t.Errorf("question %+v", q)
			}
			m := read()
			asked, _ := m["asked"].([]any)
			if len(asked) != tc.records {
				t.Errorf("report: %d asked, want %d: %v", len(asked), tc.records, asked)
			}
			if tc.says != "" && !strings.Contains(fmt.Sprint(m["proxy_denials"]), tc.says) {
				t.Errorf("report's proxy denials do not say %q: %v", tc.says, m["proxy_denials"])
			}
			if time.Since(start) > 30*time.Second {
				t.Errorf("the run took %v", time.Since(start))
			}
		})
	}
}

// TestAskNeverHardDenied: a deny by category (loopback on another port,
// cloud metadata by IP and by a pinned name, the host's own address) is
// refused without a question; only the unlisted host is asked about.
func TestAskNeverHardDenied(t *testing.T) {
	t.Parallel()
	work, skill, s := askSetup(t)
	urls := []string{
		fmt.Sprintf("http://127.0.0.1:%d/", s.port+1),
		"http://169.254.169.254/latest/meta-data/",
		"http://meta.test/latest/meta-data/",
		fmt.Sprintf("http://loop.test:%d/", s.port+1),
	}
	pins := []string{"--resolve", "meta.test=169.254.169.254", "--resolve", "loop.test=127.0.0.1"}
	if addrs := hostAddrs(t); len(addrs) > 0 && addrs[0].Is4() {
		urls = append(urls, fmt.Sprintf("http://%s:%d/", addrs[0], s.port), fmt.Sprintf("http://own.test:%d/", s.port))
		pins = append(pins, "--resolve", "own.test="+addrs[0].String())
	}
	writeFile(t, filepath.Join(work, "hard.sh"), curls(urls...), 0o644)
	args := append(append([]string{"--skill", skill}, pins...), "--", "sh", "hard.sh")
	r, c := runAsk(t, work, args, func(int, askQuestion) string { return "allow-run" })
	for i, code := range codes(r.stdout) {
		if code != "403" {
			t.Errorf("%s: status %s, want 403", urls[i], code)
		}
	}
	if len(codes(r.stdout)) != len(urls) {
		t.Fatalf("want %d statuses:\n%s", len(urls), r)
	}
	// A name no rule lists is asked about before it is resolved (a
	// lookup could carry data out), so the names pinned to refused
	// addresses are asked about; the answer allows them and their
	// addresses still refuse them. An address is never asked about.
	for _, q := range c.questions {
		if !strings.HasSuffix(q.Host, ".test") {
			t.Errorf("asked about a hard-denied address: %+v", q)
		}
	}
}

// TestAskConcurrent: many connections asking at once get one whole
// question line each, and each its own answer.
func TestAskConcurrent(t *testing.T) {
	t.Parallel()
	work, skill, s := askSetup(t)
	var script strings.Builder
	var pins []string
	const n = 8
	for i := range n {
		fmt.Fprintf(&script, "curl -s -o /dev/null -w 'CODE %%{http_code} h%d\\n' http://h%d.test:%d/ &\n", i, i, s.port)
		pins = append(pins, "--resolve", fmt.Sprintf("h%d.test=127.0.0.1", i))
	}
	script.WriteString("wait\n")
	writeFile(t, filepath.Join(work, "many.sh"), script.String(), 0o644)
	args := append(append([]string{"--skill", skill}, pins...), "--", "sh", "many.sh")
	r, c := runAsk(t, work, args, func(_ int, q askQuestion) string {
		if q.Host == "h3.test" {
			return "deny"
		}
		return "allow-once"
	})
	if len(c.questions) != n || len(c.bad) != 0 {
		t.Fatalf("%d questions, %d bad lines %q, want %d\n%s", len(c.questions), len(c.bad), c.bad, n, r)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "CODE ") {
			want := "CODE 200"
			if strings.HasSuffix(l, " h3") {
				want = "CODE 403"
			}
			if !strings.HasPrefix(l, want) {
				t.Errorf("%s, want %s", l, want)
			}
		}
	}
}

// TestAskRemember: remember writes the policy file, and a later run gets
// the host without a question; a command remembered in the preflight is
// written exactly as `corral policy remember` writes it.
func TestAskRemember(t *testing.T) {
	t.Parallel()
	work, skill, s := askSetup(t)
	dir := newDir(t, asSelf, "policy")
	pol := filepath.Join(dir, "policy.yaml")
	// Commands need confirming; the read-only list (cat, ls...) does not.
	writeFile(t, pol, "version: 1\n", 0o644)
	line := fmt.Sprintf("curl -sf http://other.test:%d/", s.port)
	args := append([]string{"--skill", skill, "--policy", pol, "--resolve", "other.test=127.0.0.1", "--"}, strings.Fields(line)...)
	r, c := runAsk(t, work, args, func(int, askQuestion) string { return "remember" })
	if r.code != 0 || r.stdout != "OK\n" {
		t.Fatalf("want the origin's OK\n%s", r)
	}
	// Two questions: the command line (preflight), then the host.
	if len(c.questions) != 2 || c.questions[0].Kind != "command" || c.questions[0].Command != line || c.questions[1].Kind != "network" {
		t.Fatalf("questions %+v", c.questions)
	}
	text := readFile(t, pol)
	if !strings.Contains(text, "command_glob: "+line) || !strings.Contains(text, fmt.Sprintf("- tool: network\n      command_glob: other.test:%d\n", s.port)) {
		t.Fatalf("policy file after remember:\n%s", text)
	}
	// The same line through corral policy remember writes the same file.
	cli := filepath.Join(dir, "cli.yaml")
	writeFile(t, cli, "version: 1\n", 0o644)
	if out, err := runHost(corralBin, "policy", "remember", "--policy", cli, line); err != nil {
		t.Fatalf("policy remember: %v\n%s", err, out)
	}
	if want := readFile(t, cli); !strings.HasPrefix(text, strings.TrimSuffix(want, "\n")) {
		t.Errorf("remember over the ask channel wrote\n%s\ncorral policy remember writes\n%s", text, want)
	}
	// Next run: nothing to ask; an answerer that denies everything sees
	// no question.
	before := s.hits.Load()
	r, c = runAsk(t, work, args, func(int, askQuestion) string { return "deny" })
	if r.code != 0 || r.stdout != "OK\n" || len(c.questions) != 0 {
		t.Fatalf("after remember: questions %+v\n%s", c.questions, r)
	}
	if s.hits.Load() != before+1 {
		t.Errorf("the origin got %d requests, want 1", s.hits.Load()-before)
	}
}

// TestAskConfirm: an agent-policy confirm in the preflight is asked; the
// answer runs the command or refuses it (126).
func TestAskConfirm(t *testing.T) {
	t.Parallel()
	work, skill, _ := askSetup(t)
	pol := filepath.Join(newDir(t, asSelf, "policy"), "policy.yaml")
	writeFile(t, pol, "version: 1\n", 0o644)
	for _, tc := range []struct {
		answer string
		code   int
		made   bool
		says   string
	}{
		{"allow-once", 0, true, ""},
		{"deny", 126, false, "answered deny (by the test)"},
		{"", 126, false, "no answer within 1s"},
		{"close", 126, false, "closed the ask channel"},
	} {
		t.Run("answer-"+tc.answer, func(t *testing.T) {
			made := filepath.Join(work, "made-"+tc.answer)
			r, c := runAsk(t, work, []string{"--skill", skill, "--policy", pol, "--ask-timeout", "1s", "--", "touch", made},
				func(int, askQuestion) string { return tc.answer })
			if r.code != tc.code || exists(made) != tc.made || !strings.Contains(r.stderr, tc.says) {
				t.Fatalf("exit %d (want %d), made %v (want %v), stderr wants %q\n%s", r.code, tc.code, exists(made), tc.made, tc.says, r)
			}
			if len(c.questions) != 1 || c.questions[0].Kind != "command" || !strings.Contains(c.questions[0].Command, "touch") {
				t.Errorf("questions %+v", c.questions)
			}
			if tc.answer == "" && r.wall > 20*time.Second {
				t.Errorf("an unanswered question held the run %v", r.wall)
			}
		})
	}
	// Without the channel the confirm is refused as ever.
	r := asSelf.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", skill, "--policy", pol, "--", "touch", filepath.Join(work, "x")}, dir: work})
	if r.code != 126 || !strings.Contains(r.stderr, "nobody can answer here") {
		t.Errorf("without --ask-fd: %s", r)
	}
}

// TestAskFDNotInherited: the sandboxed command finds no ask channel: it
// cannot write answers (or fake questions) to it or read the caller's.
func TestAskFDNotInherited(t *testing.T) {
	t.Parallel()
	work, skill, s := askSetup(t)
	script := `for fd in 3 4 5 6 7 8 9; do
  if { echo '{"v":1,"id":"q1","answer":"allow-run"}' >&$fd; } 2>/dev/null; then echo "WROTE $fd"; fi
done
ls /proc/self/fd | tr '\n' ' '; echo
` + curls(fmt.Sprintf("http://other.test:%d/", s.port))
	writeFile(t, filepath.Join(work, "steal.sh"), script, 0o644)
	r, c := runAsk(t, work, []string{"--skill", skill, "--resolve", "other.test=127.0.0.1", "--", "bash", "steal.sh"},
		func(int, askQuestion) string { return "deny" })
	if strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the command wrote to a descriptor it inherited:\n%s", r)
	}
	if got := codes(r.stdout); len(got) != 1 || got[0] != "403" {
		t.Fatalf("statuses %v, want [403]\n%s", got, r)
	}
	if len(c.bad) != 0 || len(c.questions) != 1 {
		t.Errorf("the caller read %q and %d questions", c.bad, len(c.questions))
	}
}

// TestAskBadFlags: a bad --ask-fd is one line and exit 125.
func TestAskBadFlags(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	work := newDir(t, asSelf, "work")
	for _, tc := range []struct{ args, says string }{
		{"--ask-fd 1", "descriptors 0, 1 and 2"},
		{"--ask-fd 9", "not an open descriptor"},
		{"--ask-timeout 5s", "--ask-timeout needs --ask-fd"},
		{"--ask-fd x", "not a descriptor number"},
	} {
		r := asSelf.run(t, runOpts{args: append(append([]string{"exec", "--work-dir", work}, strings.Fields(tc.args)...), "--", "true"), dir: work})
		if r.code != 125 || !strings.Contains(r.stderr, tc.says) || strings.Contains(r.stderr, "panic") {
			t.Errorf("%s: %s", tc.args, r)
		}
	}
}
