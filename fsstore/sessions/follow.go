package sessions

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// FollowEvery is how often Follow looks for new messages.
const FollowEvery = 200 * time.Millisecond

// Follow calls fn with each message of session id after seq after, as it
// is appended, until the session is ended (its last messages read first)
// or ctx is done (ctx's error). A line not yet whole (a write in
// progress, or a torn tail) is waited for, never passed on. It reads
// without a lock: appends are whole lines, and a line is read only once
// its newline is there.
func (s *Store) Follow(ctx context.Context, id string, after int64, fn func(Message) error) error {
	if err := fsstore.CheckID("session id", id); err != nil {
		return err
	}
	var off int64
	var partial []byte
	buf := make([]byte, 64<<10)
	tick := time.NewTicker(FollowEvery)
	defer tick.Stop()
	for {
		sess, err := s.Get(id)
		if err != nil {
			return err
		}
		// The state is read before the transcript: an end comes after a
		// session's last append, so this read has every message.
		ended := sess.State == StateEnded
		f, err := os.OpenFile(s.logPath(id), os.O_RDONLY, 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for f != nil {
			n, rerr := f.ReadAt(buf, off)
			off += int64(n)
			partial = append(partial, buf[:n]...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				line := partial[:i]
				partial = partial[i+1:]
				m, err := ParseMessage(bytes.Clone(line))
				if err != nil {
					f.Close()
					return &fsstore.CorruptError{Path: s.logPath(id), Offset: off - int64(len(partial)) - int64(len(line)) - 1, Err: err}
				}
				if m.Seq > after {
					if err := fn(m); err != nil {
						f.Close()
						return err
					}
				}
			}
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				f.Close()
				return rerr
			}
		}
		if f != nil {
			f.Close()
		}
		if ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
