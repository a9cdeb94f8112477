package seccomp

import (
	"bytes"
	"sync"
	"testing"
)

// TestPrepareConcurrentRuns prepares the seccomp programs of many runs at
// once, half with an exec allowlist and half without, as concurrent
// corral.Run calls in one process do, and checks that every run gets the
// program of its own table (a process-wide slot handed some runs the other
// table's). Run it with -race too.
func TestPrepareConcurrentRuns(t *testing.T) {
	want := map[bool][]byte{}
	for _, r := range []bool{false, true} {
		prog, err := compileBPF(Rules(r))
		if err != nil {
			t.Fatal(err)
		}
		want[r] = prog
	}
	if bytes.Equal(want[false], want[true]) {
		t.Fatal("the two tables compile to the same program: the test could not tell them apart")
	}
	const runs, rounds = 8, 400
	var wg sync.WaitGroup
	var mu sync.Mutex
	wrong := 0
	for g := 0; g < runs; g++ {
		wg.Add(1)
		go func(restrict bool) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				s := Prepare(Rules(restrict))
				prog, err := s.Program(Rules(restrict))
				if err != nil || !bytes.Equal(prog, want[restrict]) {
					mu.Lock()
					wrong++
					mu.Unlock()
				}
			}
		}(g%2 == 0)
	}
	wg.Wait()
	if wrong > 0 {
		t.Errorf("%d of %d runs got another run's seccomp program (or none)", wrong, runs*rounds)
	}
}
