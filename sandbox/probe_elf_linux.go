package sandbox

import (
	"encoding/binary"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"corral.dev/corral/sandbox/progindex"
)

// program resolves a name (on the sandbox's PATH) or an absolute path, its
// symlinks and interpreters.
func (f *Facts) program(name string) {
	if _, ok := f.Programs[name]; ok {
		return
	}
	prog := Program{Links: map[string]string{}}
	found := ""
	if strings.Contains(name, "/") {
		// ./build.sh starts in the work dir, where the command runs.
		if p := absIn(f.workDir, name); isExecutable(p) {
			found = p
		}
	} else {
		for _, dir := range f.Path {
			if c := dir + "/" + name; isExecutable(c) {
				found = c
				break
			}
		}
	}
	if found == "" {
		prog.Err = "not found"
		f.Programs[name] = prog
		return
	}
	prog.Path = found
	prog.Real = f.followLinks(found, prog.Links)
	prog.Interpreters = f.interpreters(prog.Real, prog.Links, 0)
	f.stat(prog.Real)
	for _, in := range prog.Interpreters {
		f.stat(in)
	}
	f.Programs[name] = prog
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// followLinks resolves p link by link, recording each symlink (with its
// parents' symlinks resolved) and its target in links.
func (f *Facts) followLinks(p string, links map[string]string) string {
	for i := 0; i < 40; i++ {
		d := f.resolver.resolve(filepath.Dir(p), 0)
		if d.err != nil {
			return p
		}
		dir := d.real
		p = filepath.Join(dir, filepath.Base(p))
		target, err := os.Readlink(p)
		if err != nil {
			return p
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		links[p] = target
		p = target
	}
	return p
}

// interpreters returns the real paths of what the kernel loads to run p:
// the ELF interpreter, or for a #! script its interpreter (and that one's).
func (f *Facts) interpreters(p string, links map[string]string, depth int) []string {
	if depth > 4 {
		return nil
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer fh.Close()
	head := make([]byte, 512)
	n, _ := fh.Read(head)
	head = head[:n]
	if strings.HasPrefix(string(head), "#!") {
		line, _, _ := strings.Cut(string(head[2:]), "\n")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return nil
		}
		interp := f.followLinks(fields[0], links)
		out := append([]string{interp}, f.interpreters(interp, links, depth+1)...)
		if path.Base(fields[0]) == "env" && len(fields) > 1 {
			// #!/usr/bin/env python3: python3 is found on PATH.
			for _, dir := range f.Path {
				if c := dir + "/" + fields[1]; isExecutable(c) {
					real := f.followLinks(c, links)
					out = append(out, real)
					out = append(out, f.interpreters(real, links, depth+1)...)
					break
				}
			}
		}
		return out
	}
	if f.rpaths == nil {
		f.rpaths = map[string][]string{}
	}
	f.rpaths[p] = elfRunPaths(fh, head)
	if interp := elfInterpreter(fh, head); interp != "" {
		return []string{f.followLinks(interp, links)}
	}
	return nil
}

// libraryDirs returns the real folders holding libraries that an ELF
// program names in its RPATH or RUNPATH, with $ORIGIN expanded: the
// dynamic loader maps libraries from them, so they must stay mappable.
func (f *Facts) libraryDirs(p string) []string {
	var dirs []string
	for _, list := range f.rpaths[p] { // read with the interpreters
		for _, d := range strings.Split(list, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN"), "$ORIGIN", path.Dir(p))
			if !path.IsAbs(d) {
				continue
			}
			if info := f.stat(path.Clean(d)); info.Exists && info.Dir && !slices.Contains(dirs, info.Real) && holdsLibraries(info.Real) {
				dirs = append(dirs, info.Real)
			}
		}
	}
	return dirs
}

// holdsLibraries says whether dir holds a shared library (*.so, *.so.N):
// an RPATH entry without one (java's $ORIGIN, its bin) can stay noexec.
func holdsLibraries(dir string) bool {
	fh, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer fh.Close()
	names, _ := fh.Readdirnames(-1)
	return slices.ContainsFunc(names, progindex.IsLibraryName)
}

// elfPhdrs reads the program headers of a 64-bit little-endian ELF file.
func elfPhdrs(f *os.File, head []byte) (phdrs []byte, entsize int64) {
	if len(head) < 64 || string(head[:4]) != "\x7fELF" || head[4] != 2 || head[5] != 1 {
		return nil, 0
	}
	le := binary.LittleEndian
	phoff, phentsize, phnum := int64(le.Uint64(head[32:])), int64(le.Uint16(head[54:])), int64(le.Uint16(head[56:]))
	if phentsize < 56 || phnum == 0 || phnum > 128 {
		return nil, 0
	}
	phdrs = make([]byte, phentsize*phnum)
	if _, err := f.ReadAt(phdrs, phoff); err != nil {
		return nil, 0
	}
	return phdrs, phentsize
}

// elfRunPaths returns the DT_RPATH and DT_RUNPATH strings of an ELF file.
func elfRunPaths(f *os.File, head []byte) []string {
	phdrs, entsize := elfPhdrs(f, head)
	le := binary.LittleEndian
	var dynOff, dynSize int64
	type load struct{ off, vaddr, size uint64 }
	var loads []load
	for i := int64(0); i*entsize < int64(len(phdrs)); i++ {
		ph := phdrs[i*entsize:]
		switch le.Uint32(ph[0:]) {
		case 1: // PT_LOAD
			loads = append(loads, load{le.Uint64(ph[8:]), le.Uint64(ph[16:]), le.Uint64(ph[32:])})
		case 2: // PT_DYNAMIC
			dynOff, dynSize = int64(le.Uint64(ph[8:])), int64(le.Uint64(ph[32:]))
		}
	}
	if dynSize <= 0 || dynSize > 1<<20 {
		return nil
	}
	dyn := make([]byte, dynSize)
	if _, err := f.ReadAt(dyn, dynOff); err != nil {
		return nil
	}
	var strtab uint64
	var offsets []uint64
	for i := 0; i+16 <= len(dyn); i += 16 {
		tag, val := le.Uint64(dyn[i:]), le.Uint64(dyn[i+8:])
		switch tag {
		case 0: // DT_NULL
			i = len(dyn)
		case 5: // DT_STRTAB
			strtab = val
		case 15, 29: // DT_RPATH, DT_RUNPATH
			offsets = append(offsets, val)
		}
	}
	var out []string
	for _, l := range loads {
		if strtab < l.vaddr || strtab >= l.vaddr+l.size {
			continue
		}
		for _, o := range offsets {
			buf := make([]byte, 4096)
			n, _ := f.ReadAt(buf, int64(strtab-l.vaddr+l.off+o))
			if s, _, ok := strings.Cut(string(buf[:n]), "\x00"); ok {
				out = append(out, s)
			}
		}
		break
	}
	return out
}

// elfInterpreter returns the PT_INTERP path of a 64-bit little-endian ELF
// file, reading only the program headers (debug/elf would parse every
// section and costs tens of microseconds per program).
func elfInterpreter(f *os.File, head []byte) string {
	phdrs, phentsize := elfPhdrs(f, head)
	le := binary.LittleEndian
	for i := int64(0); i*phentsize < int64(len(phdrs)); i++ {
		ph := phdrs[i*phentsize:]
		if le.Uint32(ph[0:]) != 3 { // PT_INTERP
			continue
		}
		off, size := int64(le.Uint64(ph[8:])), int64(le.Uint64(ph[32:]))
		if size <= 1 || size > 4096 {
			return ""
		}
		buf := make([]byte, size)
		if _, err := f.ReadAt(buf, off); err != nil {
			return ""
		}
		return strings.TrimRight(string(buf), "\x00")
	}
	return ""
}
