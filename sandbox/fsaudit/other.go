//go:build !linux

package fsaudit

import "errors"

// ErrUnobservable wraps every reason Open cannot read the records.
var ErrUnobservable = errors.New("cannot read Landlock's denials")

// LogNewExecOn is Landlock's flag; only Linux has it.
const LogNewExecOn = 0

// Reader is Linux's; elsewhere Open always fails.
type Reader struct{}

// Open fails: Landlock is Linux's.
func Open(abi int) (*Reader, error) {
	return nil, errors.Join(ErrUnobservable, errors.New("Landlock is Linux's"))
}

// Attribute does nothing.
func (r *Reader) Attribute(pid int) {}

// Finish returns nothing.
func (r *Reader) Finish() ([]Denial, int, bool) { return nil, 0, false }
