package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Fork makes a new session whose history is the first at messages of
// parent's (all of them when at is 0), with parent_session_id parent and
// fork_seq at; parent is not written. The lines are copied as they are
// stored, each keeping its seq and ts, by a streaming copy of the
// transcript's first bytes, so memory stays small whatever the history's
// length. The child takes the parent's source, model and working
// directory; a non-empty title must be free. The child's document,
// written last, is the commit point: a failure before it removes the
// copied transcript.
func (s *Store) Fork(parentID string, at int64, title string) (Session, error) {
	if err := fsstore.CheckID("session id", parentID); err != nil {
		return Session{}, err
	}
	if title != "" {
		unlockTitles, err := s.lockTitles()
		if err != nil {
			return Session{}, err
		}
		defer unlockTitles()
	}
	parent, err := s.Get(parentID)
	if err != nil {
		return Session{}, err
	}
	if at == 0 {
		at = parent.MessageCount
	}
	switch {
	case parent.MessageCount == 0:
		return Session{}, fsstore.Invalidf("session %s has no messages to fork", parentID)
	case at < 1 || at > parent.MessageCount:
		return Session{}, fsstore.Invalidf("session %s has %d messages: a fork point is 1 to %d, not %d", parentID, parent.MessageCount, parent.MessageCount, at)
	}
	if title != "" {
		// Refused before anything is written; claimed below, once the
		// child has its id, under the same lock.
		var err error
		if title, err = fsstore.NormalTitle(title); err != nil {
			return Session{}, err
		}
		ids, err := s.titleIDsLocked(title)
		if err != nil {
			return Session{}, err
		}
		if len(ids) > 0 {
			return Session{}, fsstore.Refusedf("title %q is taken by session %s", title, ids[0])
		}
	}
	src, size, err := fsstore.OpenSizedFlag(s.logPath(parentID), os.O_RDONLY|syscall.O_NOFOLLOW)
	if err != nil {
		return Session{}, err
	}
	if src == nil {
		return Session{}, fsstore.NotFoundf("session %s has no transcript", parentID)
	}
	defer src.Close()
	cut, err := lineEnd(src, size, at)
	if err != nil {
		return Session{}, err
	}
	preview := ""
	if first, err := firstUserSeq(src, size); err == nil && first > 0 && first <= at {
		preview = parent.Preview
	}
	now := s.Now()
	ts := fsstore.TimeOf(now)
	child := Session{
		Title: title, Source: parent.Source, Model: parent.Model, Cwd: parent.Cwd,
		CreatedAt: ts, UpdatedAt: ts, State: StateActive, ParentSessionID: parentID,
		ForkSeq: at, MessageCount: at, Profile: s.Profile, Preview: preview,
	}
	unlock, err := s.lockNew(&child, now)
	if err != nil {
		return Session{}, err
	}
	defer unlock()
	if title != "" {
		if err := s.claimTitle(title, child.ID); err != nil {
			return Session{}, err
		}
	}
	undoID, err := s.indexNewID(child.ID)
	if err != nil {
		return Session{}, err
	}
	path := s.logPath(child.ID)
	err = fsstore.WriteAtomic(path, func(w io.Writer) error {
		// io.Copy hands the copy to the kernel (copy_file_range) where it
		// can: the bytes need not pass through this process at all.
		n, err := io.Copy(w, io.LimitReader(src, cut))
		if err == nil && n != cut {
			err = fmt.Errorf("copied %d bytes of %d", n, cut)
		}
		return err
	})
	if err == nil {
		err = s.addCatalogThen(&child, now, now, func() error { return fsstore.WriteDoc(s.docPath(child.ID), &child) })
	}
	if err != nil {
		os.Remove(path)
		fsstore.SyncDir(s.Dir)
		undoID()
		return Session{}, err
	}
	return child, nil
}

// lockNew gives sess a new id that no session has, and takes its lock.
// Ids carry a random part, so a second try is all but never needed.
func (s *Store) lockNew(sess *Session, now time.Time) (func(), error) {
	for range 8 {
		id := fsstore.NewID(now)
		unlock, err := s.lock(id)
		if err != nil {
			return nil, err
		}
		if _, err := os.Lstat(s.docPath(id)); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Lstat(s.logPath(id)); errors.Is(err, os.ErrNotExist) {
				sess.ID = id
				return unlock, nil
			}
		}
		unlock()
	}
	return nil, errors.New("could not find a free session id")
}

// errStop ends a scan early.
var errStop = errors.New("stop")

// lineEnd returns the offset just past line at (its newline) of the first
// size bytes of f, checking that the line's seq is at. Lines are numbered
// from 1 with no gaps, so line at holds seq at. It reads from whichever
// end is nearer: a fork a few turns back (/undo, /retry) reads only those
// turns.
func lineEnd(f *os.File, size int64, at int64) (int64, error) {
	total, _, err := lastSeq(f, size)
	if err != nil {
		return 0, err
	}
	if at > total {
		return 0, fsstore.Invalidf("%s has %d complete messages, not %d", f.Name(), total, at)
	}
	if at == total {
		_, end, err := fsstore.LastLineSpan(f, size)
		return end + 1, err
	}
	var cut int64
	var corrupt error
	check := func(line []byte, off int64) {
		seq, err := seqOf(line)
		if err == nil && seq != at {
			err = fmt.Errorf("line %d holds seq %d", at, seq)
		}
		if err != nil {
			corrupt = &fsstore.CorruptError{Path: f.Name(), Offset: off, Err: err}
		}
	}
	if at > total/2 {
		n := total + 1
		err = fsstore.EachLineBackward(f, size, func(line []byte, off int64) bool {
			n--
			if n > at {
				cut = off // the start of line at+1 is the end of line at
				return true
			}
			check(line, off)
			return false
		})
	} else {
		var n int64
		_, err = fsstore.ScanLines(f, size, func(line []byte, off int64) error {
			if n++; n < at {
				return nil
			}
			cut = off + int64(len(line)) + 1
			check(line, off)
			return errStop
		})
		if errors.Is(err, errStop) {
			err = nil
		}
	}
	if err = errors.Join(err, corrupt); err != nil {
		return 0, err
	}
	return cut, nil
}

// seqOf is the seq of a stored line, read from its head when it has the
// form Message.MarshalJSON writes.
func seqOf(line []byte) (int64, error) {
	if head := prefixObject(line[:min(len(line), 256)]); head != nil {
		var pos struct {
			Seq int64 `json:"seq"`
		}
		if json.Unmarshal(head, &pos) == nil && pos.Seq > 0 {
			return pos.Seq, nil
		}
	}
	m, err := ParseMessage(line)
	return m.Seq, err
}

// firstUserSeq is the seq of the first user message of the first size
// bytes of f (0 if none): the one a preview is taken from. The scan stops
// there, which is at the first lines of nearly every transcript.
func firstUserSeq(f *os.File, size int64) (int64, error) {
	var first int64
	_, err := fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		m, err := ParseMessage(line)
		if err != nil {
			return err
		}
		if m.Role == "user" {
			first = m.Seq
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return first, err
}
