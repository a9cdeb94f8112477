//go:build !linux

package unfinished

import (
	"errors"
	"time"
)

// Off Linux the command runs under Seatbelt, after which nothing is swept:
// there are no records.

var ErrUntrusted = errors.New("the folder of corral's records is not this user's alone")

func Dir() string { return "" }

type Store struct{}

func Open() (*Store, error) { return nil, errors.ErrUnsupported }

func (s *Store) Close()       {}
func (s *Store) Path() string { return "" }

type Record struct{}

func (s *Store) Create([]byte) (*Record, error) { return nil, errors.ErrUnsupported }
func (r *Record) Done() error                   { return nil }
func (r *Record) Release()                      {}
func (r *Record) Name() string                  { return "" }
func (r *Record) Path() string                  { return "" }

type Entry struct {
	Name    string
	Data    []byte
	ModTime time.Time
	Stale   *Record
}

func (s *Store) List() ([]Entry, error) { return nil, nil }
