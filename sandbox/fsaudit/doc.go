// Package fsaudit reads the kernel's Landlock audit records of one
// sandboxed run: every file access Landlock refused the command (path,
// rights, the program), so that corral can report what the command tried
// beyond its grants instead of leaving it to guess from EACCES.
//
// It reads the audit multicast group (AUDIT_NLGRP_READLOG), which the
// kernel fills only when audit is enabled and which only a process with
// CAP_AUDIT_READ in the initial user namespace may join; Open says why it
// cannot where that fails. Records are attributed to a run by the Landlock
// domain its init created (the domain record names the creating pid), so
// concurrent runs, and any other process on the host, never see each
// other's denials.
//
// It does not change the host's audit settings (enabling audit costs every
// process on the host a syscall audit context), does not see paths that
// are absent from the sandbox's root (the lookup fails before any hook),
// and decides nothing: it only reports.
package fsaudit
