//go:build !linux

package corral

import "os"

// renameNoReplace renames from to to unless to exists (checked first:
// there is no renameat2 here).
func renameNoReplace(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return os.ErrExist
	}
	return os.Rename(from, to)
}
