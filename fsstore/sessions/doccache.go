package sessions

import (
	"slices"
	"sync"
)

// docStamp is what a stat tells of a document's file: the file (device
// and inode), its size and its times. A rewrite is a rename of a new
// file, so it changes the inode, unless the inode of a file removed since
// was given to the new one; then its size or its times tell it, unless
// it was written in the same tick of the filesystem's clock as the one
// stamped, which settled rules out.
type docStamp struct {
	Dev, Ino     uint64
	Size         int64
	MTime, CTime int64
	Regular      bool
}

// maxCachedDocs bounds the documents a store keeps decoded: a gateway
// serves a few hundred conversations at once, each read again at each of
// its turns.
const maxCachedDocs = 1024

// docCache keeps a store's documents decoded, each with the stamp of its
// file as it was read, so that a turn's four reads of one document (the
// gateway's routing, the engine's, and the two appends under the
// session's lock) cost a stat each instead of a read and a decode. A
// document is kept only once settled: read under the session's lock,
// and older, by the filesystem's own clock, than the transcript after an
// append that followed the read. Every later rewrite (by any process on
// any host: they all take the lock) then has a later time, so a stamp
// that is still the file's is the document that was read.
type docCache struct {
	mu   sync.Mutex
	docs map[string]cachedDoc
}

type cachedDoc struct {
	stamp docStamp
	sess  Session
}

func newDocCache() *docCache { return &docCache{docs: map[string]cachedDoc{}} }

// get returns the document of path if it is kept and stamp is still its
// file's.
func (c *docCache) get(path string, stamp docStamp) (Session, bool) {
	if c == nil || !stamp.Regular {
		return Session{}, false
	}
	c.mu.Lock()
	d, ok := c.docs[path]
	c.mu.Unlock()
	if !ok || d.stamp != stamp {
		return Session{}, false
	}
	return d.sess.clone(), true
}

// put keeps sess, read from path when its file had stamp, if the
// filesystem's clock has passed the file's time since: after is the time
// of a file of its directory written after the read (see docCache).
func (c *docCache) put(path string, stamp docStamp, sess Session, after int64) {
	if c == nil || !stamp.Regular || stamp.MTime >= after || stamp.CTime >= after {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.docs[path]; !ok && len(c.docs) >= maxCachedDocs {
		for k := range c.docs {
			delete(c.docs, k)
			break
		}
	}
	c.docs[path] = cachedDoc{stamp: stamp, sess: sess.clone()}
}

// clone is a copy of s that shares nothing a caller may change with s.
func (s Session) clone() Session {
	s.Meta = slices.Clone(s.Meta)
	if s.Delegation != nil {
		d := *s.Delegation
		s.Delegation = &d
	}
	return s
}
