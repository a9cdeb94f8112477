// corral_init_main is the sandbox's PID 1 (init_linux.c); it never returns.
void corral_init_main(void) __attribute__((noreturn));
