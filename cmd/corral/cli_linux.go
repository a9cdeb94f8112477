package main

// corral_cli tells sandbox/stage/nsinit_linux.c's constructor that this is the
// corral command, which may fork its sandbox's init before Go starts
// (`corral exec`); another program linking the sandbox package has no
// such symbol and never does.

/*
const int corral_cli = 1;
*/
import "C"
