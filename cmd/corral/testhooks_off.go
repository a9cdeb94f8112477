//go:build !corral_testhooks

package main

import "corral.dev/corral"

// testHooks does nothing in the product: the tests' windows and switches
// exist only in a binary built with -tags corral_testhooks.
func testHooks(*corral.Spec) error { return nil }

const testHooksBuilt = false
