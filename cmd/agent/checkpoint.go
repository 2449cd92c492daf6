package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"syscall"

	"github.com/hermes/hermes/fsstore/checkpoints"
)

// callChanges gathers the changes one call makes, for its tool message
// (fsstore/checkpoints: Field). A call abandoned by the engine may still
// add to it, hence the mutex.
type callChanges struct {
	mu      sync.Mutex
	store   *checkpoints.Store
	session string
	call    string
	list    []checkpoints.Change
}

// changes returns what the call changed so far.
func (cc *callChanges) changes() []checkpoints.Change {
	if cc == nil {
		return nil
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return slices.Clone(cc.list)
}

// withCall is env for the call id of its session: its file changes are
// checkpointed into env.Checkpoints (when set) and gathered for the
// call's result.
func (env *Env) withCall(id string) *Env {
	c := *env
	c.callID = id
	if env.Checkpoints != nil {
		c.call = &callChanges{store: env.Checkpoints, session: env.SessionID, call: id}
	}
	return &c
}

// checkpointStep runs after each durable step of a checkpointed change
// ("object", "pending", and "result" once the result is stored); a test
// kills the process there.
var checkpointStep = func(string) {}

// errTooBig is a before-image over checkpoints.max_file.
type errTooBig struct{ size, limit int64 }

func (e errTooBig) Error() string {
	return fmt.Sprintf("larger than checkpoints.max_file (%d bytes; the limit is %d)", e.size, e.limit)
}

// inflight is a checkpoint being stored while its tool writes the new
// file beside the old one: ready waits for it (replace calls it before
// the rename, so the before-image is durable before the file changes),
// settle takes the change back from the call's record when the write
// failed.
type inflight struct {
	done   chan error
	wait   func() error
	cc     *callChanges
	change checkpoints.Change
	after  []byte
}

// ready waits for the checkpoint; an error refuses the write.
func (f *inflight) ready() error {
	if f == nil {
		return nil
	}
	return f.wait()
}

// settle is called with the write's error, once the write is over: a
// failed write takes its change back, after the checkpoint has ended; a
// write that succeeded tells the store what the file now holds, so that
// its next change need not hash those bytes again (Store.Remembered).
func (f *inflight) settle(err error) {
	if f == nil {
		return
	}
	if err == nil {
		f.cc.store.Wrote(f.change.Path, f.after, f.change.After)
		return
	}
	f.wait()
	f.cc.mu.Lock()
	defer f.cc.mu.Unlock()
	if i := slices.Index(f.cc.list, f.change); i >= 0 {
		f.cc.list = slices.Delete(f.cc.list, i, i+1)
	}
}

// checkpoint starts storing the prior bytes of the file at p (named as
// the model gave it) before a tool replaces them with after: fi is its
// FileInfo (nil when it does not exist), prior its bytes when the tool
// has read them (nil to have them read here). It is startCheckpoint and
// then at once, for a tool whose new bytes are known when it starts.
func (env *Env) checkpoint(ctx context.Context, p place, name string, fi fs.FileInfo, prior, after []byte) (note string, f *inflight) {
	return env.startCheckpoint(ctx, p, name, fi, prior).then(after)
}

// storing is a before-image whose storing has begun (startCheckpoint),
// waiting for the bytes that will replace it (then).
type storing struct {
	cc     *callChanges
	name   string
	change checkpoints.Change
	note   string
	before chan string // the prior bytes' hash, once known
	saved  chan error  // the object's storing, once over; nil when there is none
}

// startCheckpoint starts storing the prior bytes of the file at p, as
// checkpoint does, before the tool has made the bytes that will replace
// them, so that the object's write and sync run beside the tool's work
// (edit_file's search and replace of a large file); then gives it those
// bytes. A tool that ends without calling then (its edit refused) calls
// drop, and leaves the object stored, which nothing refers to, as a
// crash would: the same bytes are the before-image of the file's next
// change, and a prune removes it otherwise. A nil storing (no checkpoint store) does nothing.
func (env *Env) startCheckpoint(ctx context.Context, p place, name string, fi fs.FileInfo, prior []byte) *storing {
	cc := env.call
	if cc == nil {
		return nil
	}
	c := checkpoints.Change{Path: p.abs}
	if fi == nil {
		c.Created = true
	} else {
		c.Mode = checkpoints.ModeText(fi.Mode())
		limit := cc.store.Limit()
		var err error
		if prior == nil || int64(len(prior)) > limit {
			prior, _, err = readRegular(ctx, p.fsys, p.name, name, syscall.O_NOFOLLOW, limit, func(size int64) error {
				return errTooBig{size, limit}
			})
		}
		var big errTooBig
		switch {
		case errors.As(err, &big):
			c.NotCheckpointed = big.Error()
		case err != nil:
			c.NotCheckpointed = "unreadable (" + err.Error() + ")"
		}
	}
	st := &storing{cc: cc, name: name, change: c, before: make(chan string, 1)}
	if c.NotCheckpointed != "" {
		st.note = fmt.Sprintf(" (not checkpointed: %s is %s; this change cannot be taken back)", name, c.NotCheckpointed)
	}
	if fi == nil || c.NotCheckpointed != "" {
		st.before <- ""
		return st
	}
	// The prior bytes' hash is known without hashing them when they are
	// what a change of this store last wrote there (Remembered); else the
	// object's bytes are written and synced while they are hashed
	// (SaveHashing). The object is stored as it is (a gzip costs more
	// than the write it spares).
	st.saved = make(chan error, 1)
	stored := func(err error) {
		if err == nil {
			checkpointStep("object")
		}
		st.saved <- err
	}
	if h, ok := cc.store.Remembered(p.abs, prior); ok {
		st.before <- h
		go func() { stored(cc.store.Save(h, prior)) }()
	} else {
		go func() {
			_, err := cc.store.SaveHashing(prior, func(h string) { st.before <- h })
			stored(err)
		}()
	}
	return st
}

// drop ends a before-image's storing that no change will use (the tool
// refused the change after startCheckpoint): it waits for the object's
// write and sync, so that the call ends with nothing of its own still
// writing, which a process exiting next would cut short.
func (st *storing) drop() {
	if st != nil && st.saved != nil {
		<-st.saved
	}
}

// then goes on with the checkpoint st began, for a change that writes
// after: the call's pending record, with the change added, is appended
// and synced in the background while the tool writes its temp file
// (the object may still be being stored); the tool passes the returned
// inflight's ready to replace, which waits for both before the rename,
// and calls settle with the write's error. A store that cannot be
// written refuses the change (ready's error): never a change without its
// checkpoint. note is what the result adds when the file cannot be
// checkpointed (too large, unreadable): the change goes on, recorded as
// not checkpointed, and the model and the user are told.
func (st *storing) then(after []byte) (note string, f *inflight) {
	if st == nil {
		return "", nil
	}
	cc, c := st.cc, st.change
	f = &inflight{done: make(chan error, 1), cc: cc, after: after}
	f.wait = sync.OnceValue(func() error { return <-f.done })
	// The new bytes' hash (a 1 MB file: a BLAKE3 is 0.5 ms, where a
	// SHA-256 was 3 to 10 ms) runs beside the tool's write too, and the
	// pending record is written as soon as both hashes are known
	// (fsstore/checkpoints doc, "The cost of a checkpoint").
	go func() {
		c.After = checkpoints.Hash(after)
		c.Before = <-st.before
		cc.mu.Lock()
		defer cc.mu.Unlock()
		list := append(slices.Clone(cc.list), c)
		perr := cc.store.SetPending(checkpoints.Pending{SessionID: cc.session, CallID: cc.call, Changes: list})
		if perr == nil {
			checkpointStep("pending")
		}
		if st.saved != nil {
			if err := <-st.saved; err != nil {
				f.done <- fmt.Errorf("%s: its checkpoint could not be stored (%w); nothing written", st.name, err)
				return
			}
		}
		if perr != nil {
			f.done <- fmt.Errorf("%s: its checkpoint could not be recorded (%w); nothing written", st.name, perr)
			return
		}
		cc.list = list
		f.change = c
		f.done <- nil
	}()
	return st.note, f
}

// present is what the file at path holds now: the hash of its bytes, to
// compare with the hashes like (checkpoints.NewHasher), and its FileInfo,
// or a nil FileInfo when there is none. A symbolic link or anything but
// a regular file is an error: neither is what a tool wrote.
func present(ctx context.Context, fsys fileSys, path string, like ...string) (checkpoints.Sum, fs.FileInfo, error) {
	f, err := openRegular(ctx, fsys, path, path, syscall.O_NOFOLLOW)
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoints.Sum{}, nil, nil
	}
	if err != nil {
		return checkpoints.Sum{}, nil, err
	}
	defer f.Close()
	h := checkpoints.NewHasher(like...)
	if _, err := io.Copy(h, f); err != nil {
		return checkpoints.Sum{}, nil, err
	}
	return h.Sum(), f.info, nil
}

// settlePending returns the changes of the pending record of call callID
// of session sid (found false when it has none), each resolved against
// its file (checkpoints.Resolve).
func settlePending(store *checkpoints.Store, sid, callID string) (_ []checkpoints.Change, found bool, _ error) {
	p, found, err := store.PendingOf(sid, callID)
	if err != nil || !found {
		return nil, false, err
	}
	return checkpoints.Resolve(p.Changes, func(path string, like ...string) (checkpoints.Sum, bool, error) {
		h, fi, err := present(context.Background(), hostFiles{}, path, like...)
		return h, fi != nil, err
	}), true, nil
}
