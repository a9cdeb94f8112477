// Package policyengine answers application-level questions about the
// merged permissions of the active skills — may this path be read or
// written, this host and port be reached, this command line be run, this
// environment variable be passed — with the same rules the sandbox
// enforces, so `corral check` answers what `corral exec` enforces.
//
// Permissions is the merged set (package skill builds it); New compiles
// it into an Engine, whose checks return a Decision with the reason and
// the skill a grant came from. The package also holds what those checks
// are made of: path globs (CompileGlob), host names, IP literals in every
// notation and address categories (Classify, ParseIP, CategoryOf), URLs
// (ParseURL), shell command lines split into the programs they run
// (SplitCommandLine, Invocations) with the wrappers and option tables
// that find a wrapped program, and the paths no grant may expose.
//
// It makes no system calls on the check path and imports nothing of
// corral's: the operator's agent policy (package agentpolicy) and the sandbox
// (package sandbox) build on it.
package policyengine
