package policyengine

import (
	"slices"
	"strings"
)

// SandboxOwn are the places where the sandbox has files of its own, not
// the host's: the namespaces tier mounts a private /tmp and /proc there
// and makes /dev's links to the command's own descriptors; the landlock
// tier grants nothing of the host's /tmp (the command's TMPDIR is a
// folder made for the run) and only a few of its /proc files. The system
// baseline's entries in them (/tmp/**, /proc/**, /dev/fd/**, /dev/stdin,
// ...) are about those files of the sandbox's own: a command can write
// /tmp/x, and the host's /tmp/x never changes. So they answer for a path
// as the command uses it (CheckReadInside, CheckWriteInside, the
// redirections of a command line), never for the host's file (CheckRead,
// CheckWrite), and not even inside the sandbox below a grant's folder (a
// work dir under /tmp): the sandbox shows the host's files there, and
// only the grants decide, as they do for a work dir under /var/tmp.
var SandboxOwn = []string{"/tmp", "/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"}

// ownPlace returns the place of SandboxOwn that is or holds the glob's
// base, or "".
func ownPlace(base string) string {
	for _, o := range SandboxOwn {
		if base == o || strings.HasPrefix(base, o+"/") {
			return o
		}
	}
	return ""
}

// shownBases are the folders and files where the sandbox shows the
// host's own files: the bases of the fs grants (read, the compiled
// fs.read and fs.write rules) and the programs the exec list names by
// their path, which exec binds (or, in the landlock tier, lets Landlock
// reach) where they are.
func shownBases(read globIndex, exec []Entry) []string {
	var bases []string
	for _, rules := range read {
		for _, r := range rules {
			if !slices.Equal(r.entry.From, []string{SystemSource}) {
				bases = append(bases, r.glob.Base())
			}
		}
	}
	for _, x := range exec {
		if strings.HasPrefix(x.Value, "/") {
			bases = append(bases, x.Value)
		}
	}
	return bases
}

// ownReason is the tail of a deny reason for the host's file where a
// baseline entry of the sandbox's own place matched.
func ownReason(r globRule) string {
	return "; the system baseline's " + r.entry.Value + " is the sandbox's own " + r.own +
		", not the host's: the path there names a file of the sandbox, which the host never sees"
}
