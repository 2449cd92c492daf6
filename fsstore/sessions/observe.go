package sessions

import (
	"path/filepath"
	"strings"

	"github.com/hermes/hermes/fsstore/internal/seam"
)

// readObservers are the functions ObserveTranscriptReads added.
var readObservers seam.Observers

// ObserveTranscriptReads calls fn with the session id of every
// transcript of a store in dir (a profile's directory, or one above it)
// that is opened for reading (OpenTranscript, and so Messages,
// MessagesAt and a provider's history; Tail), from now until stop is called:
// how a test counts a turn's reads of its transcript. fn may be called
// from several goroutines at once; observers of different directories do
// not see each other's reads.
func ObserveTranscriptReads(dir string, fn func(id string)) (stop func()) {
	dir = filepath.Clean(dir)
	return readObservers.Add(func(path string) {
		if strings.HasPrefix(path, dir+string(filepath.Separator)) {
			fn(strings.TrimSuffix(filepath.Base(path), ".jsonl"))
		}
	})
}
