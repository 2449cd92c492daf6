package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// Invalidf returns an ErrInvalid error with a message formatted as by
// fmt.Errorf: a %w verb keeps its cause for errors.Is and errors.As.
func Invalidf(format string, args ...any) error {
	return &kindError{kind: ErrInvalid, err: fmt.Errorf(format, args...)}
}

// Refusedf returns an ErrRefused error, formatted as by fmt.Errorf.
func Refusedf(format string, args ...any) error {
	return &kindError{kind: ErrRefused, err: fmt.Errorf(format, args...)}
}

// NotFoundf returns an ErrNotFound error, formatted as by fmt.Errorf.
func NotFoundf(format string, args ...any) error {
	return &kindError{kind: ErrNotFound, err: fmt.Errorf(format, args...)}
}

// kindError is an error of one of the kinds, wrapping its message (and,
// through it, the cause a %w named).
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string        { return e.err.Error() }
func (e *kindError) Is(target error) bool { return target == e.kind }
func (e *kindError) Unwrap() error        { return e.err }

// LockTimeoutError reports a lock that could not be taken within the
// caller's bound. Holder is who holds it, as its file records ("pid 4242
// on host build-7/… at 2026-…"), or "" when it records no one.
type LockTimeoutError struct {
	Path    string
	Timeout string
	Holder  string
	// Waiting, when Holder is "", names the other processes recorded as
	// waiting for the lock (its waiters' record, doc.go "Waiters"): the
	// likely holder is one of them, granted the lock unaware.
	Waiting []string
}

func (e *LockTimeoutError) Error() string {
	msg := fmt.Sprintf("timed out after %s waiting for lock %s", e.Timeout, e.Path)
	switch {
	case e.Holder != "":
		msg += " (held by " + e.Holder + ")"
	case len(e.Waiting) > 0:
		msg += " (" + waitingFor(e.Waiting) + ")"
	}
	return msg
}

// LockInterruptedError reports a lock wait that its caller called off
// (LockUntil's done closed) before the lock was free. It matches
// context.Canceled with errors.Is: the wait ended for the reason its
// caller's work did.
type LockInterruptedError struct {
	Path string
}

func (e *LockInterruptedError) Error() string {
	return "interrupted while waiting for lock " + e.Path
}

func (e *LockInterruptedError) Unwrap() error { return context.Canceled }

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

// PathErr is err as a failure to op the file at path, which names the path
// once: an *fs.PathError whose cause is err, or err's own cause when err
// is itself an *fs.PathError (of path, or of a temp file standing for it),
// so that the message is "open P: read-only file system", never "open P:
// open P: read-only file system". The result is an *fs.PathError, which
// tells a caller that hides paths (the gateway) that it holds one.
func PathErr(op, path string, err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// FencedError reports an append refused because its writer's lock was
// lost: the log no longer ends where the writer read its end under the
// lock (Want), because another writer, which took the lock since,
// appended (the log now ends at Found). Nothing of the refused append
// stays in the log; when its lines had landed after the other writer's,
// they were moved to Aside. It matches ErrRefused (doc.go, "Fencing").
type FencedError struct {
	Path  string
	Want  int64
	Found int64
	Aside string
	// Stored, of Lines, are the writer's first lines that had landed
	// where it read the log's end before it lost its lock between two of
	// its writes: they stay (the other writer numbered after them), and
	// the rest are aside. 0 when none stayed.
	Stored, Lines int
}

func (e *FencedError) Error() string {
	msg := fmt.Sprintf("append to %s refused: its lock was lost (the log ends at byte %d, not at %d where this writer read it: another host or process took the lock and appended)", e.Path, e.Found, e.Want)
	switch {
	case e.Stored > 0:
		msg += fmt.Sprintf("; its first %d of %d lines had landed before the other writer's and stay, the other %d were moved aside to %s", e.Stored, e.Lines, e.Lines-e.Stored, e.Aside)
	case e.Aside != "":
		msg += "; the lines were moved aside to " + e.Aside
	default:
		msg += "; nothing was written"
	}
	return msg
}

func (e *FencedError) Is(target error) bool { return target == ErrRefused }

// UnknownOutcomeError reports a write that failed in a way that leaves
// its outcome unknown: its lines may be in the log or not (the write or
// the sync failed and the cut back failed too: the filesystem stopped
// answering), or they are in the log although the write is reported as
// failed (another writer appended after them). A caller that retries
// such a write must first look at what is stored, or write with a key
// that makes the retry store nothing twice.
type UnknownOutcomeError struct {
	Path string
	Why  string
	Err  error
}

func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("%v; outcome unknown: %s", e.Err, e.Why)
}

func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// LockLostError reports a write refused because the lock guarding the
// file was lost: the lock's file no longer names this holder (another
// host or process took it since, or it was removed). Nothing was written.
// It matches ErrRefused (doc.go, "Fencing").
type LockLostError struct {
	Path   string // the file whose write was refused
	Lock   string
	Holder string // who the lock's file says took it, or ""
}

func (e *LockLostError) Error() string {
	msg := fmt.Sprintf("write to %s refused: its lock %s was lost", e.Path, e.Lock)
	if e.Holder != "" {
		msg += " (taken since by " + e.Holder + ")"
	}
	return msg + "; nothing was written"
}

func (e *LockLostError) Is(target error) bool { return target == ErrRefused }
