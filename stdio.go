package corral

import (
	"io"
	"os"
	"sync"
	"time"

	"corral.dev/corral/sandbox"
)

// files turns the spec's streams into files the init can inherit,
// copying through pipes where they are not files, or are sockets of the
// host's network (a TCP stream from inetd or socat, which the command
// could disconnect and reconnect to anywhere: netSocket). A pipe or a UNIX
// socket the caller gave is replaced by a pipe of corral's, copied on in
// the kernel (splice), so that the bytes can be counted; a regular file's
// growth is read at the end; a terminal or another device is passed as it
// is and not counted. The output's counts are set in out when done has
// returned.
func files(spec Spec, out *outputCount) (sandbox.Stdio, func(), error) {
	var s sandbox.Stdio
	var closers []func()
	var finish []func()
	var readEnds []*os.File
	var wg sync.WaitGroup
	done := func() {
		for _, c := range closers {
			c()
		}
		// Every process of the sandbox is gone by now, and with them the
		// pipes' write ends; should one still be held, the copies stop
		// after drainWait rather than keep corral from returning.
		copied := make(chan struct{})
		go func() { wg.Wait(); close(copied) }()
		select {
		case <-copied:
		case <-time.After(drainWait):
			for _, r := range readEnds {
				r.Close()
			}
			<-copied
		}
		for _, f := range finish {
			f()
		}
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
	// copied is a pipe whose bytes go on to dst, counted into *n.
	copied := func(dst io.Writer, n **int64) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		count := new(int64)
		readEnds = append(readEnds, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// *os.File to *os.File: the kernel moves the bytes (splice).
			*count, _ = io.Copy(dst, r)
			r.Close()
		}()
		finish = append(finish, func() { *n = count })
		// The write end closes when the run ends, before the copy is
		// waited for.
		closers = append([]func(){func() { w.Close() }}, closers...)
		return w, nil
	}
	var shared *os.File // stdout's pipe, when stderr is the same pipe
	// A pipe of the caller's stays the init's descriptor (an init forked
	// early has it already) and corral's pipe replaces it in the init
	// before the command runs (Stdio.Late).
	late := func(i int, o *os.File, f *os.File, err error) (*os.File, error) {
		if err != nil {
			return nil, err
		}
		s.Late[i] = f
		return o, nil
	}
	stream := func(dst io.Writer, n **int64, isErr bool) (*os.File, error) {
		fd := 1
		if isErr {
			fd = 2
		}
		switch o := dst.(type) {
		case nil:
			return null, nil // discarded unread: not counted
		case *os.File:
			switch kind := outputKind(o); {
			case kind == outputPipe && isErr && shared != nil && sameFile(o, spec.Stdout):
				// 2>&1 by the caller: one pipe keeps the two streams'
				// order; each count is their total.
				finish = append(finish, func() { *n = out.Stdout })
				return late(fd, o, shared, nil)
			case kind == outputPipe:
				f, err := copied(o, n)
				if err == nil && !isErr {
					shared = f
				}
				return late(fd, o, f, err)
			case kind == outputFile:
				start, ok := fileOutput(o)
				if ok {
					finish = append(finish, func() {
						if end, ok := fileOutput(o); ok && end >= start {
							grown := end - start
							*n = &grown
						}
					})
				}
				return o, nil
			case kind == outputNet:
				return copied(o, n)
			default:
				return o, nil // a terminal or a device: not counted
			}
		}
		return copied(dst, n)
	}
	if s.Stdout, err = stream(spec.Stdout, &out.Stdout, false); err != nil {
		done()
		return s, nil, err
	}
	if s.Stderr, err = stream(spec.Stderr, &out.Stderr, true); err != nil {
		done()
		return s, nil, err
	}
	return s, done, nil
}

// drainWait bounds the wait for the output copies once the run is over.
const drainWait = 2 * time.Second

// outputCount is how many bytes the command wrote to its standard output
// and error (nil: not counted, for a terminal or a device).
type outputCount struct {
	Stdout, Stderr *int64
}

// The kinds of file a caller's output stream can be.
const (
	outputOther = iota // a terminal or a device: passed as it is
	outputPipe         // a pipe or a UNIX socket: copied through corral's pipe
	outputFile         // a regular file: its growth is counted
	outputNet          // a socket of the host's network: copied (netSocket)
)

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
