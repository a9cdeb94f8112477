package policyengine

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A line that bash runs (bash -c, bash -lc, the bash tool's line) is read
// as bash reads it: where the reader in shell.go, which reads only what sh
// (dash) and bash read alike, cannot follow a line, mvdan.cc/sh's bash
// parser reads it, and splitBash turns the syntax tree into the same
// Commands. The dash/bash difference then no longer matters, but one bash
// hazard stays: bash evaluates a variable's value again as an arithmetic
// expression wherever arithmetic names it ($((x)), ((x)), let, a[x],
// ${s:x}, [[ x -eq 1 ]]), and an array subscript in that value runs its
// command substitutions (x='a[$(cmd)]'; ((x)) runs cmd). splitBash
// therefore reads arithmetic only on names that can hold nothing but
// numbers: bash keeps them numeric (RANDOM, SECONDS, $#, $?), or the
// script sets them first, at its top level, to a number or arithmetic,
// and never to anything else (the environment, which the command line
// around the script may have set, is not trusted). Anything else in
// arithmetic (a name the line reads into, a parameter of the script, a
// command substitution's output) is a shellUnsureError, as are ${x@P},
// ${!x}, $"...", patterns with substitutions in them, and builtins that
// evaluate or run what their words hold (declare -i, mapfile -C, jobs
// -x, a subscript in a name given to read or printf -v).

// maxBashLine bounds the lines splitBash parses; longer ones are not
// read. mvdan.cc/sh's parser recurses on nesting (a[a[...]], ! ! ...),
// which roughNesting only partly sees.
const maxBashLine = 64 << 10

// numericBashVars are the variables bash keeps numeric whatever the
// environment or an assignment gave them.
var numericBashVars = map[string]bool{
	"RANDOM": true, "SRANDOM": true, "SECONDS": true, "EPOCHSECONDS": true, "LINENO": true,
	"BASHPID": true, "PPID": true, "UID": true, "EUID": true, "SHLVL": true, "OPTIND": true,
	"HISTCMD": true, "BASH_SUBSHELL": true, "PIPESTATUS": true,
	"BASH_LINENO": true, "#": true, "?": true, "$": true, "!": true,
}

// bashWritesText reports whether bash itself gives name a text value
// whatever the script set it to first: $_ (the last argument), matches,
// folders, function and source names, the words of a completion or a line
// read, coprocess descriptors' names.
func bashWritesText(name string) bool {
	switch name {
	case "_", "PWD", "OLDPWD", "DIRSTACK", "FUNCNAME", "REPLY", "MAPFILE", "OPTARG", "HOSTNAME", "GROUPS", "COPROC":
		return true
	}
	return strings.HasPrefix(name, "BASH_") && !numericBashVars[name] ||
		strings.HasPrefix(name, "COMP_") || strings.HasPrefix(name, "READLINE_")
}

// settingBuiltins are the builtins that set variables named by their
// arguments (read x, printf -v x, getopts spec x, wait -p x) or that run
// code which can set any variable (eval, source, trap, alias). A literal
// name among their words may get any value; a word with an expansion may
// name any variable.
var settingBuiltins = map[string]bool{
	"read": true, "mapfile": true, "readarray": true, "printf": true, "getopts": true, "wait": true,
	"unset": true, "declare": true, "typeset": true, "local": true, "export": true, "readonly": true,
	"let": true, "builtin": true, "command": true, "eval": true, "source": true, ".": true,
	"trap": true, "alias": true, "enable": true, "select": true,
}

// bashReader is splitBash's pass over one syntax tree.
type bashReader struct {
	src   string
	out   []Command
	depth int
	err   error
	// tainted are the names the line may give a value that is not a
	// number; anyTaint, when set, says why every name may hold anything.
	tainted  map[string]bool
	anyTaint string
	// first is how each name first occurs in the script, in the order
	// it is written: set at the top level to a number (true), or
	// otherwise (false: used, or set inside a compound command).
	first map[string]bool
	// cond is set while the statement being read may not run before
	// the ones after it (see stmt).
	cond bool
	// arith are the names arithmetic evaluates, with where: checked
	// once the whole line has been read, since a loop can run an
	// assignment written after the use before it.
	arith []arithName
	// assoc are the names an unconditional declare -A at the top of the
	// line made associative arrays before the words after it, whose
	// subscripts are strings, not arithmetic; declared counts every
	// declaration of a name and unset the names unset (either may make
	// it an indexed array again). assocIndex are the subscripts read as
	// strings, checked as arithmetic after all if that does not hold.
	assoc      map[string]bool
	declared   map[string]int
	unset      map[string]bool
	assocIndex []assocIndex
	// inLiteral is set while arithLiteral reads a string's arithmetic.
	inLiteral bool
}

type assocIndex struct {
	name string
	x    syntax.ArithmExpr
}

type arithName struct {
	name   string
	offset int
}

// splitBash reads line with bash's grammar.
func splitBash(line string) ([]Command, error) {
	cmds, err := readBash(line)
	if err != nil {
		return nil, err
	}
	// bash drops a backslash-newline before it reads tokens, so it joins
	// the two halves of whatever it splits: "$\<newline>'" is the start of
	// $'...' to bash but a lone $ and a quote to the parser. The parser is
	// trusted only where reading the joined line gives the same commands
	// (a continuation inside single quotes or a comment, which bash keeps,
	// then reads as unsure too).
	if joined := dropContinuations(line); joined != line {
		at := strings.Index(line, "\\\n")
		if jcmds, jerr := readBash(joined); jerr != nil || !reflect.DeepEqual(cmds, jcmds) {
			return nil, shellUnsuref(at, "a backslash-newline that bash may read as joining two tokens")
		}
	}
	return cmds, nil
}

// escapedAt says whether the backslash at line[i] is itself escaped: an
// odd number of backslashes run up to it.
func escapedAt(line string, i int) bool {
	n := 0
	for i > 0 && line[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

// dropContinuations drops every unescaped backslash-newline, as bash does
// outside single quotes and comments; blind to quoting, it is only
// compared against (joinContinuations in shell_strict.go knows quoting,
// but only what sh and bash read alike).
func dropContinuations(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' && i+1 < len(line) && line[i+1] == '\n' && !escapedAt(line, i) {
			i++
			continue
		}
		b.WriteByte(line[i])
	}
	return b.String()
}

// readBash reads line with the bash grammar.
func readBash(line string) ([]Command, error) {
	if len(line) > maxBashLine {
		return nil, shellSyntaxErrorf(0, "a line of %d bytes is longer than corral reads as bash", len(line))
	}
	if n := roughNesting(line); n > maxShellNesting {
		return nil, shellSyntaxErrorf(0, "nesting deeper than %d levels", maxShellNesting)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			return nil, shellSyntaxErrorf(int(pe.Pos.Offset()), "bash cannot parse it: %s", pe.Text)
		}
		return nil, shellSyntaxErrorf(0, "bash cannot parse it: %v", err)
	}
	r := &bashReader{src: line, tainted: map[string]bool{}, first: map[string]bool{},
		assoc: map[string]bool{}, declared: map[string]int{}, unset: map[string]bool{}}
	r.stmts(f.Stmts, false)
	for _, a := range r.assocIndex {
		if r.anyTaint != "" || r.declared[a.name] != 1 || r.unset[a.name] {
			r.arithExpr(a.x)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	for _, a := range r.arith {
		if why := r.arithUnsafe(a.name); why != "" {
			return nil, shellUnsuref(a.offset, "arithmetic on %s: %s", a.name, why)
		}
	}
	if len(r.out) == 0 {
		return nil, ErrEmptyCommand
	}
	return r.out, nil
}

// roughNesting is an upper bound on how deeply line nests parentheses,
// braces and backquotes, quotes ignored: it keeps hostile input from
// making the parser recurse without bound.
func roughNesting(line string) int {
	depth, most := 0, 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '(', '{', '`', '[':
			depth++
			most = max(most, depth)
		case ')', '}', ']':
			depth = max(depth-1, 0)
		}
	}
	return most
}

// arithUnsafe says why the value of name may not be a number, or "".
func (r *bashReader) arithUnsafe(name string) string {
	switch {
	case r.anyTaint != "":
		return r.anyTaint
	case r.tainted[name]:
		return "the line gives it a value that may not be a number, and bash evaluates that value as an expression (x='a[$(cmd)]' runs cmd)"
	case numericBashVars[name]:
	case bashWritesText(name):
		return "bash itself sets it to text (the last argument, a match, a folder, a line read), " +
			"and evaluates that value as an expression (x='a[$(cmd)]' runs cmd)"
	case !r.first[name]:
		return "its value may come from outside the script (a parameter, the environment the command line " +
			"around it set, a value bash sets), since the script does not first set it to a number at its top level, " +
			"and bash evaluates it as an expression (x='a[$(cmd)]' runs cmd)"
	}
	return ""
}

func (r *bashReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *bashReader) failf(n syntax.Node, format string, args ...any) {
	r.fail(shellUnsuref(r.offset(n), format, args...))
}

func (r *bashReader) offset(n syntax.Node) int {
	if n == nil || !n.Pos().IsValid() {
		return 0
	}
	return int(n.Pos().Offset())
}

// text is the source of n as written.
func (r *bashReader) text(n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(r.src) || start > end {
		return ""
	}
	return r.src[start:end]
}

// stmts reads a list of statements; cond says a function defined in them
// may not be defined when a later command runs.
func (r *bashReader) stmts(list []*syntax.Stmt, cond bool) {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > maxShellNesting {
		r.fail(shellSyntaxErrorf(0, "nesting deeper than %d levels", maxShellNesting))
		return
	}
	for _, s := range list {
		if r.err != nil {
			return
		}
		r.stmt(s, cond)
	}
}

func (r *bashReader) stmt(s *syntax.Stmt, cond bool) {
	cond = cond || s.Background || s.Negated || s.Coprocess || s.Disown
	prev := r.cond
	r.cond = cond
	defer func() { r.cond = prev }()
	redirects := r.redirects(s.Redirs)
	switch c := s.Cmd.(type) {
	case nil:
		r.out = append(r.out, Command{Redirects: redirects})
	case *syntax.CallExpr:
		r.call(c, redirects)
	case *syntax.DeclClause:
		r.decl(c, redirects, cond)
	default:
		if len(redirects) > 0 {
			// Redirections of a compound command: they apply to
			// all of it.
			r.out = append(r.out, Command{Redirects: redirects})
		}
		r.compound(c, cond)
	}
	for _, rd := range s.Redirs {
		r.nested(rd.Word)
		r.nested(rd.Hdoc)
	}
}

func (r *bashReader) compound(cmd syntax.Command, cond bool) {
	switch c := cmd.(type) {
	case *syntax.Block:
		r.stmts(c.Stmts, true)
	case *syntax.Subshell:
		r.stmts(c.Stmts, true)
	case *syntax.BinaryCmd:
		r.stmtNested(c.X)
		r.stmtNested(c.Y)
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			r.stmts(c.Cond, true)
			r.stmts(c.Then, true)
		}
	case *syntax.WhileClause:
		r.stmts(c.Cond, true)
		r.stmts(c.Do, true)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			r.assignName(l.Name, c.Select || !allNumbers(l.Items), true, true)
			if c.Select {
				r.taint("REPLY")
			}
			for _, w := range l.Items {
				r.nested(w)
			}
		case *syntax.CStyleLoop:
			// The condition and the step run after the body has.
			r.arithExpr(l.Init)
			prev := r.cond
			r.cond = true
			r.arithExpr(l.Cond)
			r.arithExpr(l.Post)
			r.cond = prev
		}
		r.stmts(c.Do, true)
	case *syntax.CaseClause:
		r.nested(c.Word)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				r.nested(p)
			}
			r.stmts(it.Stmts, true)
		}
	case *syntax.FuncDecl:
		if c.Name == nil || len(c.Names) > 0 {
			r.failf(c, "a function definition corral does not read")
			return
		}
		r.out = append(r.out, Command{Function: c.Name.Value, Conditional: cond})
		r.stmtNested(c.Body)
	case *syntax.ArithmCmd:
		r.arithExpr(c.X)
	case *syntax.LetClause:
		for _, x := range c.Exprs {
			r.arithExpr(x)
		}
	case *syntax.TestClause:
		r.test(c.X)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			r.stmt(c.Stmt, cond)
		}
	case *syntax.CoprocClause:
		r.nested(c.Name)
		r.stmtNested(c.Stmt)
	default:
		r.failf(cmd, "a %T command that corral does not read", cmd)
	}
}

// stmtNested reads a statement inside a compound command.
func (r *bashReader) stmtNested(s *syntax.Stmt) {
	if s != nil {
		r.stmts([]*syntax.Stmt{s}, true)
	}
}

func (r *bashReader) call(c *syntax.CallExpr, redirects []Redirect) {
	cmd := Command{Redirects: redirects}
	for _, a := range c.Assigns {
		cmd.Assigns = append(cmd.Assigns, r.assign(a, len(c.Args) == 0))
	}
	if len(c.Args) > 0 {
		prog, _ := r.word(c.Args[0], true)
		if prog == "" && r.err == nil {
			r.failf(c.Args[0], "empty command name")
		}
		cmd.Program = prog
		for i, w := range c.Args[1:] {
			text, expanding := r.word(w, false)
			if expanding {
				cmd.Expanding = append(cmd.Expanding, i)
			}
			cmd.Args = append(cmd.Args, text)
		}
		r.setting(c.Args)
		if prog, ok := literal(c.Args[0]); ok {
			r.callChecks(c, prog, cmd.Args)
		}
	}
	r.out = append(r.out, cmd)
	for _, a := range c.Assigns {
		r.assignNested(a)
	}
	for _, w := range c.Args {
		r.nested(w)
	}
}

// callChecks refuses the builtins that evaluate or run what their words
// hold, where the words do not show it (bashEvaluates), and the ones
// bash reads here as plain commands although corral reads them as
// assignments or arithmetic elsewhere (\declare, command let).
func (r *bashReader) callChecks(c *syntax.CallExpr, prog string, args []string) {
	switch prog {
	case "declare", "typeset", "local", "export", "readonly", "let":
		r.failf(c, "%s written with quotes or a backslash: bash reads its words as a command's, which corral does not read as assignments", prog)
		return
	case "builtin", "command":
		for _, a := range args {
			if settingBuiltins[a] || runningBuiltins[a] {
				r.failf(c, "%s %s: a builtin reached through %s, whose words corral does not read", prog, a, prog)
				return
			}
		}
	}
	if why := bashEvaluates(prog, args); why != "" {
		r.failf(c, "%s", why)
	}
}

// runningBuiltins are bash builtins that can run a command their words
// give (jobs -x, compgen -C, hash -p, trap).
var runningBuiltins = map[string]bool{"jobs": true, "compgen": true, "complete": true, "hash": true, "trap": true}

// setting taints the names a command may set: every literal name among
// the words of a setting builtin, and every name at all where the
// program, or such a builtin's word, is an expansion.
func (r *bashReader) setting(args []*syntax.Word) {
	prog, ok := literal(args[0])
	if !ok {
		r.anyTaint = "the line runs a program whose name is an expansion, which may be a builtin that sets any variable"
		return
	}
	if !settingBuiltins[prog] {
		return
	}
	switch prog {
	case "eval", "source", ".", "trap", "alias", "enable":
		r.anyTaint = prog + " runs code that may set any variable"
		return
	case "mapfile", "readarray":
		for _, w := range args[1:] {
			if s, ok := literal(w); !ok || strings.HasPrefix(s, "-") && strings.Contains(s, "C") {
				r.failf(w, "%s -C runs its callback as shell code (and a word with an expansion may be -C)", prog)
			}
		}
	}
	if prog == "printf" || prog == "wait" {
		// Only printf -v NAME and wait -p NAME set a variable.
		if s, ok := literal(args[min(1, len(args)-1)]); len(args) < 2 || ok && !strings.HasPrefix(s, "-") {
			return
		}
	}
	for _, w := range args[1:] {
		s, ok := literal(w)
		if !ok {
			r.anyTaint = fmt.Sprintf("%s is given a word with an expansion, which may name any variable", prog)
			return
		}
		if n := shellNameLen(s); n > 0 {
			r.taint(s[:n])
			r.unset[s[:n]] = r.unset[s[:n]] || prog == "unset" || prog == "builtin" || prog == "command"
		}
	}
}

func (r *bashReader) decl(c *syntax.DeclClause, redirects []Redirect, cond bool) {
	variant := c.Variant.Value
	cmd := Command{Program: variant, Redirects: redirects}
	assoc := false
	for _, a := range c.Args {
		if s, ok := literal(a.Value); a.Naked && a.Name == nil && ok && strings.HasPrefix(s, "-") && strings.Contains(s, "A") {
			assoc = !cond && r.depth == 1 && (variant == "declare" || variant == "typeset")
		}
		if a.Name != nil {
			r.declared[a.Name.Value]++
			// Only the name's first occurrence, and a declare that
			// runs (a failed redirection skips it), makes it
			// associative.
			if _, seen := r.first[a.Name.Value]; assoc && !seen && len(redirects) == 0 {
				r.assoc[a.Name.Value] = true
			}
		}
	}
	for i, a := range c.Args {
		var text string
		switch {
		case a.Naked && a.Name == nil:
			// An option, or a word with an expansion.
			var expanding bool
			text, expanding = r.word(a.Value, false)
			if expanding {
				cmd.Expanding = append(cmd.Expanding, i)
			}
			s, ok := literal(a.Value)
			switch {
			case !ok:
				r.failf(a, "%s is given a word with an expansion, which may be an option (-n, -i) or name any variable", variant)
			case (variant == "declare" || variant == "typeset" || variant == "local") &&
				(strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+")) && strings.ContainsAny(s, "in"):
				r.failf(a, "%s %s: an integer variable (-i) or a name reference (-n) makes bash evaluate later "+
					"assignments or uses as arithmetic, on names' values too (x='a[$(cmd)]' runs cmd)", variant, s)
			}
		case a.Naked:
			// declare x keeps the value x had (the environment's).
			text = a.Name.Value
			r.assignName(a.Name, false, false, false)
		default:
			text = r.assign(a, true)
			if a.Value != nil && hasExpansion(a.Value) {
				cmd.Expanding = append(cmd.Expanding, i)
			}
		}
		cmd.Args = append(cmd.Args, text)
	}
	if why := bashEvaluates(variant, cmd.Args); why != "" {
		r.failf(c, "%s", why)
	}
	r.out = append(r.out, cmd)
	for _, a := range c.Args {
		r.assignNested(a)
	}
}

// assign reads NAME=value (or NAME[i]=value, NAME+=value, NAME=(...)),
// records whether the value is a number, and returns it as written with
// the value's quotes removed.
func (r *bashReader) assign(a *syntax.Assign, top bool) string {
	if a.Name == nil {
		r.failf(a, "an assignment without a name")
		return ""
	}
	if why := evalVarWhy(a.Name.Value); why != "" {
		r.failf(a, "%s", why)
	}
	text := a.Name.Value
	if a.Index != nil {
		// One element: the others keep what they held.
		text += "[" + r.text(a.Index) + "]"
		top = false
	}
	if a.Append {
		text += "+"
	}
	text += "="
	switch {
	case a.Array != nil:
		text += r.text(a.Array)
		numeric := true
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				r.index(a.Name.Value, e.Index)
			}
			numeric = numeric && e.Value != nil && isNumberWord(e.Value)
		}
		r.assignName(a.Name, !numeric, top, false)
	case a.Value != nil:
		v, _ := r.word(a.Value, false)
		text += v
		r.assignName(a.Name, !isNumberWord(a.Value), top, false)
	default:
		r.assignName(a.Name, false, top, false)
	}
	if a.Index != nil {
		r.index(a.Name.Value, a.Index)
	}
	return text
}

func (r *bashReader) assignNested(a *syntax.Assign) {
	r.nested(a.Value)
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			r.nested(e.Value)
		}
	}
}

// assignName records an assignment to name; mayText says its value may
// not be a number, top that it is a statement of the script's own top
// level (not a prefix of a command, which sets only its environment).
// hidden says no segment shows the assignment (for NAME in, ${x:=...},
// arithmetic): there PATH and the hash table may not be set.
func (r *bashReader) assignName(name *syntax.Lit, mayText, top, hidden bool) {
	if name == nil {
		return
	}
	if why := evalVarWhy(name.Value); why != "" {
		r.failf(name, "%s", why)
	}
	if why := hiddenAssignWhy(name.Value); hidden && why != "" {
		r.failf(name, "%s", why)
	}
	r.occur(name.Value, top && !mayText)
	if mayText {
		r.tainted[name.Value] = true
	}
}

// occur records an occurrence of name: a top-level numeric assignment or
// anything else.
func (r *bashReader) occur(name string, topNumber bool) {
	if _, ok := r.first[name]; !ok {
		r.first[name] = topNumber && r.depth == 1 && !r.cond
	}
}

func (r *bashReader) taint(name string) {
	if why := evalVarWhy(name); why != "" {
		r.fail(shellUnsuref(0, "%s", why))
	}
	r.occur(name, false)
	r.tainted[name] = true
}

// hiddenAssignWhy says why a script may not set name where no segment
// shows it: PATH and CDPATH change which program or folder a later word
// names.
func hiddenAssignWhy(name string) string {
	if name == "PATH" || name == "CDPATH" {
		return "sets " + name + " where no command shows it (for " + name + " in, ${" + name + ":=...}, arithmetic), which changes what later names run"
	}
	return ""
}

// redirects converts a statement's redirections.
func (r *bashReader) redirects(list []*syntax.Redirect) []Redirect {
	var out []Redirect
	for _, rd := range list {
		op := rd.Op.String()
		switch rd.Op {
		case syntax.DashHdoc:
			op = "<<"
		case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.DplOut,
			syntax.RdrClob, syntax.Hdoc, syntax.WordHdoc, syntax.RdrAll, syntax.AppAll:
		default:
			r.failf(rd, "the redirection %s, which corral does not read", op)
			continue
		}
		if rd.N != nil && !isDigits(rd.N.Value) {
			// {NAME}>FILE sets NAME to the new descriptor's number:
			// PATH too, and a subscript in it is arithmetic.
			r.failf(rd, "a {NAME} redirection (%s), which sets NAME", rd.N.Value)
			continue
		}
		target, _ := r.word(rd.Word, false)
		out = append(out, Redirect{Op: op, Target: target})
	}
	return out
}

// word returns w without its quotes, expansions kept as written, and
// whether the shell decides how it starts (Command.Expanding). prog says
// w is a program name.
func (r *bashReader) word(w *syntax.Word, prog bool) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	expanding := false
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && p.Value != "" && (strings.IndexByte("*?[", p.Value[0]) >= 0 || p.Value[0] == '{' && braceLike(p.Value)) {
				expanding = true
			}
			b.WriteString(unescapeLit(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				s, err := ansiC(p.Value)
				if err != nil {
					r.failf(p, "%v", err)
				}
				b.WriteString(s)
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				r.failf(p, "%s", whyTranslated)
			}
			for j, q := range p.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeLit(lit.Value, true))
					continue
				}
				if i == 0 && j == 0 {
					expanding = true
				}
				b.WriteString(r.text(q))
			}
		case *syntax.ExtGlob:
			if prog {
				r.failf(p, "a program name that is an extended glob")
			}
			r.extGlob(p)
			expanding = true
			b.WriteString(r.text(p))
		case *syntax.ProcSubst:
			// A /dev/fd path.
			b.WriteString(r.text(p))
		default:
			// $x, ${...}, $(...), `...`, $((...)): unquoted, the
			// shell splits their values into words.
			expanding = true
			b.WriteString(r.text(p))
		}
	}
	return b.String(), expanding
}

// nested reads what runs inside w: command and process substitutions,
// and the arithmetic and ${...} forms that bash evaluates.
func (r *bashReader) nested(w *syntax.Word) {
	if w == nil {
		return
	}
	syntax.Walk(w, func(n syntax.Node) bool {
		if r.err != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			r.stmts(n.Stmts, true)
			return false
		case *syntax.ProcSubst:
			r.stmts(n.Stmts, true)
			return false
		case *syntax.ArithmExp:
			r.arithExpr(n.X)
			return false
		case *syntax.ParamExp:
			r.param(n)
			return false
		case *syntax.DblQuoted:
			if n.Dollar {
				r.failf(n, "%s", whyTranslated)
			}
		case *syntax.ExtGlob:
			r.extGlob(n)
		}
		return true
	})
}

// extGlob refuses a pattern @(...) that holds an expansion: the parser
// keeps it as text, but bash (in [[ == ]] always) expands it and runs its
// command substitutions.
func (r *bashReader) extGlob(g *syntax.ExtGlob) {
	if g.Pattern != nil && strings.ContainsAny(g.Pattern.Value, "$`") {
		r.failf(g, "a pattern %s...) with an expansion in it, whose command substitutions bash runs", g.Op)
	}
}

// param reads ${...}: the forms that evaluate a value again are refused,
// an index or offset is arithmetic, and the words in it are read.
func (r *bashReader) param(p *syntax.ParamExp) {
	switch {
	case p.Excl && p.Names == 0 && !isAllIndex(p.Index):
		r.failf(p, "${!x} indirection, where bash evaluates the named variable's subscript")
		return
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		if s, _ := literal(p.Exp.Word); s != "Q" && s != "E" && s != "A" && s != "a" && s != "U" && s != "u" && s != "L" && s != "K" && s != "k" {
			r.failf(p, "${x@%s}: bash's ${x@P} runs the command substitutions in x's value", s)
		}
		return
	case p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull):
		// Only where it was unset or empty: the environment's value
		// stays.
		r.assignName(p.Param, p.Exp.Word == nil || !isNumberWord(p.Exp.Word), false, true)
	}
	if p.Index != nil && p.Param != nil {
		r.index(p.Param.Value, p.Index)
	}
	if p.Slice != nil {
		r.arithExpr(p.Slice.Offset)
		r.arithExpr(p.Slice.Length)
	}
	// The words of ${x:-...}, ${x/.../...} and the rest expand only
	// sometimes: what they set is not set for sure.
	prev := r.cond
	r.cond = true
	if p.Exp != nil {
		r.nested(p.Exp.Word)
	}
	if p.Repl != nil {
		r.nested(p.Repl.Orig)
		r.nested(p.Repl.With)
	}
	r.cond = prev
}

// arithExpr reads arithmetic: every name in it is checked once the line
// is read, and a value that is not a name or a number is refused.
func (r *bashReader) arithExpr(x syntax.ArithmExpr) {
	if x == nil || r.err != nil {
		return
	}
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		// x = y evaluates y, then sets x; x += y reads x first.
		switch {
		case x.Op == syntax.Assgn:
			r.arithExpr(x.Y)
			r.arithAssigned(x.X)
			return
		case isArithAssign(x.Op):
			r.arithExpr(x.X)
			r.arithExpr(x.Y)
			r.arithAssigned(x.X)
			return
		}
		r.arithExpr(x.X)
		if x.Op == syntax.AndArit || x.Op == syntax.OrArit || x.Op == syntax.TernQuest || x.Op == syntax.TernColon {
			// Evaluated only sometimes.
			prev := r.cond
			r.cond = true
			r.arithExpr(x.Y)
			r.cond = prev
			return
		}
		r.arithExpr(x.Y)
	case *syntax.UnaryArithm:
		r.arithExpr(x.X)
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			r.arithAssigned(x.X)
		}
	case *syntax.ParenArithm:
		r.arithExpr(x.X)
	case *syntax.Word:
		r.arithWord(x)
	default:
		r.failf(x, "arithmetic corral does not read")
	}
}

func isArithAssign(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
		syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn,
		syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
		return true
	}
	return false
}

// arithAssigned records the target of an arithmetic assignment (x=1,
// x+=2, x++), which holds a number after it.
func (r *bashReader) arithAssigned(x syntax.ArithmExpr) {
	w, ok := x.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		return
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		if shellNameLen(p.Value) == len(p.Value) {
			r.assignName(p, false, true, true)
		}
	case *syntax.ParamExp:
		// An element: the others keep what they held.
		r.assignName(p.Param, false, false, true)
		if p.Index != nil {
			r.index(p.Param.Value, p.Index)
		}
	}
}

// arithWord reads one operand of arithmetic, or a word that [[ -eq ]]
// evaluates as arithmetic: a number, a name or a plain $name.
func (r *bashReader) arithWord(w *syntax.Word) {
	parts := w.Parts
	if len(parts) == 1 {
		if q, ok := parts[0].(*syntax.DblQuoted); ok && !q.Dollar {
			parts = q.Parts
		}
	}
	if len(parts) != 1 {
		r.failf(w, "%s", whyArith)
		return
	}
	switch p := parts[0].(type) {
	case *syntax.Lit:
		switch {
		case isArithNumber(p.Value):
		case shellNameLen(p.Value) == len(p.Value):
			r.occur(p.Value, false)
			r.arith = append(r.arith, arithName{name: p.Value, offset: r.offset(p)})
		default:
			r.arithLiteral(p.Value, w)
		}
	case *syntax.SglQuoted:
		if p.Dollar {
			r.failf(w, "%s", whyArith)
			return
		}
		r.arithLiteral(p.Value, w)
	case *syntax.ParamExp:
		if p.Excl || p.Exp != nil || p.Repl != nil || p.Slice != nil || p.Names != 0 || p.Param == nil {
			r.failf(w, "%s", whyArith)
			return
		}
		if p.Length {
			// ${#x} is a number.
			return
		}
		r.occur(p.Param.Value, false)
		r.arith = append(r.arith, arithName{name: p.Param.Value, offset: r.offset(p)})
		if p.Index != nil {
			r.index(p.Param.Value, p.Index)
		}
	case *syntax.ArithmExp:
		r.arithExpr(p.X)
	default:
		// A command substitution's output, a quoted string: bash
		// evaluates whatever text it is.
		r.failf(w, "%s", whyArith)
	}
}

// arithLiteral reads text that bash evaluates as arithmetic (let 'x = 1',
// [[ "1+1" -eq 2 ]]): names and numbers only, without a subscript.
func (r *bashReader) arithLiteral(text string, at syntax.Node) {
	if r.inLiteral || strings.ContainsAny(text, "$`[\\'\"") {
		// A literal inside a literal is one the parser could not
		// split into names, numbers and operators.
		r.failf(at, "%s", whyArith)
		return
	}
	r.inLiteral = true
	defer func() { r.inLiteral = false }()
	x, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Arithmetic(strings.NewReader(text))
	if err != nil {
		r.failf(at, "arithmetic bash cannot parse: %q", text)
		return
	}
	start := len(r.arith)
	r.arithExpr(x)
	for i := start; i < len(r.arith); i++ {
		r.arith[i].offset = r.offset(at)
	}
}

// index reads the subscript x of the array name: a string for an
// associative array (its substitutions run), arithmetic otherwise.
func (r *bashReader) index(name string, x syntax.ArithmExpr) {
	r.occur(name, false)
	switch {
	case isAllIndex(x):
	case r.assoc[name]:
		r.assocIndex = append(r.assocIndex, assocIndex{name: name, x: x})
		syntax.Walk(x, func(n syntax.Node) bool {
			if w, ok := n.(*syntax.Word); ok {
				r.nested(w)
				return false
			}
			return true
		})
	default:
		r.arithExpr(x)
	}
}

// hasExpansion reports whether w holds a parameter, command or
// arithmetic expansion.
func hasExpansion(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst:
			found = true
		}
		return !found
	})
	return found
}

// test reads [[ ... ]]: its words are read for what runs in them, the
// operands of -eq, -lt, ... are arithmetic, and -v's is a name whose
// subscript bash evaluates.
func (r *bashReader) test(x syntax.TestExpr) {
	if x == nil || r.err != nil {
		return
	}
	switch x := x.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, y := range []syntax.TestExpr{x.X, x.Y} {
				if w, ok := y.(*syntax.Word); ok {
					r.arithWord(w)
				} else {
					r.failf(x, "%s", whyArith)
				}
			}
		}
		r.test(x.X)
		r.test(x.Y)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			if w, ok := x.X.(*syntax.Word); ok {
				if s, ok := literal(w); !ok || !plainSubscript(s) {
					r.failf(x, "[[ -v NAME[...] ]]: bash evaluates the subscript as arithmetic, on names' values too")
				}
			}
		}
		r.test(x.X)
	case *syntax.ParenTest:
		r.test(x.X)
	case *syntax.Word:
		r.nested(x)
	}
}

// literal returns w's value when it has no expansion in it.
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if strings.ContainsAny(v, "*?") || strings.Contains(v, "[") && strings.Contains(v, "]") && v != "[" && v != "[[" ||
				braceLike(v) || strings.HasPrefix(v, "~") {
				return "", false
			}
			b.WriteString(unescapeLit(v, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				s, err := ansiC(p.Value)
				if err != nil {
					return "", false
				}
				b.WriteString(s)
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescapeLit(lit.Value, true))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// isNumberWord reports whether w is an integer or a $((...)) alone: a
// value arithmetic can evaluate without running anything.
func isNumberWord(w *syntax.Word) bool {
	if len(w.Parts) == 1 {
		if _, ok := w.Parts[0].(*syntax.ArithmExp); ok {
			return true
		}
	}
	s, ok := literal(w)
	return ok && isArithNumber(s)
}

func allNumbers(words []*syntax.Word) bool {
	for _, w := range words {
		if !isNumberWord(w) {
			return false
		}
	}
	return len(words) > 0
}

// isArithNumber reports whether s is an integer constant as bash's
// arithmetic reads one (7, -7, 0x1f, 017, 16#ff), or empty (zero).
func isArithNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return true
	}
	if s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '#' && c != '_' && c != '@' {
			return false
		}
	}
	return true
}

// isAllIndex reports whether an index is [@] or [*].
func isAllIndex(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		return false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	return ok && (lit.Value == "@" || lit.Value == "*")
}

// braceLike reports whether an unquoted literal holds a brace expansion
// ({a,b}, {1..3}).
func braceLike(s string) bool {
	open := strings.IndexByte(s, '{')
	return open >= 0 && strings.ContainsAny(s[open:], ",.")
}

// unescapeLit removes the backslashes bash removes from a literal: any
// outside double quotes, inside them only before $ ` " \ and newline;
// a backslash-newline is removed whole.
func unescapeLit(s string, inDouble bool) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++
		case !inDouble || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ansiC decodes the body of $'...' as bash does. \c (a control
// character) and \u/\U are refused rather than decoded differently.
func ansiC(s string) (string, error) {
	if !strings.Contains(s, "\\") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && isHexDigit(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteString("\\x")
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 8)
			if v == 0 {
				return b.String(), nil
			}
			b.WriteByte(byte(v))
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			if v == 0 {
				// bash ends the string at a NUL.
				return b.String(), nil
			}
			b.WriteByte(byte(v))
			i = j - 1
		case 'c', 'u', 'U':
			return "", fmt.Errorf("the escape \\%c in $'...', which corral does not decode", c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// lineShell is the shell that reads a line.
type lineShell uint8

const (
	// shEither is sh -c's script (and zsh's, fish's, su -c's) and the
	// line itself: read only where dash and bash read it alike.
	shEither lineShell = iota
	// shBash is bash -c's script, read with bash's grammar.
	shBash
)

// splitLine splits line as sh reads it. The reader in shell.go comes
// first, since what it reads both shells read alike; bash's lines it
// cannot follow are read with bash's grammar.
func splitLine(line string, sh lineShell) ([]Command, error) {
	cmds, err := SplitCommandLine(line)
	if err == nil || sh == shEither || errors.Is(err, ErrEmptyCommand) {
		return cmds, err
	}
	return splitBash(line)
}

// nestedShell is the shell that reads the line r runs.
func nestedShell(r nestedRun) lineShell {
	if r.bash {
		return shBash
	}
	return shEither
}
