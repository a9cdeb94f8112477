package policyengine

import (
	"reflect"
	"testing"
)

// splitFull runs the full splitter, bypassing the plain fast path.
func splitFull(line string) ([]Command, error) {
	var wordBuf [256]byte
	s := shellSplitter{src: line, out: make([]Command, 0, 4), buf: wordBuf[:0]}
	if err := s.parseList(0, 0); err != nil {
		return nil, err
	}
	return s.out, nil
}

func FuzzSplitPlain(f *testing.F) {
	for _, s := range []string{"curl -s https://api.a.com | python3 -c pass", "ls", "a|b", "a | | b", "x=1 y", "time ls", "for x", "git log --format=%H | head -5", "a -- b", " ls  -la ", "|a", "a|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fast, ok := splitPlain(line)
		if !ok {
			return
		}
		full, err := splitFull(line)
		if err != nil {
			t.Fatalf("splitPlain(%q) answered %+v but the full splitter fails: %v", line, fast, err)
		}
		if len(fast) == 0 && len(full) == 0 {
			return
		}
		if !reflect.DeepEqual(fast, full) {
			t.Fatalf("splitPlain(%q) = %+v, full splitter = %+v", line, fast, full)
		}
	})
}
