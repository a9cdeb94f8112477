package sandbox

import (
	"os"
	"time"
)

// Result is how a run ended.
type Result struct {
	ExitCode int           `json:"exit_code"`
	Signal   int           `json:"signal,omitempty"`
	Wall     time.Duration `json:"wall_ns"`
	MaxRSS   int64         `json:"peak_memory_bytes"`
	Started  bool          `json:"started"`
	// Stage is set when the sandbox could not be built or the command not
	// started.
	Stage *StageError `json:"stage_error,omitempty"`
}

// Stdio are the streams the command gets, passed straight through.
type Stdio struct {
	Stdin          *os.File
	Stdout, Stderr *os.File
}
