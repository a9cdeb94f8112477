package sandbox

import "strings"

// Landlock access rights (linux/landlock.h), kept here so the Plan builds
// on every OS.
const (
	fsExecute    = 1 << 0
	fsWriteFile  = 1 << 1
	fsReadFile   = 1 << 2
	fsReadDir    = 1 << 3
	fsRemoveDir  = 1 << 4
	fsRemoveFile = 1 << 5
	fsMakeChar   = 1 << 6
	fsMakeDir    = 1 << 7
	fsMakeReg    = 1 << 8
	fsMakeSock   = 1 << 9
	fsMakeFifo   = 1 << 10
	fsMakeBlock  = 1 << 11
	fsMakeSym    = 1 << 12
	fsRefer      = 1 << 13 // ABI 2
	fsTruncate   = 1 << 14 // ABI 3
	fsIoctlDev   = 1 << 15 // ABI 5

	netBindTCP    = 1 << 0 // ABI 4
	netConnectTCP = 1 << 1 // ABI 4

	scopeAbstractUnix = 1 << 0 // ABI 6
	scopeSignal       = 1 << 1 // ABI 6

	// fileRights are the rights that apply to a file (rules on files may
	// carry only these).
	fileRights = fsExecute | fsWriteFile | fsReadFile | fsTruncate | fsIoctlDev

	readRights  = fsReadFile | fsReadDir
	writeRights = readRights | fsWriteFile | fsRemoveDir | fsRemoveFile | fsMakeDir |
		fsMakeReg | fsMakeSock | fsMakeFifo | fsMakeSym | fsRefer | fsTruncate
)

// handledFS is every filesystem right the given Landlock ABI knows.
func handledFS(abi int) uint64 {
	var m uint64
	switch {
	case abi >= 5:
		m = fsIoctlDev
		fallthrough
	case abi >= 3:
		m |= fsTruncate
		fallthrough
	case abi >= 2:
		m |= fsRefer
		fallthrough
	case abi >= 1:
		m |= fsMakeSym<<1 - 1
	}
	return m
}

var rightNames = []string{"execute", "write_file", "read_file", "read_dir", "remove_dir",
	"remove_file", "make_char", "make_dir", "make_reg", "make_sock", "make_fifo",
	"make_block", "make_sym", "refer", "truncate", "ioctl_dev"}

// rightsString names the rights in access, for people.
func rightsString(access uint64) string {
	switch access {
	case readRights:
		return "read"
	case readRights | fsExecute:
		return "read, execute"
	case fsReadFile:
		return "read_file"
	case fsReadFile | fsExecute:
		return "read_file, execute"
	}
	if access&writeRights == writeRights {
		s := "read, write"
		if access&fsExecute != 0 {
			s += ", execute"
		}
		return s
	}
	var names []string
	for i, n := range rightNames {
		if access&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}
