package corral

import (
	"io"
	"os"
	"sync"

	"corral.dev/corral/sandbox"
)

// files turns the spec's streams into files the init can inherit,
// copying through pipes where they are not files, or are sockets of the
// host's network (a TCP stream from inetd or socat, which the command
// could disconnect and reconnect to anywhere: netSocket).
func files(spec Spec) (sandbox.Stdio, func(), error) {
	var s sandbox.Stdio
	var closers []func()
	var wg sync.WaitGroup
	done := func() {
		for _, c := range closers {
			c()
		}
		wg.Wait()
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return s, nil, err
	}
	closers = append(closers, func() { null.Close() })
	switch in := spec.Stdin.(type) {
	case nil:
		s.Stdin = null
	case *os.File:
		if netSocket(in) {
			s.Stdin, err = copyIn(in, &closers)
			if err != nil {
				done()
				return s, nil, err
			}
			break
		}
		s.Stdin = in
	default:
		s.Stdin, err = copyIn(in, &closers)
		if err != nil {
			done()
			return s, nil, err
		}
	}
	out := func(dst io.Writer) (*os.File, error) {
		switch o := dst.(type) {
		case nil:
			return null, nil
		case *os.File:
			if !netSocket(o) {
				return o, nil
			}
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.Copy(dst, r)
			r.Close()
		}()
		// The write end closes when the run ends, before the copy is
		// waited for.
		closers = append([]func(){func() { w.Close() }}, closers...)
		return w, nil
	}
	if s.Stdout, err = out(spec.Stdout); err != nil {
		done()
		return s, nil, err
	}
	if s.Stderr, err = out(spec.Stderr); err != nil {
		done()
		return s, nil, err
	}
	return s, done, nil
}

// copyIn is a pipe the command reads in's bytes from.
func copyIn(in io.Reader, closers *[]func()) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	*closers = append(*closers, func() { r.Close() })
	go func() {
		io.Copy(w, in)
		w.Close()
	}()
	return r, nil
}
