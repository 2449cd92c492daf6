package hosts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Seen is what this host has seen of the heartbeats it judges: for each
// lease (a key), the heartbeat it last read (a beat: any text that changes
// with each heartbeat) and the reading of this host's monotonic clock when
// it first read it. It is kept in hosts/<host key>.seen.json, one
// document per host, so that a command that runs once (a dispatch tick,
// tasks list) judges next time from what an earlier one saw.
type Seen struct {
	Dir         string // <profile>/hosts
	Host        string // this host (fsstore.ThisHost)
	Boot        string // its boot (fsstore.BootID): a clock reading of another boot is discarded
	LockTimeout time.Duration
	// Clock is this host's monotonic clock (fsstore.Uptime).
	Clock func() time.Duration
}

// NewSeen returns the sightings of this host in the profile whose
// directory is profileDir.
func NewSeen(profileDir string, lockTimeout time.Duration) *Seen {
	return &Seen{Dir: filepath.Join(profileDir, "hosts"), Host: fsstore.ThisHost(), Boot: fsstore.BootID(),
		LockTimeout: lockTimeout, Clock: fsstore.Uptime}
}

// sighting is one lease as this host saw it.
type sighting struct {
	Beat string `json:"beat"`
	// Since is the Clock reading when Beat was first read; Lease the
	// lease it was judged by, which says when the entry can go (forget).
	Since time.Duration `json:"since_ns"`
	Lease time.Duration `json:"lease_ns"`
}

// seenDoc is the document of a host's sightings.
type seenDoc struct {
	Host      string              `json:"host"`
	Boot      string              `json:"boot"`
	Sightings map[string]sighting `json:"sightings"`
}

// forgetAfter is how long past its lease a sighting whose beat has not
// changed is kept: a lease that ended so long ago has been judged, or is
// no longer looked at (its task ended on its own host).
const forgetAfter = time.Hour

// Key is the name of host's files in hosts/: a hash of its id, which may
// hold a "/" (fsstore.ThisHost).
func Key(host string) string {
	sum := sha256.Sum256([]byte(host))
	return hex.EncodeToString(sum[:8])
}

func (s *Seen) path() string { return filepath.Join(s.Dir, Key(s.Host)+".seen.json") }

// Watch records that the heartbeat of lease key now reads beat, and
// returns how long this host has watched it read so: zero when the beat
// is new or has changed since it last looked, else the time its own
// monotonic clock has run since it first read it. lease is how long the
// lease lasts, kept to forget the entry once it is long past. An error
// (the document cannot be read or written) comes with zero: the caller
// takes the lease for held, the side a crash errs on.
func (s *Seen) Watch(key, beat string, lease time.Duration) (time.Duration, error) {
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return 0, err
	}
	unlock, err := fsstore.Lock(s.path()+".lock", s.LockTimeout)
	if err != nil {
		return 0, err
	}
	defer unlock()
	doc, err := s.read()
	if err != nil {
		return 0, err
	}
	now := s.Clock()
	if old, ok := doc.Sightings[key]; ok && old.Beat == beat && old.Since <= now {
		if old.Lease == lease {
			return now - old.Since, nil
		}
		old.Lease = lease
		doc.Sightings[key] = old
		return now - old.Since, s.write(doc, now, key)
	}
	doc.Sightings[key] = sighting{Beat: beat, Since: now, Lease: lease}
	return 0, s.write(doc, now, key)
}

// Peek is Watch for a reader that writes nothing (a dry run): what was
// seen before, and zero for a beat not seen.
func (s *Seen) Peek(key, beat string) time.Duration {
	var doc seenDoc
	if fsstore.ReadDoc(s.path(), &doc) != nil || doc.Boot != s.Boot {
		return 0
	}
	now := s.Clock()
	if old, ok := doc.Sightings[key]; ok && old.Beat == beat && old.Since <= now {
		return now - old.Since
	}
	return 0
}

// read reads this host's sightings; those of another boot (or of none
// yet) are an empty set. A document that does not parse is quarantined
// and reported: the next Watch starts the set again, which only makes
// each lease's watch start later.
func (s *Seen) read() (seenDoc, error) {
	var doc seenDoc
	err := fsstore.ReadDoc(s.path(), &doc)
	var corrupt *fsstore.CorruptError
	switch {
	case errors.As(err, &corrupt):
		return doc, fsstore.Quarantine(s.path(), fsstore.Now().Unix(), err)
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return doc, err
	}
	if doc.Boot != s.Boot || doc.Sightings == nil {
		doc = seenDoc{Sightings: map[string]sighting{}}
	}
	doc.Host, doc.Boot = s.Host, s.Boot
	return doc, nil
}

// write writes doc, without the sightings long past their lease, other
// than key's.
func (s *Seen) write(doc seenDoc, now time.Duration, key string) error {
	for k, v := range doc.Sightings {
		if k != key && now-v.Since > v.Lease+forgetAfter {
			delete(doc.Sightings, k)
		}
	}
	b, err := fsstore.EncodeDoc(s.path(), doc)
	if err != nil {
		return err
	}
	return fsstore.WriteCacheFile(s.path(), b)
}
