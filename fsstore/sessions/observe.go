package sessions

import (
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// readObservers are the functions ObserveTranscriptReads added, copied on
// each change so that a read loads them with one atomic load, and nothing
// when there are none (production).
var (
	readObserversMu sync.Mutex
	readObservers   atomic.Pointer[[]*func(string)]
)

// ObserveTranscriptReads calls fn with the session id of every
// transcript of a store in dir (a profile's directory, or one above it)
// that is opened for reading (OpenTranscript, and so Messages,
// MessagesAt and a provider's history), from now until stop is called:
// how a test counts a turn's reads of its transcript. fn may be called
// from several goroutines at once; observers of different directories do
// not see each other's reads.
func ObserveTranscriptReads(dir string, fn func(id string)) (stop func()) {
	dir = filepath.Clean(dir)
	p := new(func(string))
	*p = func(path string) {
		if strings.HasPrefix(path, dir+string(filepath.Separator)) {
			fn(strings.TrimSuffix(filepath.Base(path), ".jsonl"))
		}
	}
	readObserversMu.Lock()
	defer readObserversMu.Unlock()
	var next []*func(string)
	if cur := readObservers.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, p)
	readObservers.Store(&next)
	return func() {
		readObserversMu.Lock()
		defer readObserversMu.Unlock()
		var rest []*func(string)
		for _, q := range *readObservers.Load() {
			if q != p {
				rest = append(rest, q)
			}
		}
		readObservers.Store(&rest)
	}
}

// observeRead tells the observers of a read of the transcript at path.
func observeRead(path string) {
	if list := readObservers.Load(); list != nil {
		for _, fn := range *list {
			(*fn)(path)
		}
	}
}
