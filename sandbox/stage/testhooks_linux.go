//go:build corral_testhooks

package stage

// A binary built with -tags corral_testhooks reads CORRAL_EARLY_INIT=0 in
// the C constructor (nsinit_linux.c), which then leaves the init to be
// started when Go asks, as for a program calling corral.Run; the product
// always starts it early; and CORRAL_TEST_IDMAP_REFUSED=1, which makes
// the early init's id maps fail as Ubuntu's AppArmor restriction makes
// them. cgo's CFLAGS apply to every C file of the package.

// #cgo CFLAGS: -DCORRAL_TESTHOOKS
import "C"
