// Package stage is the sandbox's init stage and its side of the wire: the
// C that runs before Go's runtime in a process started as the init
// (nsinit_linux.c makes the namespaces and forks PID 1, init_linux.c is
// PID 1: it builds the new root, drops privileges, applies Landlock and
// seccomp and runs the command, with a file per section: init_plan,
// init_mounts, init_ahead, init_lockdown and init_report, sharing
// init_parts.h), the thread that starts one for a
// program calling corral.Run (spawn_linux.c), the Go glue that hands
// those processes to package sandbox, the mount cache, and protocol.h,
// which both languages read (protocol_linux.go).
package stage
