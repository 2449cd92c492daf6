package fsstore

import (
	"encoding/binary"
	"strings"
)

// CacheEncoder writes a cache file's records in the engine's cache
// format: a magic line naming the cache and its version, then numbers as
// varints and strings (Text) as their length and bytes, in an order the cache's
// owner decides. It exists because decoding with gob or JSON (reflection,
// and gob's type descriptors in every file) was most of what a session's
// start paid to read its caches; this format reads a few hundred
// records in microseconds. A cache is always rebuildable, so the format
// has no checksum: a file that does not decode whole is no cache.
type CacheEncoder struct{ b []byte }

// NewCacheEncoder starts a cache file with magic, a line that names the
// cache and its version (another version's file does not decode).
func NewCacheEncoder(magic string) *CacheEncoder {
	return &CacheEncoder{b: []byte(magic)}
}

// Uint appends v.
func (e *CacheEncoder) Uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

// Int appends v.
func (e *CacheEncoder) Int(v int64) { e.b = binary.AppendVarint(e.b, v) }

// Text appends s.
func (e *CacheEncoder) Text(s string) {
	e.Uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// Bytes is the file.
func (e *CacheEncoder) Bytes() []byte { return e.b }

// CacheDecoder reads what a CacheEncoder wrote, in the same order. A read
// past the end, or a number or length that does not fit, makes every
// later read a zero value and OK false; the strings it returns share one
// copy of the file.
type CacheDecoder struct {
	b   []byte
	s   string
	pos int
	bad bool
}

// NewCacheDecoder starts reading b, which must begin with magic.
func NewCacheDecoder(b []byte, magic string) *CacheDecoder {
	d := &CacheDecoder{b: b, s: string(b)}
	if !strings.HasPrefix(d.s, magic) {
		d.bad = true
	}
	d.pos = len(magic)
	return d
}

// Uint reads a number Uint wrote.
func (d *CacheDecoder) Uint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.pos += n
	return v
}

// Int reads a number Int wrote.
func (d *CacheDecoder) Int() int64 {
	if d.bad {
		return 0
	}
	v, n := binary.Varint(d.b[d.pos:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.pos += n
	return v
}

// Text reads a string Text wrote.
func (d *CacheDecoder) Text() string {
	n := d.Uint()
	if d.bad || n > uint64(len(d.b)-d.pos) {
		d.bad = true
		return ""
	}
	s := d.s[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return s
}

// Count reads a count Uint wrote, of items each at least one byte long:
// a count larger than the bytes left cannot be right, and is refused
// before the caller makes room for it.
func (d *CacheDecoder) Count() int {
	n := d.Uint()
	if d.bad || n > uint64(len(d.b)-d.pos) {
		d.bad = true
		return 0
	}
	return int(n)
}

// OK reports whether every read so far succeeded.
func (d *CacheDecoder) OK() bool { return !d.bad }

// Done reports whether every read succeeded and they read the whole file.
func (d *CacheDecoder) Done() bool { return !d.bad && d.pos == len(d.b) }
