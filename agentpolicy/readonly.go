package agentpolicy

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"corral.dev/corral/policyengine"
)

// The built-in list allows a command without a rule only when every
// option it is given is one corral knows to be read-only. Options are read
// the way the program reads them (getopt_long: "--compress-p=sh" IS
// --compress-program=sh, "-uo x" is -u -o x), so an abbreviation or a
// bundle cannot hide an option that writes files or runs programs; an
// option corral does not know, a value that looks like an option, or a
// leading NAME=value assignment (GIT_EXTERNAL_DIFF=..., LD_PRELOAD=...)
// means "ask", never "allow".

// readOnlyCommand is one command of the built-in list.
type readOnlyCommand struct {
	// spec knows the command's options: the safe ones and, for programs
	// that take abbreviations, every other long option too, so that a
	// prefix resolves as the program resolves it.
	spec policyengine.OptSpec
	// unsafe are the options in spec that write files, run programs or
	// change the system.
	unsafe []string
	// numeric allows "-5" (head -5, grep -3, git log -5).
	numeric bool
	// check replaces spec for a command with its own grammar (find).
	check func(args []string) error
}

type longs = map[string]policyengine.ArgKind

const (
	no  = policyengine.NoArg
	req = policyengine.RequiredArg
	opt = policyengine.OptionalArg
)

// gnu is a GNU program's options: options after operands count, and a
// unique prefix of a long option is that option.
func gnu(short string, long longs, unsafe ...string) readOnlyCommand {
	long["help"], long["version"] = no, no
	return readOnlyCommand{spec: policyengine.OptSpec{Short: short, Long: long, Permute: true}, unsafe: unsafe}
}

// exact is a program whose parser takes only whole option names (git's
// options are read so here; rg's parser takes no abbreviations).
func exact(short string, long longs) readOnlyCommand {
	return readOnlyCommand{spec: policyengine.OptSpec{Short: short, Long: long, Permute: true, Exact: true}}
}

func withNumeric(c readOnlyCommand) readOnlyCommand { c.numeric = true; return c }

// readOnlyCommands are the built-in list's commands ("git status" for a
// git subcommand) and the options each may take.
var readOnlyCommands = sync.OnceValue(func() map[string]readOnlyCommand {
	return map[string]readOnlyCommand{
		"pwd":    gnu("LP", longs{"logical": no, "physical": no}),
		"whoami": gnu("", longs{}),
		"uname": gnu("asnrvmpio", longs{"all": no, "kernel-name": no, "nodename": no, "kernel-release": no,
			"kernel-version": no, "machine": no, "processor": no, "hardware-platform": no, "operating-system": no}),
		"cat": gnu("AbeEnstTuv", longs{"show-all": no, "number-nonblank": no, "show-ends": no, "number": no,
			"squeeze-blank": no, "show-tabs": no, "show-nonprinting": no}),
		"head": withNumeric(gnu("c:n:qvz", longs{"bytes": req, "lines": req, "quiet": no, "silent": no,
			"verbose": no, "zero-terminated": no})),
		"tail": withNumeric(gnu("c:fFn:qs:vz", longs{"bytes": req, "follow": opt, "lines": req,
			"max-unchanged-stats": req, "pid": req, "quiet": no, "retry": no, "silent": no,
			"sleep-interval": req, "verbose": no, "zero-terminated": no, "debug": no})),
		"wc": gnu("cmlLw", longs{"bytes": no, "chars": no, "lines": no, "max-line-length": no, "words": no,
			"files0-from": req, "total": req, "debug": no}),
		"stat": gnu("c:fLtZ", longs{"cached": req, "dereference": no, "file-system": no, "format": req,
			"printf": req, "terse": no, "context": no}),
		"date": gnu("d:f:I::r:Rs:u", longs{"date": req, "debug": no, "file": req, "iso-8601": opt,
			"resolution": no, "reference": req, "rfc-email": no, "rfc-3339": req, "set": req,
			"universal": no, "utc": no}, "-s", "--set"),
		"ls": gnu("aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1", longs{"all": no, "almost-all": no, "author": no,
			"block-size": req, "classify": opt, "color": opt, "context": no, "dereference": no,
			"dereference-command-line": no, "dereference-command-line-symlink-to-dir": no, "directory": no,
			"dired": no, "escape": no, "file-type": no, "format": req, "full-time": no,
			"group-directories-first": no, "hide-control-chars": no, "hide": req, "human-readable": no,
			"hyperlink": opt, "ignore-backups": no, "ignore": req, "indicator-style": req, "inode": no,
			"kibibytes": no, "literal": no, "no-group": no, "numeric-uid-gid": no, "quote-name": no,
			"quoting-style": req, "recursive": no, "reverse": no, "show-control-chars": no, "si": no,
			"size": no, "sort": req, "tabsize": req, "time": req, "time-style": req, "width": req, "zero": no}),
		"grep": withNumeric(gnu("A:B:C:D:EFGHIPTUVZabcd:e:f:hiLlm:noqRrsuvwxyz", longs{"after-context": req,
			"basic-regexp": no, "before-context": req, "binary": no, "binary-files": req, "byte-offset": no,
			"color": opt, "colour": opt, "context": req, "count": no, "dereference-recursive": no,
			"devices": req, "directories": req, "exclude-dir": req, "exclude-from": req, "exclude": req,
			"extended-regexp": no, "file": req, "files-with-matches": no, "files-without-match": no,
			"fixed-strings": no, "group-separator": req, "ignore-case": no, "include": req, "initial-tab": no,
			"invert-match": no, "label": req, "line-buffered": no, "line-number": no, "line-regexp": no,
			"max-count": req, "no-filename": no, "no-group-separator": no, "no-ignore-case": no,
			"no-messages": no, "null": no, "null-data": no, "only-matching": no, "perl-regexp": no,
			"quiet": no, "recursive": no, "regexp": req, "silent": no, "text": no, "with-filename": no,
			"word-regexp": no}, "-D", "--devices")),
		"sort": gnu("bcCdfghik:mMno:rRsS:t:T:uVz", longs{"batch-size": req, "buffer-size": req, "check": opt,
			"compress-program": req, "debug": no, "dictionary-order": no, "field-separator": req,
			"files0-from": req, "general-numeric-sort": no, "human-numeric-sort": no, "ignore-case": no,
			"ignore-leading-blanks": no, "ignore-nonprinting": no, "key": req, "merge": no, "month-sort": no,
			"numeric-sort": no, "output": req, "parallel": req, "random-sort": no, "random-source": req,
			"reverse": no, "sort": req, "stable": no, "temporary-directory": req, "unique": no,
			"version-sort": no, "zero-terminated": no},
			"-o", "--output", "--compress-program", "-T", "--temporary-directory"),
		"file": gnu("0bcCdEef:F:hiklLm:NnpP:rsSvzZ", longs{"apple": no, "brief": no, "checking-printout": no,
			"compile": no, "debug": no, "dereference": no, "exclude": req, "exclude-quiet": req,
			"extension": no, "files-from": req, "keep-going": no, "list": no, "magic-file": req, "mime": no,
			"mime-encoding": no, "mime-type": no, "no-buffer": no, "no-dereference": no, "no-pad": no,
			"no-sandbox": no, "parameter": req, "preserve-date": no, "print0": no, "raw": no,
			"separator": req, "special-files": no, "uncompress": no, "uncompress-noreport": no},
			// -z and -Z run decompressors, -C writes FILE.mgc, -p sets times.
			"-C", "--compile", "-z", "--uncompress", "-Z", "--uncompress-noreport", "-p", "--preserve-date", "--no-sandbox"),
		"rg": exact("A:B:C:E:FHILM:NPSTUVabcd:e:f:g:hij:lm:noqr:st:uvwx0", longs{"after-context": req,
			"before-context": req, "context": req, "case-sensitive": no, "color": req, "colors": req,
			"column": no, "no-column": no, "count": no, "count-matches": no, "encoding": req, "files": no,
			"files-with-matches": no, "files-without-match": no, "fixed-strings": no, "follow": no,
			"glob": req, "iglob": req, "hidden": no, "ignore-case": no, "invert-match": no, "json": no,
			"line-number": no, "no-line-number": no, "max-count": req, "max-depth": req, "max-filesize": req,
			"multiline": no, "heading": no, "no-heading": no, "no-ignore": no, "no-ignore-vcs": no,
			"no-config": no, "null": no, "only-matching": no, "pretty": no, "quiet": no, "regexp": req,
			"replace": req, "smart-case": no, "sort": req, "sortr": req, "stats": no, "text": no,
			"threads": req, "type": req, "type-not": req, "type-list": no, "unrestricted": no,
			"vimgrep": no, "with-filename": no, "no-filename": no, "word-regexp": no, "line-regexp": no,
			"trim": no, "passthru": no, "no-messages": no, "word": no, "help": no, "version": no}),
		"find": {check: findReadOnly},

		"git status": exact("bsu::vz", longs{"short": no, "branch": no, "porcelain": opt, "long": no,
			"verbose": no, "untracked-files": opt, "ignored": opt, "ignore-submodules": opt, "ahead-behind": no,
			"no-ahead-behind": no, "renames": no, "no-renames": no, "show-stash": no, "column": opt,
			"no-column": no, "null": no}),
		"git diff":      exact(gitDiffShort, gitDiffLong(longs{"cached": no, "staged": no, "merge-base": no})),
		"git show":      withNumeric(exact(gitDiffShort, gitDiffLong(gitLogLong(longs{})))),
		"git log":       withNumeric(exact(gitDiffShort+"n:", gitDiffLong(gitLogLong(longs{})))),
		"git rev-parse": exact("q", longs{"show-toplevel": no, "abbrev-ref": opt, "short": opt, "verify": no, "quiet": no, "git-dir": no, "show-prefix": no, "show-cdup": no, "is-inside-work-tree": no, "is-inside-git-dir": no, "is-bare-repository": no, "is-shallow-repository": no, "absolute-git-dir": no, "git-common-dir": no, "symbolic": no, "symbolic-full-name": no, "all": no, "branches": no, "tags": no, "remotes": no, "sq": no, "show-superproject-working-tree": no, "show-object-format": no, "local-env-vars": no}),
		"git ls-files": exact("cdmoiskuztvfx:X:", longs{"cached": no, "deleted": no, "modified": no, "others": no,
			"ignored": no, "stage": no, "unmerged": no, "killed": no, "full-name": no, "directory": no,
			"no-empty-directory": no, "exclude": opt, "exclude-from": opt, "exclude-standard": no, "error-unmatch": no,
			"abbrev": opt, "debug": no, "eol": no, "deduplicate": no, "sparse": no, "recurse-submodules": no, "format": opt}),
		"git grep": withNumeric(exact("nivwlLcEFGPhHIrozaWpqe:f:A:B:C:m:", longs{"line-number": no,
			"ignore-case": no, "word-regexp": no, "invert-match": no, "files-with-matches": no,
			"name-only": no, "files-without-match": no, "count": no, "extended-regexp": no,
			"fixed-strings": no, "basic-regexp": no, "perl-regexp": no, "cached": no, "untracked": no,
			"no-index": no, "full-name": no, "max-depth": opt, "recursive": no, "no-recursive": no,
			"only-matching": no, "quiet": no, "and": no, "or": no, "not": no, "all-match": no,
			"heading": no, "break": no, "show-function": no, "function-context": no, "color": opt,
			"no-color": no, "null": no, "column": no, "text": no, "threads": opt, "exclude-standard": no,
			"recurse-submodules": no, "after-context": req, "before-context": req, "context": req,
			"max-count": req})),
	}
})

// gitSafeGlobals are the git options before the subcommand that change
// nothing but output and locking ("git --no-pager log"); -c, -C,
// --exec-path, --git-dir and the rest need confirmation.
var gitSafeGlobals = []string{"--no-pager", "-P", "--no-optional-locks", "--no-replace-objects",
	"--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs"}

// gitDiffShort are git diff's safe short options (-U3, -M50%, -Sfoo,
// -Gre take their value attached).
const gitDiffShort = "pusRzawbWU::M::C::B::S::G::l::"

// gitDiffLong adds the diff options that only read and format to l. Git
// takes "--name=value"; values are taken only attached here, so the
// "=value" forms are listed as options with an optional value.
func gitDiffLong(l longs) longs {
	for _, n := range []string{"patch", "no-patch", "raw", "patch-with-raw", "patch-with-stat", "numstat",
		"shortstat", "summary", "name-only", "name-status", "no-renames", "full-index", "binary",
		"check", "compact-summary", "minimal", "patience", "histogram", "ignore-all-space",
		"ignore-space-change", "ignore-space-at-eol", "ignore-blank-lines", "ignore-cr-at-eol",
		"text", "no-color", "color-words", "no-prefix", "default-prefix", "function-context",
		"exit-code", "quiet", "pickaxe-all", "pickaxe-regex", "no-ext-diff", "no-textconv",
		"irreversible-delete", "indent-heuristic", "no-indent-heuristic", "no-relative", "cumulative"} {
		l[n] = no
	}
	for _, n := range []string{"stat", "dirstat", "unified", "color", "word-diff", "word-diff-regex",
		"relative", "diff-filter", "abbrev", "find-renames", "find-copies", "break-rewrites",
		"diff-algorithm", "inter-hunk-context", "src-prefix", "dst-prefix", "ignore-submodules",
		"submodule", "anchored", "stat-width", "stat-count", "color-moved", "line-prefix"} {
		l[n] = opt
	}
	return l
}

// gitLogLong adds git log's and show's safe revision and format options.
func gitLogLong(l longs) longs {
	for _, n := range []string{"oneline", "graph", "all", "branches", "tags", "remotes", "reverse",
		"first-parent", "merges", "no-merges", "follow", "abbrev-commit", "no-abbrev-commit",
		"no-walk", "left-right", "cherry-pick", "cherry-mark", "topo-order", "date-order",
		"author-date-order", "name-only", "source", "full-history", "simplify-merges",
		"ancestry-path", "boundary", "regexp-ignore-case", "extended-regexp", "fixed-strings",
		"all-match", "invert-grep", "log-size", "no-notes", "mailmap", "use-mailmap", "no-decorate",
		"parents", "children", "relative-date", "walk-reflogs", "show-pulls", "dense", "sparse"} {
		l[n] = no
	}
	for _, n := range []string{"max-count", "skip", "since", "until", "after", "before", "author",
		"committer", "grep", "format", "pretty", "date", "decorate", "encoding", "min-parents",
		"max-parents", "since-as-filter", "exclude", "glob", "expand-tabs"} {
		l[n] = opt
	}
	return l
}

// findPrimaries are find's read-only options, tests and actions, with how
// many words each takes; -exec, -ok, -delete, -fprint and -fls are not.
var findPrimaries = map[string]int{
	"-H": 0, "-L": 0, "-P": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, "-not": 0, "!": 0, "(": 0, ")": 0,
	",": 0, "-depth": 0, "-d": 0, "-daystart": 0, "-empty": 0, "-executable": 0, "-false": 0,
	"-true": 0, "-follow": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0, "-mount": 0,
	"-xdev": 0, "-noleaf": 0, "-nogroup": 0, "-nouser": 0, "-print": 0, "-print0": 0, "-ls": 0,
	"-prune": 0, "-quit": 0, "-readable": 0, "-writable": 0, "-warn": 0, "-nowarn": 0,
	"-amin": 1, "-anewer": 1, "-atime": 1, "-cmin": 1, "-cnewer": 1, "-ctime": 1, "-fstype": 1,
	"-gid": 1, "-group": 1, "-ilname": 1, "-iname": 1, "-inum": 1, "-ipath": 1, "-iregex": 1,
	"-iwholename": 1, "-links": 1, "-lname": 1, "-maxdepth": 1, "-mindepth": 1, "-mmin": 1,
	"-mtime": 1, "-name": 1, "-newer": 1, "-path": 1, "-perm": 1, "-printf": 1, "-regex": 1,
	"-regextype": 1, "-samefile": 1, "-size": 1, "-type": 1, "-uid": 1, "-used": 1, "-user": 1,
	"-wholename": 1, "-xtype": 1, "-context": 1,
}

// findReadOnly accepts find's paths and read-only expression.
func findReadOnly(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		n, ok := findPrimaries[a]
		if !ok && len(a) == len("-newerXY") && strings.HasPrefix(a, "-newer") {
			n, ok = 1, true // -newermt DATE and the like
		}
		switch {
		case ok:
			i += n
		case strings.HasPrefix(a, "-"):
			return fmt.Errorf("find %s is not on the read-only list", a)
		}
	}
	return nil
}

// readOnlyArgs reports why the command's arguments are not all read-only
// options and operands, or nil.
func (c readOnlyCommand) readOnlyArgs(args []string) error {
	if c.check != nil {
		return c.check(args)
	}
	var rest []string
	for _, a := range args {
		if c.numeric && len(a) > 1 && a[0] == '-' && isNumber(a[1:]) {
			continue // head -5, git log -3
		}
		rest = append(rest, a)
	}
	opts, _, err := c.spec.Parse(rest)
	if err != nil {
		return err
	}
	for _, o := range opts {
		if slices.Contains(c.unsafe, o.Name) {
			return fmt.Errorf("%s writes files or runs programs", o.Name)
		}
		if o.Next && strings.HasPrefix(o.Value, "-") && !isNumber(o.Value[1:]) {
			return fmt.Errorf("the value %q of %s looks like an option", o.Value, o.Name)
		}
	}
	return nil
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readOnly reports whether the built-in allowlist covers the segment.
func readOnly(seg segment) bool {
	if seg.redir || seg.assigns || len(seg.words) == 0 {
		return false
	}
	name, args := seg.words[0], seg.words[1:]
	first := 1 // index in words of args[0]
	if name == "git" {
		for len(args) > 0 && slices.Contains(gitSafeGlobals, args[0]) {
			args, first = args[1:], first+1
		}
		if len(args) == 0 {
			return false
		}
		name, args, first = "git "+args[0], args[1:], first+1
	}
	c, ok := readOnlyCommands()[name]
	if !ok || expandsToOption(seg, first, c.check != nil) {
		return false
	}
	return c.readOnlyArgs(args) == nil
}

// expandsToOption reports whether a word the shell expands may become an
// option: one before "--" (anywhere for find, whose expression has no
// "--"). "sort *" in a folder holding a file named
// --compress-program=sh runs sh.
func expandsToOption(seg segment, first int, noDashDash bool) bool {
	end := len(seg.words)
	if i := slices.Index(seg.words[first:], "--"); i >= 0 && !noDashDash {
		end = first + i
	}
	for _, i := range seg.expanding {
		if i >= first-1 && i < end {
			return true
		}
	}
	return false
}
