package policyengine

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// programsOf lists the programs and assignments-only commands of cmds.
func programsOf(cmds []Command) []string {
	var out []string
	for _, c := range cmds {
		if c.Program != "" {
			out = append(out, c.Program)
		}
	}
	return out
}

// TestBashGrammar: lines only bash reads are read as bash reads them,
// with every program they run, nested ones included.
func TestBashGrammar(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"[[ -f go.mod ]] && go test ./...", []string{"go"}},
		{"for ((i=0;i<3;i++)); do echo $i; done", []string{"echo"}},
		{"n=1; echo $((n+1))", []string{"echo"}},
		{"x=hello; echo ${x:1:3}", []string{"echo"}},
		{"declare -A m; m[a]=1; m[$k]=2; echo ${m[a]} ${#m[@]}", []string{"declare", "echo"}},
		{"IFS=$'\\n' read -r a <<< $'b\\na'", []string{"read"}},
		{"sort -u <<< $'b\\na'", []string{"sort"}},
		{"let x=1+2; let 'y = x * 2'; echo $y", []string{"echo"}},
		{"tmp=$(mktemp); echo data > \"$tmp\"", []string{"mktemp", "echo"}},
		{". .venv/bin/activate && python3 -m pytest -q", []string{".", "python3"}},
		{"source env.sh; make", []string{"source", "make"}},
		{"mapfile -t lines < notes.txt; echo \"${lines[@]}\"", []string{"mapfile", "echo"}},
		{"f() { go vet ./...; }; f", []string{"go", "f"}},
		{"$'\\x72m' -rf x", []string{"rm"}},
		{"[[ $(rm -rf x) ]]", []string{"rm"}},
		{"[[ -n $x ]] && { rm y; }", []string{"rm"}},
		{"echo ${x:-$(rm y)}", []string{"echo", "rm"}},
		{"cat <<EOF\n$(rm y)\nEOF", []string{"cat", "rm"}},
		{"a=($(rm y)); echo ${a[0]}", []string{"rm", "echo"}},
		{"declare x=$(rm y)", []string{"declare", "rm"}},
		{"case $x in a) rm y;; esac", []string{"rm"}},
		{"time rm x; ! rm y", []string{"rm", "rm"}},
		{"diff <(sort a) <(sort b)", []string{"diff", "sort", "sort"}},
		{"while read -r l; do echo \"$l\"; done < <(git ls-files)", []string{"read", "echo", "git"}},
		{"[[ $a =~ ^v([0-9]+) ]] && echo \"${BASH_REMATCH[1]}\"", []string{"echo"}},
		{"n=3; [[ $n -eq 3 ]]; (( n += 1 )); let n++", nil},
		{"declare -A m; m[$k]=1; echo \"${m[$k]}\"", []string{"declare", "echo"}},
		{"[[ x == @(a|b) ]] && trap -- 'rm -f tmp' EXIT", []string{"trap"}},
		{"x=$(( $RANDOM % 6 )); echo $((SECONDS + $# + x))", []string{"echo"}},
		{"coproc cat; echo hi >&\"${COPROC[1]}\"", []string{"cat", "echo"}},
		{"[[ -d x ]] && \\\n  go test \\\n  ./...", []string{"go"}},
		{"[[ -d x ]] && echo a\\\\\nls", []string{"echo", "ls"}},
	} {
		cmds, err := splitBash(tt.line)
		if err != nil {
			t.Errorf("%q: %v", tt.line, err)
			continue
		}
		if got := programsOf(cmds); !slices.Equal(got, tt.want) {
			t.Errorf("%q: programs %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestBashHazards: where bash would run code that the words do not
// show (a value evaluated again as arithmetic, ${x@P}, ${!x}, $"...",
// mapfile's callback), the line is not read.
func TestBashHazards(t *testing.T) {
	for _, line := range []string{
		"x='a[$(touch PWNED)]'; echo $((x))",
		"x='a[$(touch PWNED)]'; (( x ))",
		"x='a[$(touch PWNED)]'; echo $(( $x ))",
		"x='a[$(touch PWNED)]'; let y=x",
		"x='a[$(touch PWNED)]'; [[ $x -eq 1 ]]",
		"x='a[$(touch PWNED)]'; [[ x -eq 1 ]]",
		"x='a[$(touch PWNED)]'; echo ${s:x}",
		"x='a[$(touch PWNED)]'; echo ${a[x]}",
		"x='a[$(touch PWNED)]'; b[x]=1",
		"x='a[$(touch PWNED)]'; b=([x]=1)",
		"read x < f; (( x ))",
		"read < f; (( REPLY ))",
		"mapfile m < f; (( m[0] ))",
		"printf -v x %s \"$y\"; (( x ))",
		"getopts a: o; (( OPTARG ))",
		"for x in 'a[$(touch PWNED)]'; do (( x )); done",
		"echo ${x:='a[$(touch PWNED)]'}; (( x ))",
		"(( $1 ))",
		"(( count++ ))",
		"echo 'a[$(touch PWNED)]'; (( _ ))",
		"[[ $s =~ (.*) ]]; (( BASH_REMATCH[1] ))",
		"echo $(( $(cat f) + 1 ))",
		"eval \"$cmd\"; (( x )); x=1",
		"source env.sh; x=1; (( x ))",
		"$prog x; x=1; (( x ))",
		"declare -n r=x; (( r ))",
		"declare -i n; n=$y",
		"local -n r=x",
		"echo ${!x}",
		"echo ${x@P}",
		"echo $\"hello\"",
		"[[ -v 'a[$(touch PWNED)]' ]]",
		"a[$(touch PWNED)]=1",
		"mapfile -C 'touch PWNED' -c 1 a < f",
		"declare -A m; unset m; m[$k]=1",
		"f() { local m; m[$k]=1; }; declare -A m; f",
		"if true; then declare -A m; fi; m[$k]=1",
		"m[$k]=1; declare -A m",
		"PS4='$(touch PWNED)' x=1",
		"for PS4 in '$(touch PWNED)'; do set -x; done",
		"@(rm|x) -rf y",
		"echo $'\\u0041'",
		// An attacker's review (each ran touch PWNED in bash 5.2).
		`[[ x == @($(touch PWNED)) ]]`,
		"[[ x == +(`touch PWNED`) ]]",
		`[[ -f go.mod || x != !($(touch PWNED)) ]] && go test ./...`,
		`(( ls=0 )); wc -c -- ${BASH_CMDS[ls]:=/bin/sh}; ls -c "touch PWNED"`,
		`BASH_ALIASES[ls]='touch PWNED'; ls`,
		`ls -- $((PATH=0))`,
		`for PATH in 0; do ls; done`,
		`echo ${PATH:=.}; ls`,
		`\declare -i x; x='a[$(touch PWNED)]'`,
		`command declare -i x; x='a[$(touch PWNED)]'`,
		`"declare" -n r='a[$(touch PWNED)]'; echo "$r"`,
		`for o in -n; do declare $o r='a[$(touch PWNED)]'; done; echo "$r"`,
		`\let 'a[$(touch PWNED)]'`,
		`builtin mapfile -C 'touch PWNED' -c 1 a < /etc/hostname`,
		`for o in -C; do mapfile $o 'touch PWNED' -c 1 a < /etc/hostname; done`,
		`printf -v 'a[$(touch PWNED)]' %s x`,
		`read 'a[$(touch PWNED)]' <<< x`,
		`test -v 'a[$(touch PWNED)]'`,
		`[ -v 'a[$(touch PWNED)]' ]`,
		`declare 'a[$(touch PWNED)]=1'`,
		`(( m[0]=0 )); declare -A m; for k in 'a[$(touch PWNED)]'; do echo "${m[$k]}"; done`,
		// bash joins what a backslash-newline splits before it reads
		// tokens; the parser does not always.
		"[[ -n x ]]; cat -- $\\\n'\\' '; touch PWNED; #'",
		"[[ -n x ]]; cat -- \"$\\\n(touch PWNED)\"",
		"[[ -n x ]]; cat <\\\n(touch PWNED)",
		"[[ -n x ]]; echo $\\\n{x:=$\\\n(touch PWNED)}",
		"[[ -n x ]] # a comment \\\ntouch PWNED",
		`declare -A m </nonexistent; for k in 'a[$(touch PWNED)]'; do echo "${m[$k]}"; done`,
		`jobs -x touch PWNED`,
		`compgen -C 'touch PWNED' x`,
		`compgen -W '$(touch PWNED)' x`,
		`hash -p /usr/bin/touch ls; ls PWNED`,
		// The environment is not trusted: a name used before the
		// script sets it, or set only in part, holds what the command
		// line around it gave.
		"(( x )); x=1",
		"[[ $n -eq 3 ]]; n=3",
		"true && x=1; (( x ))",
		"x=1 true; (( x ))",
		"a[1]=5; (( a[0] ))",
		"f() { (( x )); }; x=1; f",
		"for ((;;x=0)); do (( x )); break; done",
		"export x; (( x ))",
		"(( x += 1 ))",
		"echo ${x:=1}; (( x ))",
		": ${y:+$((x=1))}; (( x ))",
		"echo $(( 0 && (x=1) )); (( x ))",
		"(( c ? (x=1) : 0 )); (( x ))",
		"echo $(x=1); (( x ))",
		"{ x=1; } & (( x ))",
		"x=1 | cat; (( x ))",
		// A second review: names bash itself sets to text, and {NAME}
		// redirections.
		`(( _=1 )); ls "a[\$(touch PWNED)]"; (( _ ))`,
		`(( BASH_REMATCH=1 )); [[ "a[\$(touch PWNED)]" =~ .+ ]]; (( BASH_REMATCH ))`,
		`(( PWD=1 )); echo $(( PWD ))`,
		`[[ "a[\$(touch PWNED)]" =~ .+ ]]; ls {a[BASH_REMATCH]}</dev/null`,
		`[[ 1 ]]; for X in "a[\$(touch PWNED)]"; do echo {a[X]}</dev/null; done`,
		`[[ 1 ]]; echo {PATH}</dev/null; ls`,
		// Deep nesting is not parsed at all.
		"(( " + strings.Repeat("a[", 40000) + "1" + strings.Repeat("]", 40000) + " ))",
		strings.Repeat("! ", 40000) + "true",
	} {
		if cmds, err := splitBash(line); err == nil {
			t.Errorf("%q is read: %#v", line, cmds)
		}
	}
}

// TestBashNestedShell: bash -c scripts are read as bash, sh -c scripts
// and the line itself as both shells read them; a bash's arithmetic
// trusts no name it did not set first.
func TestBashNestedShell(t *testing.T) {
	for _, tt := range []struct {
		line string
		read bool
	}{
		{"bash -c '[[ -f go.mod ]] && go test ./...'", true},
		{"bash -lc 'for ((i=0;i<3;i++)); do echo $i; done'", true},
		{"bash <<< '[[ -f x ]] && ls'", true},
		{"sh -c '[[ -f go.mod ]] && go test ./...'", false},
		{"zsh -c '[[ -f go.mod ]] && go test ./...'", false},
		{"[[ -f go.mod ]] && go test ./...", false},
		{"bash -c 'i=0; (( i++ ))'", true},
		{"bash -c '(( i++ )); i=0'", false},
		{"for HOME in 'a[$(touch PWNED)]'; do bash -c '(( HOME )); (( HOME=0 ))'; done", false},
		{"i='a[$(touch PWNED)]' bash -c '(( i++ )); i=0'", false},
		{"export i='a[$(touch PWNED)]'; bash -c '(( i++ )); i=0'", false},
		{"env i='a[$(touch PWNED)]' bash -c '(( i++ )); i=0'", false},
		{"eval \"bash -c '(( i++ )); i=0'\"", false},
	} {
		_, err := Invocations(tt.line)
		if read := err == nil; read != tt.read {
			t.Errorf("%q: read %v (%v), want %v", tt.line, read, err, tt.read)
		}
	}
	invs, err := Invocations("bash -c '[[ -f go.mod ]] && rm -rf ~'")
	if err != nil || len(invs) != 2 || invs[1].Name != "rm" {
		t.Errorf("bash -c's programs: %+v, %v", invs, err)
	}
	invs, err = Invocations("trap -- 'rm -rf x' EXIT")
	if err != nil || len(invs) != 2 || invs[1].Name != "rm" {
		t.Errorf("trap --'s action: %+v, %v", invs, err)
	}
	for _, line := range []string{"for PATH in 0; do ls; done", "printf -v 'a[$(touch PWNED)]' %s x", "jobs -x touch PWNED",
		`for X in "a[\$(touch PWNED)]"; do echo {a[X]}</dev/null; done`, "echo {PATH}</dev/null; ls"} {
		if invs, err := Invocations(line); err == nil {
			t.Errorf("%q read as %+v", line, invs)
		}
	}
}

// TestAgentCallsReadAsBash: every call of the agent corpus, as the
// bash -c script it runs as, is read: no policy has to ask about a line
// only because corral's reader does not follow bash.
func TestAgentCallsReadAsBash(t *testing.T) {
	b, err := os.ReadFile("../tests/testdata/agentcalls/calls.txt")
	if err != nil {
		t.Fatal(err)
	}
	needs := regexp.MustCompile(`^\[[a-z0-9]+\] `)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		l = strings.ReplaceAll(needs.ReplaceAllString(l, ""), " ↵ ", "\n")
		n++
		if _, err := splitLine(l, shBash); err != nil && !errors.Is(err, ErrEmptyCommand) {
			t.Errorf("%q: %v", l, err)
		}
	}
	if n < 150 {
		t.Fatalf("the corpus has %d calls", n)
	}
}

// FuzzSplitBash: no input panics or hangs the bash reader.
func FuzzSplitBash(f *testing.F) {
	for _, s := range []string{"[[ -f x ]] && ls", "for ((i=0;i<3;i++)); do :; done", "a=([k]=$(x)); echo ${a[k]:1:2}",
		"declare -A m; m[$k]=1", "let 'x = 1'", "cat <<E\n$(id)\nE", "$'\\x41\\101'", "f() { g; }; f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmds, err := splitBash(line)
		if err == nil && len(cmds) == 0 {
			t.Fatalf("%q: no commands and no error", line)
		}
	})
}

// BenchmarkSplitAgentCalls: the corpus read by the reader both shells
// agree on and by bash's grammar (docs: README's preflight limits).
func BenchmarkSplitAgentCalls(b *testing.B) {
	data, err := os.ReadFile("../tests/testdata/agentcalls/calls.txt")
	if err != nil {
		b.Fatal(err)
	}
	needs := regexp.MustCompile(`^\[[a-z0-9]+\] `)
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, strings.ReplaceAll(needs.ReplaceAllString(l, ""), " ↵ ", "\n"))
		}
	}
	b.Run("both-shells", func(b *testing.B) {
		for b.Loop() {
			for _, l := range lines {
				SplitCommandLine(l)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines))/1000, "µs/line")
	})
	b.Run("bash-grammar", func(b *testing.B) {
		for b.Loop() {
			for _, l := range lines {
				splitBash(l)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines))/1000, "µs/line")
	})
	b.Run("bash-c", func(b *testing.B) {
		for b.Loop() {
			for _, l := range lines {
				splitLine(l, shBash)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines))/1000, "µs/line")
	})
}

// TestBashScriptsUnderExecList: under an exec list, a bash script's
// programs are checked as bash reads them: a listed program behind bash
// syntax runs, one the list lacks is refused before anything runs, and
// bash's own builtins are no programs.
func TestBashScriptsUnderExecList(t *testing.T) {
	e := perms(t, []string{"/ws/**"}, nil, nil, []string{"bash", "go"}, nil)
	for _, line := range []string{
		"bash -c '[[ -f go.mod ]] && go test ./...'",
		"bash -lc 'mapfile -t a < go.mod; for ((i=0;i<${#a[@]};i++)); do printf %s \"${a[i]}\"; done'",
		"bash -c 'pushd sub >/dev/null && go vet; popd'",
	} {
		if d := e.CheckExec(line); d.Action != Allow || d.Unread != "" {
			t.Errorf("%q: %s (unread %q): %s", line, d.Action, d.Unread, d.Reason)
		}
	}
	line := "bash -c '[[ -f go.mod ]] && curl -o x https://example.invalid/'"
	if d := e.CheckExec(line); d.Action != Deny || !strings.Contains(d.Reason, "curl") {
		t.Errorf("%q: %s: %s", line, d.Action, d.Reason)
	}
}
