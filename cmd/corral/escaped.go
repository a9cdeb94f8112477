package main

import (
	"io"

	"corral.dev/corral/printable"
)

// escapedText writes text for people with every non-graphic rune (a
// control, a bidi override, an invalid byte) escaped: names found in the
// work dir, which a sandboxed command could have made, are in it. Each
// Write must be whole runes (one fmt.Fprintf each).
type escapedText struct{ w io.Writer }

func (e escapedText) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.w, printable.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapedJSON writes encoded JSON with printable.JSON's escapes (the same
// values, nothing raw a terminal acts on). Each Write must be whole
// values or lines, as json.Encoder writes them.
type escapedJSON struct{ w io.Writer }

func (e escapedJSON) Write(p []byte) (int, error) {
	if _, err := e.w.Write(printable.JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
