// Package progindex answers one question for the exec allowlist: which
// folders that the sandbox can read, and map code from, hold ELF programs
// (progindex_linux.go says why and how it is kept).
package progindex

// Index is the answer and where it came from.
type Index struct {
	Folders []string `json:"folders"`
	// Libraries are the folders below a folder of Folders that hold
	// shared libraries (and no programs): plugins, a JVM's lib/server.
	Libraries []string `json:"libraries,omitempty"`
	// Source is the index file used, or "walked" when it was built now
	// (and saved to Saved, if anywhere).
	Source string `json:"source"`
	Saved  string `json:"saved,omitempty"`
	// Stopped: the run was given up while it waited for the index; the
	// folders are unknown and no plan may be built from it.
	Stopped bool `json:"stopped,omitempty"`
}
