package main

// hiddenCommand finds the names `corral help` does not list: --version
// and -version, which print what `corral version` prints, and docs, which
// writes the man page and the shell completions from the command table
// for packagers (scripts/release.sh).
func hiddenCommand(name string) *command {
	switch name {
	case "--version", "-version":
		return &versionCommand
	case "docs":
		return &docsCommand
	}
	return nil
}
