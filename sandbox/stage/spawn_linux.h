#ifndef CORRAL_SPAWN_H
#define CORRAL_SPAWN_H

#include "protocol.h"

// corral_spawn_init starts /proc/self/exe as the init stage from a new
// thread and returns at once (0, or -errno when the thread could not
// start). The thread writes two ints to result: the init's pid, or
// -errno, and a pidfd for it (close-on-exec), or -1 where the kernel has
// none; then it waits until hold reads EOF and ends. It owns result and
// hold from the call on, and copies fds before returning.
int corral_spawn_init(const int *fds, int result, int hold, int tier);

// corral_place_fds makes fds first .. first+n-1 copies of src[0 .. n-1],
// whatever numbers those have: each is first copied (close-on-exec) to
// first+n or above, so none is overwritten before it is placed. -1 (errno
// set) on failure.
int corral_place_fds(const int *src, int first, int n);

// corral_take_early hands over, once, the init stage the constructor
// forked for `corral exec` (nsinit_linux.c): corral's ends of the plan
// pipe, the status pipe and the socket, the init's pid and a pidfd (-1
// without). -1: there is none, or it was taken.
int corral_take_early(int out[5]);

// corral_early_mount_cache returns the mount cache file the constructor
// chose for this run (init_linux.h) and sets *key to its key; NULL when
// there is none.
const char *corral_early_mount_cache(unsigned long long *key);

// corral_signals_start forwards the signals corral forwards
// (CORRAL_FORWARDED_SIGNALS) to the init the constructor forked, from C
// handlers that replace Go's for them; -1 when there is no such init (or
// no pidfd for it). corral_signals_stop ends that, putting Go's handlers
// back; it is safe to call more than once.
int corral_signals_start(void);
int corral_signals_stop(void);
// corral_signals_note is the read end of a non-blocking pipe the handlers
// write a byte to for a signal that ends a run (-1: none);
// corral_signals_first is the first such signal (0: none yet).
int corral_signals_note(void);
int corral_signals_first(void);

#endif
