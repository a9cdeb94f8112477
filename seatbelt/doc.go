// Package seatbelt renders merged skill permissions as a macOS Seatbelt
// profile (SBPL, the sandbox profile language of sandbox-exec(1)).
//
// Render is pure: it reads only the permissions and its options, so the
// same inputs give the same profile on every operating system, and Linux
// CI checks it against golden files. It starts from (deny default), adds a
// base that lets ordinary programs run (fork, signals within the sandbox,
// a list of sysctls and Mach services, ptys, the null devices), a macOS
// system baseline of read-only folders, and then only what the permissions
// grant: fs.read and fs.write paths, the protected paths inside writable
// roots (git hooks and config, shell start-up files) kept read-only, the
// exec allowlist, outbound TCP to corral's egress proxy on localhost and
// nowhere else, and the Mach services that `services` entries map to.
//
// The threat is the sandboxed command and whoever wrote the paths: a path
// holding quotes, parentheses, backslashes, newlines or regular expression
// metacharacters must not change the profile's structure or widen a rule.
// User paths therefore never appear in the profile text: each is a
// parameter, (param "NAME"), whose value sandbox-exec receives as
// -D NAME=VALUE (Profile.Args). Options.Inline writes them as escaped
// string literals instead, for a profile that stands alone. Globs that a
// literal or subpath filter cannot express become anchored regular
// expressions built here, with every literal character quoted.
//
// The package does not run anything (package sandbox runs sandbox-exec on
// macOS), does not resolve symlinks or look programs up (the caller passes
// resolved program paths in Options.Programs), and does not decide
// application questions (package policyengine).
package seatbelt
