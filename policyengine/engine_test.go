package policyengine

import (
	"fmt"
	"strings"
	"testing"
)

func perms(t testing.TB, read, write, network, exec, env []string) *Engine {
	t.Helper()
	p := Permissions{
		Read:     NewEntries("s1", read),
		Write:    NewEntries("s1", write),
		Network:  NewEntries("s1", network),
		Exec:     NewEntries("s1", exec),
		Env:      NewEntries("s1", env),
		Declared: []string{"s1"},
	}
	if exec != nil {
		p.ExecDeclared = []string{"s1"}
	}
	e, err := New(p, Options{WorkDir: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCheckPaths(t *testing.T) {
	e := perms(t, []string{"/ws/data/**", "/ws/*.csv"}, []string{"/ws/out/**"}, nil, nil, nil)
	tests := []struct {
		kind, path string
		want       Action
	}{
		{"read", "/ws/data/a/b.txt", Allow},
		{"read", "data/x", Allow}, // relative to the work dir
		{"read", "/ws/a.csv", Allow},
		{"read", "/ws/sub/a.csv", Deny},
		{"read", "/ws/out/r.txt", Allow}, // write implies read
		{"read", "/ws/data/../secret", Deny},
		{"read", "/ws/data/../../etc/shadow", Deny},
		{"read", "/usr/bin/ls", Allow}, // system baseline
		{"read", "/etc/shadow", Deny},
		{"write", "/ws/out/r.txt", Allow},
		{"write", "/ws/data/x", Deny},
		{"write", "/ws/out/../../etc/passwd", Deny},
		{"write", "/dev/null", Allow},
		{"write", "/tmp/x", Deny}, // the host's: the baseline's /tmp/** is the sandbox's private /tmp
		{"write-inside", "/tmp/x", Allow},
		{"write", "/usr/bin/ls", Deny},
	}
	for _, tt := range tests {
		var d Decision
		switch tt.kind {
		case "read":
			d = e.CheckRead(tt.path)
		case "write-inside":
			d = e.CheckWriteInside(tt.path)
		default:
			d = e.CheckWrite(tt.path)
		}
		if d.Action != tt.want {
			t.Errorf("%s %s = %s (%s), want %s", tt.kind, tt.path, d.Action, d.Reason, tt.want)
		}
		if d.Reason == "" {
			t.Errorf("%s %s: empty reason", tt.kind, tt.path)
		}
	}
}

func TestCheckNetwork(t *testing.T) {
	e := perms(t, nil, nil, []string{"*:443", "api.example.com:8443", "*.example.org:443", "preset:loopback:8080", "10.1.2.3:22"}, nil, nil)
	tests := []struct {
		hostport string
		want     Action
	}{
		{"api.example.com:443", Allow},
		{"API.Example.COM.:443", Allow},
		{"api.example.com:80", Deny},
		{"api.example.com:8443", Allow},
		{"a.b.example.org:443", Allow},
		{"169.254.169.254:443", Deny},
		{"0x7f000001:443", Deny},
		{"127.1:443", Deny},
		{"2130706433:443", Deny},
		{"[::ffff:127.0.0.1]:443", Deny},
		{"localhost:443", Deny},
		{"127.0.0.1:8080", Allow}, // preset:loopback:8080
		{"[::1]:8080", Allow},
		{"10.1.2.3:22", Allow}, // an IP rule grants its own private address
		{"10.1.2.4:22", Deny},
		{"8.8.8.8:443", Allow},
	}
	for _, tt := range tests {
		d, err := e.CheckHostPort(tt.hostport)
		if err != nil {
			t.Errorf("%s: %v", tt.hostport, err)
			continue
		}
		if d.Action != tt.want {
			t.Errorf("net %s = %s (%s), want %s", tt.hostport, d.Action, d.Reason, tt.want)
		}
	}
	for _, bad := range []string{"example.com", "example.com:0", "example.com:70000", ":443", "::1:443"} {
		if _, err := e.CheckHostPort(bad); err == nil {
			t.Errorf("net %q: no error", bad)
		}
	}
	if d := e.CheckURL("http://evil.com@127.0.0.1/"); d.Action != Deny {
		t.Errorf("userinfo trick allowed: %s", d.Reason)
	}
	if d := e.CheckURL("https://api.example.com/x"); d.Action != Allow {
		t.Errorf("https URL denied: %s", d.Reason)
	}
}

func TestCheckExec(t *testing.T) {
	e := perms(t, nil, []string{"/ws/**"}, nil, []string{"curl", "python3", "sh", "/usr/bin/git", "env", "find", "xargs"}, nil)
	tests := []struct {
		line string
		want Action
		says string // part of the reason
	}{
		{"curl -s https://api.a.com | python3 -c pass", Allow, ""},
		{"curl x && rm -rf /", Deny, "rm is not in the exec list of skills s1"},
		{"echo $(id)", Deny, "id is not"},
		{"echo `id`", Deny, "id is not"},
		{"diff <(ls a) <(ls b)", Deny, "diff"},
		{"sh -c 'python3 x; perl y'", Deny, "perl"},
		{"env FOO=1 python3 x", Allow, ""},
		{"env FOO=1 ruby x", Deny, "ruby"},
		{"xargs -n 1 rm < list", Deny, "rm"},
		{"find . -exec rm {} ;", Deny, "rm"},
		{"eval 'id'", Deny, "id"},
		{"git status", Allow, ""},
		{"/usr/bin/curl x", Allow, ""},
		{"/tmp/curl x", Deny, "/tmp/curl"},
		{"./curl x", Deny, "./curl"},
		{"curl x > out.txt", Allow, ""},
		{"curl x > /etc/passwd", Deny, "/etc/passwd"},
		{"curl x 2>/dev/null", Allow, ""},
		{"python3 < /etc/shadow", Deny, "/etc/shadow"},
		{"curl x > $HOME/.bashrc", unreadAct, "shell expansion"},
		{"cd /ws && echo hi", Allow, ""},
		{". ./script", unreadAct, "runs the commands of a file"},
		{"echo 'rm -rf /'", Allow, ""},
		{"curl x\nrm y", Deny, "rm"},
		{"a=1 b=2 python3 x", Allow, ""},
		{"trap 'rm -rf /' EXIT", Deny, "rm"},
		{"trap 'curl x' EXIT; true", Allow, ""},
		{"shopt -s expand_aliases; alias ls='rm -rf /'; ls", Deny, "rm"},
		{"echo hi; pwd", Allow, "the shell runs echo, pwd itself (builtins)"},
		{"curl x; pwd", Allow, "every program (curl) is in the exec list, and the shell runs pwd itself"},
		{"[[ -f <(touch PWNED) ]]", unreadAct, "[[ is a keyword in bash"},
		{"curl \\\n -s x", Allow, ""},
		{"curl \"$\\\n(touch PWNED)\"", Deny, "touch"},
		// bash evaluates names' subscripts and values as arithmetic in
		// these builtins; dash does not.
		{"let 'a[$(touch PWNED)]'", unreadAct, "let evaluates arithmetic"},
		{"x='a[$(touch PWNED)]'; let x", unreadAct, "let evaluates arithmetic"},
		{`x='a[$(touch PWNED)]'; test -v "$x"`, unreadAct, "test"},
		{`x='a[$(touch PWNED)]'; [ -v "$x" ]`, unreadAct, "["},
		{"printf -v 'a[$(touch PWNED)]' x", unreadAct, "printf"},
		{"read 'a[$(touch PWNED)]' <<< x", unreadAct, "read"},
		{"unset 'a[$(touch PWNED)]'", unreadAct, "unset"},
		{"x='a[$(touch PWNED)]'; declare -i y=$x", unreadAct, "declare"},
		{`x='a[$(touch PWNED)]'; wait -p "$x"`, unreadAct, "wait"},
		{"x='a[$(touch PWNED)]'; echo $[x]", unreadAct, "$[...]"},
		{`x='a[$(touch PWNED)]'; echo "$[x]"`, unreadAct, "$[...]"},
		{`echo "${x:-$'\'}'}"`, unreadAct, "$'"},
		{"declare -n r='a[$(touch PWNED)]'; echo $r", unreadAct, "name reference"},
		{"f() { local -n r=$1; }", unreadAct, "name reference"},
		{"declare 'a[x]=1'", unreadAct, "subscript"},
		{"read 'a[x]' <<< 1", unreadAct, "subscript"},
		{"read PS4 <<< '$(touch PWNED)'; set -x; ls", Deny, "ls is not in the exec list"},
		{"export PS4='$(touch PWNED)'", unreadAct, "PS4"},
		{"declare -n r=PS4; r='$(touch PWNED)'", unreadAct, "name reference"},
		{"printf -v PROMPT_COMMAND x", unreadAct, "PROMPT_COMMAND"},
		{"declare -i y; y=x", unreadAct, "integer variable"},
		{"typeset -i y=x", unreadAct, "integer variable"},
		{"x='a[$(touch PWNED)]'; command let x", unreadAct, "let"},
		{"x='a[$(touch PWNED)]'; trap ': $((x))' EXIT", unreadAct, "arithmetic"},
		{"declare -a a=(1 2) b[0]=1; local x=\"$1\"; export y=$x", Allow, ""},
		{`[ -f "$f" ] && printf '%s\n' "$x" "a[$x]"; export PATH="$PATH:/x"; read -r line; test -n "$y"`, Allow, "builtins"},
	}
	for _, tt := range tests {
		d := e.CheckExec(tt.line)
		if verdict(d) != tt.want || !strings.Contains(d.Reason, tt.says) {
			t.Errorf("exec %q = %s (%s), want %s containing %q", tt.line, d.Action, d.Reason, tt.want, tt.says)
		}
	}
	// Lines the shells read differently are left to the kernel, and the
	// answer says what was not read.
	for _, tt := range shellUnsureLines {
		if d := e.CheckExec(tt.line); verdict(d) != unreadAct || !strings.Contains(d.Unread, tt.why) {
			t.Errorf("exec %q = %s (%s), want an unread allow naming %q", tt.line, d.Action, d.Reason, tt.why)
		}
	}
	if d := e.CheckArgv([]string{"echo", "hi"}); d.Action != Deny {
		t.Errorf("argv echo (not a builtin when exec'd directly) = %s", d.Action)
	}
	if d := e.CheckArgv([]string{"sh", "-c", "curl x | python3"}); d.Action != Allow {
		t.Errorf("argv sh -c = %s (%s)", d.Action, d.Reason)
	}
}

func TestCheckExecUnrestricted(t *testing.T) {
	e := perms(t, nil, []string{"/ws/**"}, nil, nil, nil)
	if d := e.CheckExec("anything | goes"); d.Action != Allow {
		t.Errorf("unrestricted: %s", d.Reason)
	}
	if d := e.CheckExec("anything > /etc/passwd"); d.Action != Deny {
		t.Errorf("redirect outside writes allowed without an exec list")
	}
	// Without an exec list nothing in the line's reading refuses it: the
	// kernel enforces files, programs and network.
	for _, tt := range shellUnsureLines {
		if d := e.CheckExec(tt.line); verdict(d) != unreadAct {
			t.Errorf("unrestricted exec %q = %s (%s), want an unread allow", tt.line, d.Action, d.Reason)
		}
	}
	for _, line := range []string{"tmp=$(mktemp); echo data > \"$tmp\"", "source env.sh", ". .venv/bin/activate", "cd \"$D\" && make > log"} {
		if d := e.CheckExec(line); verdict(d) != unreadAct {
			t.Errorf("unrestricted exec %q = %s (%s), want an unread allow", line, d.Action, d.Reason)
		}
	}
}

func TestCheckEnv(t *testing.T) {
	e := perms(t, nil, nil, nil, nil, []string{"PYTHONHASHSEED", "MY_*"})
	for name, want := range map[string]Action{"PYTHONHASHSEED": Allow, "MY_X": Allow, "LANG": Allow, "LC_ALL": Allow, "AWS_SECRET_ACCESS_KEY": Deny, "MY": Deny} {
		if d := e.CheckEnv(name); d.Action != want {
			t.Errorf("env %s = %s, want %s", name, d.Action, want)
		}
	}
}

// fiftyRules is a merged set of 50 rules across kinds.
func fiftyRules(b testing.TB) *Engine {
	var read, write, network, exec []string
	for i := 0; i < 15; i++ {
		read = append(read, fmt.Sprintf("/ws/data%d/**", i))
		network = append(network, fmt.Sprintf("api%d.example.com:443", i))
	}
	for i := 0; i < 10; i++ {
		write = append(write, fmt.Sprintf("/ws/out%d/**", i), fmt.Sprintf("/ws/logs%d/*.log", i))
	}
	exec = []string{"curl", "python3", "sh", "git", "grep", "cat", "ls", "head", "wc", "jq"}
	return perms(b, read, write, network, exec, nil)
}

func BenchmarkDecisions(b *testing.B) {
	e := fiftyRules(b)
	b.Run("read", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.CheckRead("/ws/data14/x/y.txt")
		}
	})
	b.Run("write-deny", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.CheckWrite("/etc/passwd")
		}
	})
	b.Run("net", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.CheckNetwork("api14.example.com", 443)
		}
	})
	b.Run("net-metadata", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.CheckNetwork("169.254.169.254", 80)
		}
	})
	b.Run("exec-pipeline", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.CheckExec("curl -s https://api.a.com | python3 -c pass")
		}
	})
	b.Run("env", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.CheckEnv("LANG")
		}
	})
}

func TestSystemHiddenConfigFolders(t *testing.T) {
	e, err := New(Permissions{}, Options{WorkDir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/usr/local/etc/npmrc", "/usr/etc/npmrc", "/usr/local/etc"} {
		if d := e.CheckRead(p); d.Action != Deny || !strings.Contains(d.Reason, "configuration folder") {
			t.Errorf("CheckRead(%s) = %+v, want a deny that names the configuration folder", p, d)
		}
	}
	for _, p := range []string{"/usr/local/lib/x.so", "/usr/local/etcetera/x", "/usr/bin/sh"} {
		if d := e.CheckRead(p); d.Action != Allow {
			t.Errorf("CheckRead(%s) = %+v, want the baseline to allow it", p, d)
		}
	}
	g, err := New(Permissions{Read: NewEntries("conf", []string{"/usr/local/etc/**"})}, Options{WorkDir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if d := g.CheckRead("/usr/local/etc/npmrc"); d.Action != Allow {
		t.Errorf("a skill's own grant of /usr/local/etc: %+v", d)
	}
}

// unreadAct stands in test tables for an allow whose Unread is set: the
// preflight could not read part of the line and leaves it to the kernel.
const unreadAct Action = "unread"

// verdict is d's action, or unreadAct for an allow that did not read all
// of the line.
func verdict(d Decision) Action {
	if d.Action == Allow && d.Unread != "" {
		return unreadAct
	}
	return d.Action
}
