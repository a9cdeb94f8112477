package main

// hiddenCommand finds the names `corral help` does not list: --version
// and -version, which print what `corral version` prints.
func hiddenCommand(name string) *command {
	switch name {
	case "--version", "-version":
		return &versionCommand
	}
	return nil
}
