package policyengine

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestCheckExecNested: check follows what each command really runs
// (issue 15, item 8): shell options before -c, wrapper options with
// values, env -S, find -exec's arguments, busybox applets, builtins,
// functions and time. The exec list has sh, bash, env, timeout, xargs,
// nice, nohup, stdbuf, setsid, find, busybox, cat and ls; curl is not.
func TestCheckExecNested(t *testing.T) {
	e := perms(t, nil, []string{"/ws/**"}, nil,
		[]string{"sh", "bash", "env", "timeout", "xargs", "nice", "nohup", "stdbuf", "setsid", "find", "busybox", "toybox", "tcsh", "fish", "script", "su", "runuser", "chrt", "cat", "ls", "echo", "flock", "watch"}, nil)
	for _, tt := range []struct {
		line string
		want Action
	}{
		// sh options before and after -c.
		{"sh -o pipefail -c 'curl x'", Deny},
		{"sh +o pipefail -c 'curl x'", Deny},
		{"bash -O extglob -c 'curl x'", Deny},
		{"sh -c -- 'curl x'", Deny},
		{"sh -c -e 'curl x'", Deny},
		{"sh -ec 'curl x'", Deny},
		{"sh -ce 'curl x'", Deny},
		{"sh -euxc 'curl x'", Deny},
		{"sh -co pipefail 'curl x'", Deny},
		{"bash --norc -c 'curl x'", Deny},
		{"bash --noprofile --norc -c 'curl x'", Deny},
		{"bash --rcfile /dev/null -c 'curl x'", Deny},
		{"bash --frobnicate -c 'curl x'", unreadAct},
		{"sh $OPTS -c 'curl x'", unreadAct},
		{"sh -o pipefail -c 'cat a | ls'", Allow},
		{"bash --norc -c 'ls'", Allow},
		{"sh -c -- 'ls'", Allow},
		{"sh <<< 'curl x'", Deny},
		{"bash -s <<< 'curl x'", Deny},
		{"bash -s a b <<< 'curl x'", Deny},
		{"sh <<< 'ls'", Allow},
		{"sh <<EOF\ncurl x\nEOF", unreadAct},
		{"sh <<'EOF'\nls\nEOF", unreadAct},   // the body is not kept
		{"sh script.sh <<< 'curl x'", Allow}, // runs script.sh
		// Wrappers' options that take values.
		{"timeout --kill-after 1 5 curl x", Deny},
		{"timeout --kill-after=1 5 curl x", Deny},
		{"timeout --kill 1 5 curl x", Deny},
		{"timeout -k 1 -s KILL 5 curl x", Deny},
		{"timeout -k1 -sKILL 5 curl x", Deny},
		{"timeout -s KILL 5 curl", Deny},
		{"timeout --signal KILL 5 curl", Deny},
		{"timeout -k 1 -s KILL 5 ls", Allow},
		{"timeout --preserve-status 5 ls", Allow},
		{"timeout --frob 5 ls", unreadAct},
		{"xargs --max-args 1 curl", Deny},
		{"xargs --max-args=1 curl", Deny},
		{"xargs --max 1 curl", unreadAct},
		{"xargs -n1 -I{} curl {}", Deny},
		{"xargs -n 1 -I {} curl {}", Deny},
		{"xargs -0 -P 4 -L 1 curl", Deny},
		{"xargs -i curl {}", Deny},
		{"xargs --replace=X curl X", Deny},
		{"xargs -d '\\n' curl", Deny},
		{"xargs -a list curl", Deny},
		{"xargs -n 1 ls", Allow},
		{"xargs -I{} ls {}", Allow},
		{"xargs -I {} ls {}", Allow},
		{"timeout {-k,1} 5 curl", unreadAct},
		{"timeout $T curl", unreadAct},
		{"env $X curl", Deny},
		{"xargs", Allow}, // runs echo
		{"nice -n 5 curl", Deny},
		{"nice -n5 curl", Deny},
		{"nice --adjustment 5 curl", Deny},
		{"nice -5 curl", Deny},
		{"nice --5 curl", Deny},
		{"nice -n 5 ls", Allow},
		{"nohup curl", Deny},
		{"nohup -- curl", Deny},
		{"stdbuf -o0 curl", Deny},
		{"stdbuf -o 0 -e L curl", Deny},
		{"stdbuf --output 0 curl", Deny},
		{"stdbuf -oL ls", Allow},
		{"setsid -f curl", Deny},
		{"setsid --wait curl", Deny},
		{"setsid -w ls", Allow},
		{"flock /tmp/l curl", Deny},
		{"flock -w 5 /tmp/l curl", Deny},
		{"flock /tmp/l -c 'curl x'", Deny},
		{"flock -c 'curl x' /tmp/l", Deny},
		// util-linux 2.42's options (sid): the lock file and the
		// program are found past their arguments.
		{"flock --wait 5 --start 0 --length 10 /tmp/l curl", Deny},
		{"flock --nb --wait 5 /tmp/l ls", Allow},
		{"watch curl x", Deny},
		{"watch -s /tmp/shots -f 'curl x'", Deny},
		{"watch --shotsdir /tmp/shots -x ls", Allow},
		{"chrt -e 0 curl", Deny},
		{"watch -n 1 'curl x'", Deny},
		{"watch -x curl", Deny},
		// env.
		{"env -i curl", Deny},
		{"env -u HOME curl", Deny},
		{"env -uHOME curl", Deny},
		{"env --unset=HOME curl", Deny},
		{"env --unset HOME curl", Deny},
		{"env -- curl", Deny},
		{"env - curl", Deny},
		{"env A=1 B=2 curl", Deny},
		{"env -C /tmp curl", Deny},
		{"env -S 'curl x'", Deny},
		{"env -S'curl x'", Deny},
		{"env --split-string='curl x'", Deny},
		{"env --split='curl x'", Deny},
		{"env -iS 'curl x'", Deny},
		{"env -S 'A=1 curl'", Deny},
		{"env -S 'ls -l' a", Allow},
		{"env -S '\"curl\" x'", unreadAct},
		{"env -S '$X'", unreadAct},
		{"env -i A=1 ls", Allow},
		{"env -i --unset=X -- ls", Allow},
		{"env --frob ls", unreadAct},
		// find runs the command and its arguments.
		{"find . -exec curl {} ;", Deny},
		{"find . -execdir curl {} +", Deny},
		{"find . -ok curl {} ;", Deny},
		{"find . -okdir curl {} ;", Deny},
		{"find . -exec sh -c 'curl x' \\;", Deny},
		{"find . -name x -exec ls {} ; -exec curl {} ;", Deny},
		{"find . -exec", unreadAct},
		{"find . -exec ls {} ;", Allow},
		{"find . -execdir sh -c 'ls' \\;", Allow},
		// busybox applets.
		{"busybox sh -c 'curl x'", Deny},
		{"busybox ash -c 'curl x'", Deny},
		{"busybox env curl", Deny},
		{"busybox timeout 5 curl", Deny},
		{"busybox xargs curl", Deny},
		{"busybox find . -exec curl {} ;", Deny},
		{"busybox busybox sh -c 'curl x'", Deny},
		{"/bin/busybox sh -c 'curl'", Deny},
		{"busybox sh -c 'ls'", Allow},
		{"busybox ls", Allow},
		{"busybox --list", Allow},
		{"toybox sh -c 'curl x'", Deny},
		{"script -qc 'curl x' /dev/null", Deny},
		{"script -q -c 'ls' /dev/null", Allow},
		{"script --command='curl x'", Deny},
		{"su -c 'curl x' nobody", Deny},
		{"su nobody -c 'curl x'", Deny},
		{"runuser -u nobody -- curl", Deny},
		{"runuser -u nobody curl", Deny},
		{"runuser --user=nobody -- ls", Allow},
		{"runuser nobody -c 'curl x'", Deny},
		{"su -f -c 'curl x'", Deny},
		{"chrt -f 10 curl", Deny},
		{"chrt --rr 1 ls", Allow},
		{"chrt -p 1234", Allow},
		{"tcsh -c 'curl x'", Deny},
		{"fish -c 'curl x'", Deny},
		{"fish --command='curl x'", Deny},
		{"fish -C 'curl x' -c ls", Deny},
		{"fish --frob -c ls", unreadAct},
		// Builtins: command, builtin, exec.
		{"command -v curl", Allow},
		{"command -V curl", Allow},
		{"command -pv curl", Allow},
		{"command curl", Deny},
		{"command -p curl", Deny},
		{"command ls", Allow},
		{"command eval 'curl x'", Deny},
		{"builtin eval 'curl x'", Deny},
		{"builtin eval 'ls'", Allow},
		{"builtin cd /", Allow},
		{"builtin curl", unreadAct},
		{"exec curl", Deny},
		{"exec -a name curl", Deny},
		{"exec -c -l curl", Deny},
		{"exec -cla name curl", Deny},
		{"exec ls", Allow},
		{"exec >/ws/log", Allow},
		// time is a program in sh.
		{"time -p ls", Deny},
		{"time ls", Deny},
		// Functions: calling one runs its body, which was checked.
		{"f() { ls; }; f", Allow},
		{"f() { curl x; }; f", Deny},
		{"function g { ls; }; g a", Allow},
		{"curl() { ls; }; curl", Allow},
		{"f", Deny},
		{"sh -c 'f() { ls; }'; f", Deny},
		{"f() { ls; }; eval f", Allow},
		{"f() { ls; }; sh -c f", Deny},
		{"f() { ls; }; trap f EXIT", Allow},
		// Nested lines that run nothing.
		{"trap '' TERM; ls", Allow},
		{"trap - TERM; ls", Allow},
		{"trap '' INT TERM; while :; do sleep 0.1; done", Deny},
		{"eval ''", Allow},
		{"sh -c ''", Allow},
		{"trap 'curl x' EXIT", Deny},
		{"eval 'curl() { ls; }'; curl", Deny},
		{"f() { ls; }\nf", Allow},
		{"f; f() { ls; }", Deny},
		{"f() ( ls ); f", Allow},
		{"false && curl() { ls; }; curl x", Deny},
		{"true || curl() { ls; }; curl x", Deny},
		{"if false; then curl() { ls; }; fi; curl x", Deny},
		{"while false; do curl() { ls; }; done; curl x", Deny},
		{"for i in; do curl() { ls; }; done; curl x", Deny},
		{"case x in y) curl() { ls; };; esac; curl x", Deny},
		{"{ curl() { ls; }; }; curl x", Deny},
		{"(curl() { ls; }); curl x", Deny},
		{"curl() { ls; } & curl x", Deny},
		{"curl() { ls; } | ls; curl x", Deny},
		{"curl() { ls; } && curl x", Allow},
		{"curl() { ls; } || ls; curl x", Allow},
		{"echo $(curl() { ls; }); curl x", Deny},
		{"curl() { ls; }; unset -f curl; curl x", Deny},
		{"curl() { ls; }; unset curl; curl x", Deny},
		{"function curl { ls; }; curl x", Allow},
		{"function curl { ls; } & curl x", Deny},
		// Assignments run nothing; their substitutions do.
		{"X=1", Allow},
		{"X=$(curl x)", Deny},
		{"X=1 ls", Allow},
	} {
		if d := e.CheckExec(tt.line); verdict(d) != tt.want {
			t.Errorf("CheckExec(%q) = %s (%s), want %s", tt.line, d.Action, d.Reason, tt.want)
		}
	}
}

// TestCheckArgvNested: the exec preflight reads argv the same way.
func TestCheckArgvNested(t *testing.T) {
	e := perms(t, nil, []string{"/ws/**"}, nil, []string{"sh", "timeout", "env", "ls"}, nil)
	for _, tt := range []struct {
		argv []string
		want Action
	}{
		{[]string{"sh", "-o", "pipefail", "-c", "curl x"}, Deny},
		{[]string{"sh", "-c", "--", "curl x"}, Deny},
		{[]string{"timeout", "-k", "1", "5", "curl"}, Deny},
		{[]string{"env", "-S", "curl x"}, Deny},
		{[]string{"env", "-S", "ls -l"}, Allow},
		{[]string{"sh", "-o", "pipefail", "-c", "ls"}, Allow},
		{[]string{"timeout", "-k", "1", "5", "ls"}, Allow},
		{[]string{"sh", "-c", "f() { ls; }; f"}, Allow},
		{[]string{"sh", "-c", "f() { curl; }; f"}, Deny},
		{[]string{"sh", "$X", "-c", "ls"}, unreadAct},
	} {
		if d := e.CheckArgv(tt.argv); verdict(d) != tt.want {
			t.Errorf("CheckArgv(%q) = %s (%s), want %s", tt.argv, d.Action, d.Reason, tt.want)
		}
	}
}

// TestCheckExecCdRedirect: a relative redirection after cd is checked
// in every folder the line may be in.
func TestCheckExecCdRedirect(t *testing.T) {
	e := perms(t, nil, []string{"/ws/**"}, nil, []string{"ls", "sh", "env", "find", "chroot"}, nil)
	for _, tt := range []struct {
		line string
		want Action
	}{
		{"ls > out", Allow},
		{"cd /etc && ls > passwd", Deny},
		{"cd /etc; ls > x", Deny},
		{"cd / && ls > etc/x", Deny},
		{"cd .. && ls > x", Deny},
		{"cd sub && ls > x", Allow},
		{"cd /ws/sub && ls > x", Allow},
		{"cd -P /etc && ls > x", Deny},
		{"cd -- /etc && ls > x", Deny},
		{"(cd /etc) ; ls > x", Deny}, // strict: either folder
		{"cd $D && ls > x", unreadAct},
		{"cd && ls > x", unreadAct},
		{"cd - && ls > x", unreadAct},
		{"cd ~ && ls > x", unreadAct},
		{"pushd /etc && ls > x", Deny},
		{"popd && ls > x", unreadAct},
		{"cd /etc && ls > /ws/x", Allow},
		{"cd /etc && ls < passwd", Allow}, // /etc/passwd is readable
		{"cd /root && ls < x", Deny},
		{"sh -c 'cd /etc && ls > x'", Deny},
		{"cd /etc && sh -c 'ls > x'", Deny},
		{"eval 'cd /etc'; ls > x", Deny},
		{"CDPATH=/etc; cd x && ls > y", unreadAct},
		{"export CDPATH=/etc; cd x && ls > y", unreadAct},
		{"CDPATH=/etc cd x && ls > y", unreadAct},
		{"export CDPATH=/etc; sh -c 'cd x && ls > y'", unreadAct},
		{"CDPATH=/etc; cd ./sub && ls > y", Allow},
		{"CDPATH=/etc; cd /ws/sub && ls > y", Allow},
		{"cd /tmp && ./ls", unreadAct},
		{"cd sub && sub2/ls", unreadAct},
		{"env -C /tmp ./ls", unreadAct},
		{"env -C /etc sh -c 'ls > x'", Deny},
		{"env --chdir=/etc sh -c 'ls > x'", Deny},
		{"env -C sub sh -c 'ls > x'", Allow},
		{"env -C /etc ls > x", Allow}, // the shell opens x, in /ws
		{"find . -execdir sh -c 'ls > x' \\;", unreadAct},
		{"find . -exec sh -c 'ls > x' \\;", Allow},
		{"find . -execdir sh -c 'ls > /ws/x' \\;", Allow},
		{"chroot / sh -c 'ls > x'", unreadAct},
	} {
		if d := e.CheckExec(tt.line); verdict(d) != tt.want {
			t.Errorf("CheckExec(%q) = %s (%s), want %s", tt.line, d.Action, d.Reason, tt.want)
		}
	}
}

func BenchmarkCheckExecWrappers(b *testing.B) {
	e := fiftyRules(b)
	for _, line := range []string{"ls -la | head", "timeout -k 1 -s KILL 5 sh -o errexit -c 'cat a | wc -l'", "cd sub && git log > out"} {
		b.Run(line, func(b *testing.B) {
			for b.Loop() {
				e.CheckExec(line)
			}
		})
	}
}

// TestCheckExecInterpreters: what the kernel lets run although the exec
// list does not name it (a #! interpreter of an allowed script, a link to
// an allowed file) is allowed, with the kernel's reason; the kernel is
// asked only about programs the list does not name.
func TestCheckExecInterpreters(t *testing.T) {
	p := Permissions{Exec: NewEntries("s1", []string{"sh", "/opt/tool.py"}), Declared: []string{"s1"}, ExecDeclared: []string{"s1"}}
	calls := 0
	e, err := New(p, Options{WorkDir: "/ws", KernelExec: func(prog string) (string, bool) {
		calls++
		switch prog {
		case "python3", "/usr/bin/python3", "python3.11", "/usr/bin/python3.11":
			return prog + " is the #! interpreter of exec entry /opt/tool.py", true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.CheckExec("sh -c 'cat a'"); d.Action != Deny || calls != 1 {
		t.Errorf("cat: %s (%s), the kernel asked %d times", d.Action, d.Reason, calls)
	}
	e.CheckExec("sh -c /opt/tool.py")
	if calls != 1 {
		t.Errorf("the kernel asked %d times about listed programs", calls)
	}
	if d := e.CheckExec("$X"); d.Action != Deny || calls != 1 {
		t.Errorf("$X: %s, the kernel asked %d times", d.Action, calls)
	}
	for _, tt := range []struct {
		line string
		want Action
	}{
		{"python3 -c 'print(1)'", Allow},
		{"/usr/bin/python3 -V", Allow},
		{"python3.11 -V", Allow},
		{"/usr/bin/python3.11 -V", Allow},
		{"sh -c 'python3 x.py'", Allow},
		{"/opt/tool.py", Allow},
		{"./python3", Deny},
		{"/tmp/python3", Deny},
		{"python3.12", Deny},
		{"perl -e 1", Deny},
	} {
		d := e.CheckExec(tt.line)
		if d.Action != tt.want {
			t.Errorf("CheckExec(%q) = %s (%s), want %s", tt.line, d.Action, d.Reason, tt.want)
		}
		if d.Action == Allow && strings.Contains(tt.line, "python3") && !strings.HasPrefix(tt.line, "sh ") && !strings.Contains(d.Reason, "#! interpreter of exec entry /opt/tool.py") {
			t.Errorf("CheckExec(%q) does not say why: %s", tt.line, d.Reason)
		}
	}
	if d := e.CheckProgram("python3"); d.Action != Allow || !strings.Contains(d.Reason, "interpreter") {
		t.Errorf("CheckProgram(python3) = %s (%s)", d.Action, d.Reason)
	}
}

// TestWrappersKnowEveryLongOption: a wrapper's long option may be
// abbreviated, and an exact name wins over a prefix, so the specs must
// know every long option of the installed wrappers, or corral could take
// a word for another option and the wrong word for the program.
func TestWrappersKnowEveryLongOption(t *testing.T) {
	longOpt := regexp.MustCompile(`(?m)(?:^|[\s,\[])--([a-z0-9][a-z0-9-]*)`)
	// "-k, --kill-after=DURATION", "-i, --replace[=R]", "-c, --command <command>"
	pairOpt := regexp.MustCompile(`(?m)^\s*-([a-zA-Z0-9]), --([a-z0-9][a-z0-9-]*)(\[=|=| <)?`)
	// Help texts that leave out an option's value (the program itself
	// refuses the option without one; checked by hand).
	helpOmitsValue := map[string]bool{
		"watch --shotsdir": true, // procps-ng 4.0.7: "-s, --shotsdir   directory to store screenshots"
	}
	checked := 0
	for name, w := range wrapperSpecs() {
		if w.builtin {
			continue
		}
		bin, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		out, _ := exec.Command(bin, "--help").CombinedOutput()
		for _, m := range pairOpt.FindAllStringSubmatch(string(out), -1) {
			i := strings.IndexByte(w.spec.Short, m[1][0])
			if i < 0 {
				continue // not taken here: an error, so nothing runs
			}
			short := w.spec.Short[i+1:]
			want, got := "no value", "no value"
			switch {
			case m[3] == "[=":
				want = "an optional value"
			case m[3] == "=" || m[3] == " <", helpOmitsValue[name+" --"+m[2]]:
				want = "a value"
			}
			switch {
			case strings.HasPrefix(short, "::"):
				got = "an optional value"
			case strings.HasPrefix(short, ":"):
				got = "a value"
			}
			if want != got {
				t.Errorf("%s --help: -%s, --%s takes %s, the spec says %s", bin, m[1], m[2], want, got)
			}
		}
		for _, m := range longOpt.FindAllStringSubmatch(string(out), -1) {
			checked++
			if _, ok := w.spec.Long[m[1]]; !ok {
				t.Errorf("%s --help lists --%s, which its wrapper spec does not know", bin, m[1])
			}
		}
	}
	t.Logf("%d long options of the installed wrappers checked", checked)
}
