package fsstore

import (
	"errors"
	"fmt"
)

// The error kinds callers branch on. Every error the package returns that
// belongs to one of these kinds matches it with errors.Is; the command line
// maps each kind to one exit code.
var (
	// ErrNotFound: the named record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the input is malformed (a bad id, bad JSON, a bad value).
	ErrInvalid = errors.New("invalid input")
	// ErrRefused: the operation would lose data or break a rule (the
	// truncation guard, a taken title, deleting an active record).
	ErrRefused = errors.New("refused")
)

// invalidf returns an ErrInvalid error with a message.
func Invalidf(format string, args ...any) error {
	return &kindError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...)}
}

// refusedf returns an ErrRefused error with a message.
func Refusedf(format string, args ...any) error {
	return &kindError{kind: ErrRefused, msg: fmt.Sprintf(format, args...)}
}

// notFoundf returns an ErrNotFound error with a message.
func NotFoundf(format string, args ...any) error {
	return &kindError{kind: ErrNotFound, msg: fmt.Sprintf(format, args...)}
}

type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

// LockTimeoutError reports a lock that could not be taken within the
// caller's bound.
type LockTimeoutError struct {
	Path    string
	Timeout string
}

func (e *LockTimeoutError) Error() string {
	return fmt.Sprintf("timed out after %s waiting for lock %s", e.Timeout, e.Path)
}

// CorruptError reports a record that is complete (newline-terminated) but
// does not parse: damage in the middle of a log, which no crash of ours can
// produce. It is never repaired silently.
type CorruptError struct {
	Path   string
	Offset int64
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: corrupt record at offset %d: %v", e.Path, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }
