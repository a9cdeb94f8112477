package policyengine

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// sc builds an expected Command: program then args.
func sc(program string, args ...string) Command {
	if len(args) == 0 {
		args = nil
	}
	return Command{Program: program, Args: args}
}

// set adds expected leading assignments.
func (c Command) set(assigns ...string) Command {
	c.Assigns = append(append([]string(nil), c.Assigns...), assigns...)
	return c
}

// fn is an expected function definition.
func fn(name string) Command { return Command{Function: name} }

// to adds an expected redirection.
func (c Command) to(op, target string) Command {
	c.Redirects = append(append([]Redirect(nil), c.Redirects...), Redirect{Op: op, Target: target})
	return c
}

// shellSplitCases are the command lines SplitCommandLine must split; the
// fuzz test seeds its corpus with them.
var shellSplitCases = []struct {
	name string
	line string
	want []Command
}{
	{"pipeline", "curl -s https://api.a.com | python3 -c pass", []Command{sc("curl", "-s", "https://api.a.com"), sc("python3", "-c", "pass")}},
	{"redirect write", "cat x > /etc/passwd", []Command{sc("cat", "x").to(">", "/etc/passwd")}},
	{"all operators", "a&&b||c;d&e|&f", []Command{sc("a"), sc("b"), sc("c"), sc("d"), sc("e"), sc("f")}},
	{"newlines split", "a\nb\n\nc", []Command{sc("a"), sc("b"), sc("c")}},
	{"operator in double quotes", `echo "a | b"`, []Command{sc("echo", "a | b")}},
	{"operator in single quotes", `echo 'a && b; c'`, []Command{sc("echo", "a && b; c")}},
	{"escaped semicolon", `echo a\;b`, []Command{sc("echo", "a;b")}},
	{"blanks folded", "  ls \t -l   -a  ", []Command{sc("ls", "-l", "-a")}},
	{"quotes joined", `e"x"'y'\z a""b`, []Command{sc("exyz", "ab")}},
	{"double quote escapes", `echo "\"\\\$\` + "`" + `\n"`, []Command{sc("echo", `"\$`+"`"+`\n`)}},
	{"command substitution", "echo $(rm -rf /)", []Command{sc("echo", "$(rm -rf /)"), sc("rm", "-rf", "/")}},
	{"substitution in double quotes", `echo "$(curl x)"`, []Command{sc("echo", "$(curl x)"), sc("curl", "x")}},
	{"backquotes", "echo `id`", []Command{sc("echo", "`id`"), sc("id")}},
	{"backquotes in double quotes", "echo \"`id -u`\"", []Command{sc("echo", "`id -u`"), sc("id", "-u")}},
	{"escaped backquotes nest", "echo `echo \\`id\\``", []Command{sc("echo", "`echo \\`id\\``"), sc("echo", "`id`"), sc("id")}},
	{"process substitution", "diff <(ls a) <(ls b)", []Command{sc("diff", "<(ls a)", "<(ls b)"), sc("ls", "a"), sc("ls", "b")}},
	{"output process substitution", "tee >(gzip > x.gz)", []Command{sc("tee", ">(gzip > x.gz)"), sc("gzip").to(">", "x.gz")}},
	{"assignments kept", "FOO=1 BAR='a b' python3 x", []Command{sc("python3", "x").set("FOO=1", "BAR=a b")}},
	{"assignment with substitution", "X=$(id) ls", []Command{sc("ls").set("X=$(id)"), sc("id")}},
	{"array assignment", "a=(x $(id) y) ls", []Command{sc("ls").set("a=(x $(id) y)"), sc("id")}},
	{"quoted name is no assignment", `"FOO"=1 ls`, []Command{sc("FOO=1", "ls")}},
	{"assignment only", "FOO=$(whoami)", []Command{sc("").set("FOO=$(whoami)"), sc("whoami")}},
	{"assignments only", "A=1 B=2", []Command{sc("").set("A=1", "B=2")}},
	{"redirect first", "2>/dev/null ls", []Command{sc("ls").to(">", "/dev/null")}},
	{"redirect anywhere", ">out cmd arg", []Command{sc("cmd", "arg").to(">", "out")}},
	{"fd redirects", "cat < in > out 2>&1", []Command{sc("cat").to("<", "in").to(">", "out").to(">&", "1")}},
	{"all redirect ops", "c >>a >|b &>c &>>d <>e 3<&0 >&f 4>&-", []Command{sc("c").to(">>", "a").to(">|", "b").to("&>", "c").to("&>>", "d").to("<>", "e").to("<&", "0").to(">&", "f").to(">&", "-")}},
	{"named fd redirect", "{fd}>log exec", []Command{sc("exec").to(">", "log")}},
	{"brace word", "{a}", []Command{sc("{a}")}},
	{"redirect with space", "echo hi >  'my file'", []Command{sc("echo", "hi").to(">", "my file")}},
	{"digits are words", "echo 2 > x", []Command{sc("echo", "2").to(">", "x")}},
	{"only redirect", "> file", []Command{sc("").to(">", "file")}},
	{"heredoc", "cat <<EOF\nrm -rf /\nEOF\nls", []Command{sc("cat").to("<<", "EOF"), sc("ls")}},
	{"heredoc strip tabs", "cat <<-'END' >x\n\trm\n\tEND\nls", []Command{sc("cat").to("<<", "END").to(">", "x"), sc("ls")}},
	{"heredoc unterminated", "cat <<EOF\nrm -rf /", []Command{sc("cat").to("<<", "EOF")}},
	{"heredoc expands", "cat <<EOF\n$(id) 'x\nEOF", []Command{sc("cat").to("<<", "EOF"), sc("id")}},
	{"heredoc quoted literal", "cat <<\"EOF\"\n$(id)\nEOF", []Command{sc("cat").to("<<", "EOF")}},
	{"two heredocs", "a <<X; b <<Y\nrm\nX\nrm\nY\nc", []Command{sc("a").to("<<", "X"), sc("b").to("<<", "Y"), sc("c")}},
	{"heredoc inside substitution", "x=$(cat <<EOF\nhi)\nEOF\n); ls", []Command{sc("").set("x=$(cat <<EOF\nhi)\nEOF\n)"), sc("cat").to("<<", "EOF"), sc("ls")}},
	{"heredoc cut by backquotes", "echo `cat <<EOF`\nrm\nEOF", []Command{sc("echo", "`cat <<EOF`"), sc("cat").to("<<", "EOF"), sc("rm"), sc("EOF")}},
	{"here-string", "grep x <<< \"$v\"", []Command{sc("grep", "x").to("<<<", "$v")}},
	{"if", "if true; then rm x; fi", []Command{sc("true"), sc("rm", "x")}},
	{"if else", "if a; then b; elif c; then d; else e; fi", []Command{sc("a"), sc("b"), sc("c"), sc("d"), sc("e")}},
	{"while", "while read l; do echo $l; done < f", []Command{sc("read", "l"), sc("echo", "$l"), sc("").to("<", "f")}},
	{"for", "for f in a b; do cat $f; done", []Command{sc("cat", "$f")}},
	{"for over substitution", "for f in $(ls); do rm $f; done", []Command{sc("ls"), sc("rm", "$f")}},
	{"for on lines", "for f\nin a b\ndo\ncat $f\ndone", []Command{sc("cat", "$f")}},
	{"for without in", "for x do rm $x; done", []Command{sc("rm", "$x")}},
	{"for with do as word", "for x in do; do rm $x; done", []Command{sc("rm", "$x")}},
	{"case", "case $x in a|b) ls;; (c) rm x;& *) id;;& esac; pwd", []Command{sc("ls"), sc("rm", "x"), sc("id"), sc("pwd")}},
	{"case in substitution", "echo $(case x in x) id;; esac)", []Command{sc("echo", "$(case x in x) id;; esac)"), sc("id")}},
	{"case on lines", "case $x\nin\n  a) ls ;;\nesac", []Command{sc("ls")}},
	{"select", "select x in a b; do echo $x; done", []Command{sc("echo", "$x")}},
	{"coproc", "coproc ls -l", []Command{sc("ls", "-l")}},
	{"negation", "! grep x f", []Command{sc("grep", "x", "f")}},
	{"time is a program in sh", "time -p ls", []Command{sc("time", "-p", "ls")}},
	{"quoted keyword is a program", `"if" x`, []Command{sc("if", "x")}},
	{"keyword as argument", "echo if then fi", []Command{sc("echo", "if", "then", "fi")}},
	{"subshell", "(cd /tmp && ls)", []Command{sc("cd", "/tmp"), sc("ls")}},
	{"subshell redirect", "(ls) > out", []Command{sc("ls"), sc("").to(">", "out")}},
	{"group", "{ ls; }", []Command{sc("ls")}},
	{"group redirect", "{ ls; pwd; } 2>err", []Command{sc("ls"), sc("pwd"), sc("").to(">", "err")}},
	{"function", "f() { rm x; }; f", []Command{fn("f"), sc("rm", "x"), sc("f")}},
	{"function keyword", "function g { id; }", []Command{fn("g"), sc("id")}},
	{"conditional function", "x && f() { id; }", []Command{sc("x"), {Function: "f", Conditional: true}, sc("id")}},
	{"backgrounded function", "f() { id; } & g() { x; }", []Command{{Function: "f", Conditional: true}, sc("id"), fn("g"), sc("x")}},
	{"arithmetic", "echo $((1+2))", []Command{sc("echo", "$((1+2))")}},
	{"unbalanced arithmetic runs commands", "echo $(( p2 $(case x in x) id;; esac) ))", []Command{sc("echo", "$(( p2 $(case x in x) id;; esac) ))"), sc("p2", "$(case x in x) id;; esac)"), sc("id")}},
	{"subshell in substitution", "echo $((ls) )", []Command{sc("echo", "$((ls) )"), sc("ls")}},
	{"nested subshells", "((ls); pwd)", []Command{sc("ls"), sc("pwd")}},
	{"parameter", "echo ${HOME}/x ${#a[@]}", []Command{sc("echo", "${HOME}/x", "${#a[@]}")}},
	{"parameter default runs", `echo ${x:-$(id)} "${y:-'q'}"`, []Command{sc("echo", "${x:-$(id)}", "${y:-'q'}"), sc("id")}},
	{"single quotes literal", "echo 'a$(b)'", []Command{sc("echo", "a$(b)")}},
	{"nested substitutions", "echo $(echo $(id))", []Command{sc("echo", "$(echo $(id))"), sc("echo", "$(id)"), sc("id")}},
	{"substitution as program", "$(which ls) -l", []Command{sc("$(which ls)", "-l"), sc("which", "ls")}},
	{"double semicolon", "ls;;", []Command{sc("ls")}},
	{"trailing separators", "ls ; ; & ", []Command{sc("ls")}},
	{"line continuation", "ls \\\n  -l \\\n| wc", []Command{sc("ls", "-l"), sc("wc")}},
	{"continuation in word", "ec\\\nho hi", []Command{sc("echo", "hi")}},
	{"comment", "ls # rm -rf /\npwd", []Command{sc("ls"), sc("pwd")}},
	{"hash inside word", "echo a#b $#", []Command{sc("echo", "a#b", "$#")}},
	{"prefix commands not unwrapped", "sudo env FOO=1 nice xargs rm", []Command{sc("sudo", "env", "FOO=1", "nice", "xargs", "rm")}},
	{"exec redirect", "exec 3>&1", []Command{sc("exec").to(">&", "1")}},
	{"pipe across lines", "ls |\n  grep x &&\n  wc", []Command{sc("ls"), sc("grep", "x"), sc("wc")}},
	{"continuation in options", "curl \\\n -s https://x", []Command{sc("curl", "-s", "https://x")}},
	{"continuation in double quotes", "echo \"a\\\nb\" \"$\\\n(id)\"", []Command{sc("echo", "ab", "$(id)"), sc("id")}},
	{"continuation splits an operator", "ls &\\\n& pwd", []Command{sc("ls"), sc("pwd")}},
	{"continuation in a keyword", "case x in (a) pwd;; esa\\\nc; id", []Command{sc("pwd"), sc("id")}},
	{"continuation in substitution", "echo $\\\n(i\\\nd)", []Command{sc("echo", "$(id)"), sc("id")}},
	{"no continuation in single quotes", "echo 'a\\\nb' \\\n c", []Command{sc("echo", "a\\\nb", "c")}},
	{"comment ends at the newline", "ls # a \\\npwd", []Command{sc("ls"), sc("pwd")}},
	{"escaped backslash before newline", "echo a\\\\\npwd", []Command{sc("echo", "a\\"), sc("pwd")}},
	{"continuation kept in a quoted here-document", "cat <<'E' \\\n-\n$(id) \\\nE\nE\nls \\\n-l", []Command{sc("cat", "-").to("<<", "E"), sc("E"), sc("ls", "-l")}},
	{"continuation and an unquoted here-document", "cat <<E \\\n-\n$(id)\nE\nls \\\n-l", []Command{sc("cat", "-").to("<<", "E"), sc("ls", "-l"), sc("id")}},
	{"for over a glob", `for f in *.go; do wc -l "$f"; done`, []Command{sc("wc", "-l", "$f")}},
	{"if test", "if [ -f x ]; then cat x; fi", []Command{sc("[", "-f", "x", "]"), sc("cat", "x")}},
	{"variable in double quotes", `echo "$HOME" ${HOME} ${#x} ${x%.go} ${@} ${1} ${a[@]} ${!}`, []Command{sc("echo", "$HOME", "${HOME}", "${#x}", "${x%.go}", "${@}", "${1}", "${a[@]}", "${!}")}},
	{"numeric subscripts", "a[1]=x b=([0]=y z) c+=(w)", []Command{sc("").set("a[1]=x", "b=([0]=y z)", "c+=(w)")}},
	{"arithmetic of numbers", "echo $((1 + 0x1f * 16#ff)) $(( (2) ))", []Command{sc("echo", "$((1 + 0x1f * 16#ff))", "$(( (2) ))")}},
	{"test is not [[", "[ a '<' b ] && echo [[", []Command{sc("[", "a", "<", "b", "]"), sc("echo", "[[")}},
}

func TestSplitCommandLine(t *testing.T) {
	for _, tc := range shellSplitCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitCommandLine(tc.line)
			if err != nil {
				t.Fatalf("SplitCommandLine(%q): %v", tc.line, err)
			}
			for i := range got {
				got[i].Expanding = nil // TestSplitCommandLineExpanding
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SplitCommandLine(%q)\n got %#v\nwant %#v", tc.line, got, tc.want)
			}
		})
	}
}

// TestSplitCommandLineExpanding: the arguments whose start the shell
// decides (they may turn out to be options) are marked: those that start
// with an expansion or glob, and those with an unquoted expansion, which
// is split into words; quoted text, a tilde, a glob after the first
// character and a double-quoted expansion after it are not.
func TestSplitCommandLineExpanding(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []int
	}{
		{"sort * a", []int{0}},
		{"sort ? [ab] {x,y}", []int{0, 1, 2}},
		{"sort $X \"$Y\" ${Z} $(z) `z` \"$(z)\" \"`z`\"", []int{0, 1, 2, 3, 4, 5, 6}},
		{"sort ''$X \"\"*", []int{0, 1}},
		{"sort '*' \"*\" \\* '$X' \\$X a* ./* ~/x \"a$X\" -k\"$X\"", nil},
		{"sort -k$X --o=$X a$(x) a`x`", []int{0, 1, 2, 3}},
		{"sort a $X b", []int{1}},
	} {
		cmds, err := SplitCommandLine(tt.line)
		if err != nil {
			t.Fatalf("SplitCommandLine(%q): %v", tt.line, err)
		}
		if !reflect.DeepEqual(cmds[0].Expanding, tt.want) {
			t.Errorf("SplitCommandLine(%q) expanding %v, want %v (args %q)", tt.line, cmds[0].Expanding, tt.want, cmds[0].Args)
		}
	}
}

// shellSplitErrors are command lines SplitCommandLine must refuse.
var shellSplitErrors = []struct {
	name  string
	line  string
	empty bool // ErrEmptyCommand
}{
	{"empty", "", true},
	{"blanks", "   \t\n ", true},
	{"only separators", " ; & ;; ", true},
	{"only comment", "# ls", true},
	{"empty subshell", "()", true},
	{"unterminated double quote", `echo "abc`, false},
	{"unterminated single quote", "echo 'abc", false},
	{"unterminated ansi-c quote", "echo $'abc", false},
	{"unterminated substitution", "echo $(ls", false},
	{"unterminated subshell", "(ls; pwd", false},
	{"unterminated process substitution", "cat <(ls", false},
	{"unterminated backquote", "echo `id", false},
	{"unterminated parameter", "echo ${x", false},
	{"unterminated arithmetic", "echo $((1+2", false},
	{"unbalanced close", "ls )", false},
	{"paren after arguments", "echo a (b)", false},
	{"missing redirect target", "ls >", false},
	{"redirect into operator", "ls > ; pwd", false},
	{"error inside backquotes", "echo `echo \"x`", false},
	{"error inside heredoc", "cat <<EOF\n$(ls\nEOF", false},
	{"empty program", `"" rm -rf /`, false},
	{"too deep", strings.Repeat("$(", 100) + strings.Repeat(")", 100), false},
	{"too deep backquotes", strings.Repeat("(", 70) + "`" + strings.Repeat(")", 70), false},
}

func TestSplitCommandLineErrors(t *testing.T) {
	for _, tc := range shellSplitErrors {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitCommandLine(tc.line)
			if err == nil {
				t.Fatalf("SplitCommandLine(%q) = %#v, want an error", tc.line, got)
			}
			if empty := errors.Is(err, ErrEmptyCommand); empty != tc.empty {
				t.Errorf("SplitCommandLine(%q) error %q: ErrEmptyCommand is %v, want %v", tc.line, err, empty, tc.empty)
			}
		})
	}
}

// shellUnsureLines are command lines that bash and dash read differently,
// or whose reading corral cannot be sure of: SplitCommandLine refuses
// them with ErrUnclear and a reason holding why. Most are attacks that
// made "corral check" allow a line on which a shell runs touch.
var shellUnsureLines = []struct {
	line, why string
}{
	// Here-document bodies start after the line at the operator's level.
	{"cat <<'pwd' -- $(\ntouch PWNED\npwd\n)\npwd", "here-document"},
	{"cat <<'pwd' -- \"$(\ntouch PWNED\npwd\n)\"\npwd", "here-document"},
	{"cat <<'pwd' -- <(\ntouch PWNED\npwd\n)\npwd", "here-document"},
	{"cat <<'pwd' -- ${x:-$(\ntouch PWNED\npwd\n)}\npwd", "here-document"},
	{"cat <<'pwd' -- `\ntouch PWNED\npwd\n`\npwd", "here-document"},
	{"cat <<pwd -- $(\ntouch PWNED\npwd\n)\npwd", "here-document"},
	{"cat -- $(cat <<'E')\ntouch PWNED\nE", "here-document"},
	{"cat <<E; a=(x\ny)\nE", "here-document"},
	// Line continuations are removed first, or refused where their place
	// cannot be told.
	{"cat <<E\\\nOF\n$(touch PWNED)\nEOF", "here-document"},
	{"cat <<E\n\\\n$(touch PWNED)\nE", "here-document"},
	{"cat <<E\nE\\\n\n$(touch PWNED)\nE", "here-document"},
	{"cat <<E$x\nx\\\ny\nE", "delimiter"},
	{"echo $(cat <<E\nx\nE\n) \\\n y", "here-document"},
	{"cat <<E; echo $(\n) \\\n\nE", "here-document"},
	{"cat -- $\\\n'\\' '; touch PWNED; #'", "$'"},
	{"cat -- `echo \\\n`", "backquotes"},
	{"cat -- ${x:-\\\n$(touch PWNED)}", "${...}"},
	{"echo \"$(case x in x) echo ')' ;; esac)\\\n\" '\\\n'", "case"},
	// $'...' is not a quote in dash.
	{"cat -- $'\\' ;touch PWNED; #'", "$'"},
	{"cat -- x$'\\'' ;touch PWNED; #'", "$'"},
	{"cat -- ${x:-$'\\' ;touch PWNED; #'}", "$'"},
	{"echo $(( $'1' ))", "$'"},
	{"echo $'a\\tb'", "$'"},
	// (( is arithmetic in bash, nested subshells in dash.
	{"pwd; ((touch PWNED))", "(("},
	{"((i++)) && ls", "(("},
	{"for ((;;)) do ls; done", "(("},
	{"echo $( ((touch PWNED)) )", "(("},
	// bash evaluates values again: assignments in words, @P, arithmetic
	// on names, subscripts, indirection, substrings.
	{`cat -- "${x:=\$(touch PWNED)}" "${x@P}"`, "${x:="},
	{`cat -- "${x:=a[\$(touch PWNED)]}" "$((x))"`, "${x:="},
	{`cat -- ${x=a} $((x))`, "${x="},
	{`x='$(touch PWNED)'; echo "${x@P}"`, "@"},
	{`x='a[$(touch PWNED)]'; echo $((x))`, "arithmetic"},
	{`x='a[$(touch PWNED)]'; echo $(($x + 1))`, "arithmetic"},
	{"echo $(( `echo x` ))", "arithmetic"},
	{`x='a[$(touch PWNED)]'; echo ${a[x]}`, "subscript"},
	{`x='a[$(touch PWNED)]'; echo ${y:x}`, "offset"},
	{`x='a[$(touch PWNED)]'; echo ${!x}`, "indirection"},
	{`echo ${x|y}`, "operator"},
	{"x='b[$(touch PWNED)]'; a[x]=1", "subscript"},
	{"x='b[$(touch PWNED)]'; a[$x]=1 ls", "subscript"},
	{"x='b[$(touch PWNED)]'; a=([x]=1)", "subscript"},
	{"x='b[$(touch PWNED)]'; a+=([$x]=1)", "subscript"},
	{"x='b[$(touch PWNED)]'; echo ${#a[x]}", "subscript"},
	{"x='b[$(touch PWNED)]'; echo ${@:x}", "offset"},
	{"echo $[1+2]", "$[...]"},
	{`echo $"hello"`, "translated"},
	{`echo ${x:-$"hello"}`, "translated"},
	{"PS4='$(touch PWNED)'; set -x; ls", "PS4"},
	{"PS4+='$(touch PWNED)' bash -xc ls", "PS4"},
	{"for PS4 in '$(touch PWNED)'; do set -x; ls; done", "PS4"},
	{"BASH_ENV=./x bash -c ls", "BASH_ENV"},
	{"SHELLOPTS=xtrace PS4='$(touch PWNED)' bash -c ls", "SHELLOPTS"},
	// [[ is a keyword in bash, a command in dash.
	{"[[ -f <(touch PWNED) ]]", "[["},
	{"[[ a || touch PWNED ]]", "[["},
	{"[[ a > PWNED ]]", "[["},
	{"ls && [[ -n $x ]]", "[["},
}

func TestSplitCommandLineUnsure(t *testing.T) {
	for _, tc := range shellUnsureLines {
		t.Run(tc.line, func(t *testing.T) {
			got, err := SplitCommandLine(tc.line)
			if err == nil {
				t.Fatalf("SplitCommandLine(%q) = %#v, want an error", tc.line, got)
			}
			if !errors.Is(err, ErrUnclear) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("SplitCommandLine(%q) error %q: want ErrUnclear naming %q", tc.line, err, tc.why)
			}
		})
	}
}

// TestSplitCommandLineSeesTouch: lines on which a shell runs touch once
// its line continuations are removed: the splitter finds touch.
func TestSplitCommandLineSeesTouch(t *testing.T) {
	for _, line := range []string{
		"cat -- \"$\\\n(touch PWNED)\"",
		"cat -- $\\\n(touch PWNED)",
		"cat -- $\\\n\\\n(touch PWNED)",
		"case x in (a) pwd;; esa\\\nc; touch PWNED",
		"echo a &\\\n& touch PWNED",
		"cat <\\\n(touch PWNED)",
		"echo x # \\\ntouch PWNED",
		"echo \"a\\\n\" ; touch PWNED",
		"t\\\nouch PWNED",
		"echo $(\\\n(touch PWNED) )",
		"cat <<< x \\\n$(touch PWNED)",
		"cat <\\\n<E\nx\nE\ntouch PWNED",
		"cat <<'E' \\\n-\nx\\\nE\nE\ntouch PWNED",
		"cat <<-\\E\n\tx\\\n\tE\n t\\\nouch PWNED",
	} {
		cmds, err := SplitCommandLine(line)
		if err != nil {
			t.Errorf("SplitCommandLine(%q): %v", line, err)
			continue
		}
		if !slices.ContainsFunc(cmds, func(c Command) bool { return c.Program == "touch" }) {
			t.Errorf("SplitCommandLine(%q) = %+v: touch not found", line, cmds)
		}
	}
}

func TestSplitCommandLineErrorSaysWhere(t *testing.T) {
	_, err := SplitCommandLine(`ls; echo "abc`)
	if err == nil || !strings.Contains(err.Error(), "unterminated double quote") || !strings.Contains(err.Error(), "offset 9") {
		t.Errorf("error %v should name the unterminated quote and its offset 9", err)
	}
}

// TestSplitCommandLinePathological checks that hostile nesting stays fast:
// ambiguous "$((" and "((" must not be re-read exponentially.
func TestSplitCommandLinePathological(t *testing.T) {
	lines := []string{
		strings.Repeat("$((", 60) + strings.Repeat(") )", 60),
		strings.Repeat("((", 30) + "ls" + strings.Repeat(") ", 60),
		strings.Repeat("$(( $(( ", 30) + strings.Repeat("1) ) ) ) ", 30),
		strings.Repeat("a=(", 60) + strings.Repeat(")", 60),
		strings.Repeat("\"$(echo ", 60) + strings.Repeat(")\"", 60),
		strings.Repeat("`", 10000),
		strings.Repeat("ls | ", 20000) + "ls",
		strings.Repeat("cat <<E\n", 2000),
		shellNestedHeredocArith(20),
	}
	// The bound is a second, or 20 times a plain 20,000-command list
	// ("ls ; ls ; ..."), which reads in about the time of the pipeline
	// below: on a slow machine (the VM matrix emulates its CPU, and there
	// the pipeline took 266 times a 2,000-command one, the heap's growth
	// included) the bound grows with it. A re-read that goes exponential is
	// far past either.
	start := time.Now()
	_, _ = SplitCommandLine(strings.Repeat("ls ; ", 20000) + "ls")
	bound := max(time.Second, 20*time.Since(start))
	for _, line := range lines {
		start := time.Now()
		_, _ = SplitCommandLine(line)
		if d := time.Since(start); d > bound || testing.Verbose() {
			t.Logf("SplitCommandLine(%.40q...) took %v (bound %v)", line, d, bound)
			if d > bound {
				t.Fail()
			}
		}
	}
}

// shellNestedHeredocArith nests "$((" that turn out to be subshells
// around here-documents: each level is read once as arithmetic and once as
// commands, so their bodies must not be parsed again on every level.
func shellNestedHeredocArith(levels int) string {
	line := "id"
	for i := range levels {
		line = fmt.Sprintf("$(( $(cat <<E%d\n%s\nE%d\n) ) )", i, line, i)
	}
	return "echo " + line
}

func TestSplitCommandLineNestedHeredocArith(t *testing.T) {
	cmds, err := SplitCommandLine(shellNestedHeredocArith(3))
	if err != nil {
		t.Fatal(err)
	}
	// Each level is a subshell running the output of cat as a program;
	// "id" is only here-document text.
	var programs []string
	for _, c := range cmds {
		programs = append(programs, c.Program)
	}
	if len(cmds) != 7 || strings.Count(strings.Join(programs, " "), " cat") != 3 {
		t.Errorf("programs %q, want echo and 3 times a dynamic program and cat", programs)
	}
}

func BenchmarkSplitCommandLine(b *testing.B) {
	const line = `curl -sS "https://api.example.com/v1/items?page=2" | jq '.items[].name' | sort -u > out.txt`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SplitCommandLine(line); err != nil {
			b.Fatal(err)
		}
	}
}
