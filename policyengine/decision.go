package policyengine

// Action is the verdict of a check.
type Action string

const (
	Allow   Action = "allow"
	Deny    Action = "deny"
	Confirm Action = "confirm"
)

// Decision is the answer to one question: what to do, a sentence a user can
// act on, and the rule that decided (empty when no rule matched).
type Decision struct {
	Action Action `json:"action"`
	Reason string `json:"reason"`
	Rule   string `json:"rule,omitempty"`
	// Layer is the agent policy layer that decided (global, project or
	// invocation, with its source), empty when the skills decided.
	Layer string `json:"layer,omitempty"`
	// NotFound is set on a denial of a program that is not there at
	// all: exec exits 127 for it, as a shell would, not 126.
	NotFound bool `json:"not_found,omitempty"`
	// Unlisted is set on a denial whose only reason is that no rule
	// lists the host (or URL): not a deny rule, a cap or an address
	// category. Only such a denial may be put to the caller over the ask
	// channel (package ask).
	Unlisted bool `json:"-"`
	// Unread is set on an allow that corral's reading of a command line
	// could not give: part of the line is syntax the reader does not
	// follow, or depends on the shell's expansions (a redirection to
	// "$tmp", source FILE, a cd to a folder it cannot tell). The kernel
	// enforces the skills' files, programs and network whatever the
	// line says, so the preflight lets such a line run; Unread says what
	// could not be read.
	Unread string `json:"unread,omitempty"`
}
