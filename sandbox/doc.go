// Package sandbox turns merged skill permissions into a kernel sandbox and
// runs one command inside it.
//
// Execute is the one entry point of a run: it takes a Request (the
// permissions, limits and options already resolved by the caller) and
// carries out the start-up sequence. Inside it, three steps never mix. Probe
// reads the host's facts (Landlock ABI, user namespaces, where programs
// live) once. BuildPlan is a pure function from permissions and facts to a
// Plan: every mount, Landlock rule, seccomp rule and environment variable,
// with the glob each came from and a warning wherever the kernel's form is
// wider or narrower than the glob. Start and Run render the Plan: corral is
// re-executed, and before its Go runtime would start, C code
// (nsinit_linux.c) makes new user, mount, PID, network, IPC and UTS
// namespaces and forks the sandbox's PID 1 (init_linux.c), which reads the
// plan, builds a new root holding only granted paths, drops every
// capability, sets no_new_privs, restricts itself with Landlock, loads the
// seccomp program compiled by the parent last, and starts the command.
//
// The threat is the command itself: it is hostile, knows corral, and tries
// to read, write, execute or connect beyond its grants, to outlive corral,
// and to inject into the terminal. Protections the kernel cannot enforce
// stop the run (fail closed) unless the caller asked for best effort, and
// then every dropped protection is named.
//
// The package does not parse skills (package skill) or decide application
// questions (package policyengine), and starts no helper process.
package sandbox
