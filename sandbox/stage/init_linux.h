#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

// corral_mount_cache is the mount cache file of this run (the init reads
// it in mounts_ahead, corral writes it), chosen by the constructor that
// forked the init; NULL when there is none. corral_mount_cache_key is the
// key the file's header must hold.
extern const char *corral_mount_cache;
extern uint64_t corral_mount_cache_key;

// corral_init_main is the sandbox's PID 1 (init_linux.c); it never returns.
void corral_init_main(void) __attribute__((noreturn));

// The signals corral forwards (CORRAL_FORWARDED_SIGNALS, protocol.h).
static const int corral_forwarded[] = CORRAL_FORWARDED_SIGNALS;
#define CORRAL_NFORWARDED (sizeof corral_forwarded / sizeof corral_forwarded[0])

// corral_forwarded_set sets set to the forwarded signals.
static inline void corral_forwarded_set(sigset_t *set) {
	sigemptyset(set);
	for (size_t i = 0; i < CORRAL_NFORWARDED; i++)
		sigaddset(set, corral_forwarded[i]);
}

// corral_namespaces is 0 in the landlock tier (init_tier_linux.c);
// corral_kill_descendants ends every process below the caller there.
extern int corral_namespaces;
void corral_kill_descendants(void);

// corral_close_from closes every fd from first up (nsinit_linux.c).
void corral_close_from(int first);
