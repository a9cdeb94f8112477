// protocol.h: what corral (Go) and the sandbox's init (C) agree on, in
// one place. The C files include it; Go reads the same definitions
// through cgo (protocol_linux.go), so nothing here is written twice.
#ifndef CORRAL_PROTOCOL_H
#define CORRAL_PROTOCOL_H

#include <signal.h>

// argv[1] of an init stage that was exec'd (spawn_linux.c); the C
// constructor (nsinit_linux.c) takes over such a process before Go runs.
#define CORRAL_INIT_ARG "__corral_init"

// The init's fds: 0-2 are the command's stdio, then the plan (read once),
// the status pipe (handshake.go has its messages) and a UNIX socket: the
// cgroup and the seccomp program come over it after the plan, and the
// proxy's listeners go back to corral.
#define CORRAL_FD_PLAN 3
#define CORRAL_FD_STATUS 4
#define CORRAL_FD_SOCKET 5
#define CORRAL_SPAWN_FDS 6

// The plan's records (plan_linux.go writes them, corral_parse_plan
// in init_plan_linux.c reads them): one tag byte, a 4-byte little-endian payload
// length, and the payload, whose fields are NUL-terminated.
#define CORRAL_REC_TRACE 'T'         // no fields: print the init's steps
#define CORRAL_REC_HOSTNAME 'h'      // name
#define CORRAL_REC_DIR 'd'           // the command's working folder
#define CORRAL_REC_PATH 'p'          // PATH to find the command in
#define CORRAL_REC_ARG 'a'           // one argument, in order
#define CORRAL_REC_ENV 'e'           // one NAME=value
#define CORRAL_REC_LEGACY_MOUNTS 'M' // no fields: bind, then set flags by path
#define CORRAL_REC_MOUNT_PAUSE 'W'   // microseconds to wait before placing binds
#define CORRAL_REC_MOUNT 'm'         // kind, flags, source, target
#define CORRAL_REC_LANDLOCK 'l'      // ABI, handled fs, handled net, scoped
#define CORRAL_REC_RULE 'r'          // access, path
#define CORRAL_REC_PORT_RULE 'n'     // access, port
#define CORRAL_REC_HELD 'H'          // path, held (0/1), major, minor, inode
#define CORRAL_REC_PROXY 'P'         // the proxy's port
#define CORRAL_REC_EGRESS 'E'        // transparent egress: the sandbox resolver's port
#define CORRAL_REC_LANDLOCK_LOG 'L'  // landlock_restrict_self's log flags (corral reads the audit records)
#define CORRAL_REC_NOTIFY 'U'        // syscall number, argument (-1: none), mask: the landlock tier's filter
                                     // sends it to corral's supervisor (when the argument has a bit of mask)

// The kind field of a mount record.
#define CORRAL_MOUNT_TMPFS 't'
#define CORRAL_MOUNT_PROC 'p'
#define CORRAL_MOUNT_BIND 'b'
#define CORRAL_MOUNT_DEV 'v'     // a bind of a device node
#define CORRAL_MOUNT_SYMLINK 'l'
#define CORRAL_MOUNT_DIR 'd'     // an empty folder
#define CORRAL_MOUNT_COPY 'c'    // a copy of source's content
#define CORRAL_MOUNT_FILE 'w'    // a file holding source (the text itself)
#define CORRAL_MOUNT_MASK 'k'    // an empty, read-only, mode-000 file (folder: flag D) over target

// Letters of a mount record's flags field (which starts with '-').
#define CORRAL_MOUNT_FLAG_RO 'r'
#define CORRAL_MOUNT_FLAG_NOEXEC 'x'
#define CORRAL_MOUNT_FLAG_DIR 'D'

// The tiers an init stage runs in (corral's --tier; the constructor reads
// the flag, an exec'd init its argv[2] as the name). Auto tries the
// namespaces and falls back to the landlock tier where the kernel refuses
// a user namespace; the landlock tier makes none: Landlock, seccomp and
// no_new_privs on the host's own namespaces.
#define CORRAL_TIER_AUTO 0
#define CORRAL_TIER_NAMESPACES 1
#define CORRAL_TIER_LANDLOCK 2

// The signals corral forwards to the command: the shim and PID 1 pass
// them on (run_linux.go's list is read from this one).
#define CORRAL_FORWARDED_SIGNALS {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH}

#endif
