package corral

// Reset is a file or folder whose mode, ACL or file capabilities corral
// set back after the run (docs/modes.md): the set-id bits or file
// capabilities of a file the command made, moved or linked, and the group
// and other write rights it gave a folder other users must not change (a
// git folder, its hooks, a write grant's top, the home folder, a
// protected path).
type Reset struct {
	Path string `json:"path"`
	// From and To are the modes before and after, in octal ("4755",
	// "755"); for file capabilities or an ACL, the attribute removed.
	From string `json:"from"`
	To   string `json:"to"`
	Why  string `json:"why"`
}
