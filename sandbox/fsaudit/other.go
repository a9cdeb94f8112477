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

// Result is what the records said of one run.
type Result struct {
	Denials []Denial
	More    int
	Lost    bool
	Err     error
}

// Finish returns nothing.
func (r *Reader) Finish() Result { return Result{} }

// Observable says Landlock's denials cannot be read: Landlock is Linux's.
func Observable(abi int) error {
	_, err := Open(abi)
	return err
}
