// corral_init_main is the sandbox's PID 1 (init_linux.c); it never returns.
void corral_init_main(void) __attribute__((noreturn));

// CORRAL_FORWARDED_SIGNALS are the signals corral forwards to the command
// (forwarded in run_linux.go): the shim and PID 1 pass them on.
#define CORRAL_FORWARDED_SIGNALS {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH}
