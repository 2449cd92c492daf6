package fsstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxIDLen is the longest id, in bytes, that CheckID accepts.
const MaxIDLen = 96

// CheckID reports whether id can name a record: a file name inside a store
// directory and nothing else. It refuses the empty string, '/', '\\', "..",
// a leading '.', NUL and other control characters, invalid UTF-8 and more
// than MaxIDLen bytes. what names the kind of id in the error ("session id").
// Every store calls it before the id touches a path.
func CheckID(what, id string) error {
	switch {
	case id == "":
		return Invalidf("empty %s", what)
	case len(id) > MaxIDLen:
		return Invalidf("%s is %d bytes; the limit is %d", what, len(id), MaxIDLen)
	case !utf8.ValidString(id):
		return Invalidf("%s %q is not valid UTF-8", what, id)
	case strings.HasPrefix(id, "."):
		return Invalidf("%s %q starts with '.'", what, id)
	case strings.Contains(id, ".."):
		return Invalidf("%s %q contains '..'", what, id)
	case strings.ContainsAny(id, `/\`):
		return Invalidf("%s %q contains a path separator", what, id)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return Invalidf("%s %q contains a control character", what, id)
		}
	}
	return nil
}

// fileKinds are the kinds of file a record's id names, <id>.<kind>, in
// every store.
var fileKinds = []string{"json", "jsonl", "lock", "log"}

// CheckNewID is CheckID for the id of a record about to be made (a create,
// an import). It also refuses an id with a part, after a '.', that is a
// kind of file a store writes (json, jsonl, lock, log, in any case), such
// as "abc.jsonl.keep": its files would begin with the name of a file of
// record "abc" and a '.' ("abc.jsonl.keep.json"), so a pattern meant for
// the files of one record (abc.jsonl.*) would take another's. Records
// with such ids made before this rule are still read, ended and removed,
// by exact names; fsck reports them.
func CheckNewID(what, id string) error {
	if err := CheckID(what, id); err != nil {
		return err
	}
	if kind := badPart(id); kind != "" {
		return Invalidf("%s %q has the part %q: no part of an id after a '.' may be json, jsonl, lock or log (in any case), since its files' names would begin with another record's", what, id, kind)
	}
	return nil
}

// badPart returns the first part of id, after a '.', that is a kind of
// file ("" if none).
func badPart(id string) string {
	parts := strings.Split(id, ".")
	for _, p := range parts[1:] {
		for _, k := range fileKinds {
			if strings.EqualFold(p, k) {
				return p
			}
		}
	}
	return ""
}

// SafeID maps an id that CheckID accepts to one that CheckNewID accepts:
// the '.' before each part that is a kind of file becomes '_'
// ("proj.jsonl.archive" is "proj_jsonl.archive"). An id that CheckNewID
// accepts is returned as it is. The map is the same on every call, so an
// import run twice finds the session its first run made.
func SafeID(id string) string {
	parts := strings.Split(id, ".")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		sep := "."
		for _, k := range fileKinds {
			if strings.EqualFold(p, k) {
				sep = "_"
			}
		}
		b.WriteString(sep + p)
	}
	return b.String()
}

// NewID returns a new time-ordered id such as 20261121_020734_a1b2c3: a
// directory listing sorts by creation without opening a file.
func NewID(now time.Time) string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return now.UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b[:])
}

// DocIDs returns the ids of the documents (<id>.json) in dir, newest first:
// ids sort by creation. A missing dir holds none.
func DocIDs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".json") {
			ids = append(ids, strings.TrimSuffix(name, ".json"))
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids, nil
}

// WithPrefix returns the ids that start with ref.
func WithPrefix(ids []string, ref string) []string {
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, ref) {
			out = append(out, id)
		}
	}
	return out
}

// Ambiguous is the error for a prefix that names several records: exit 2,
// listing (at most ten of) the candidates.
func Ambiguous(ref string, matches []string) error {
	if len(matches) > 10 {
		matches = append(matches[:10:10], "…")
	}
	return Invalidf("%q is ambiguous: it is a prefix of %s", ref, strings.Join(matches, ", "))
}

// MaxTitleLen is the longest title, in bytes, that CheckTitle accepts.
const MaxTitleLen = 200

// CheckTitle reports whether title can be a record's title (a session's, a board task's): any text
// without control characters (a newline would break listings) or
// bidirectional controls, at most MaxTitleLen bytes.
func CheckTitle(title string) error {
	if len(title) > MaxTitleLen {
		return Invalidf("title is %d bytes; the limit is %d", len(title), MaxTitleLen)
	}
	if !utf8.ValidString(title) {
		return Invalidf("title %q is not valid UTF-8", title)
	}
	for _, r := range title {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return Invalidf("title %q contains a control character", title)
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			// Bidi overrides and isolates make a title read as another
			// one in a listing.
			return Invalidf("title %q contains a bidirectional control character (U+%04X)", title, r)
		}
	}
	return nil
}

// NormalTitle checks title as CheckTitle does and returns it in Unicode
// NFC, the form in which titles are stored and compared, so that the
// composed and decomposed forms of one title are one title.
func NormalTitle(title string) (string, error) {
	if err := CheckTitle(title); err != nil {
		return "", err
	}
	return norm.NFC.String(title), nil
}

// MaxKeyLen is the longest idempotency key, in bytes, that CheckKey
// accepts.
const MaxKeyLen = 1024

// CheckKey refuses an idempotency key (a verb's --key) that is blank or
// longer than MaxKeyLen.
func CheckKey(key string) error {
	if strings.TrimSpace(key) == "" {
		return Invalidf("empty idempotency key")
	}
	if len(key) > MaxKeyLen {
		return Invalidf("idempotency key longer than %d bytes", MaxKeyLen)
	}
	return nil
}

// KeyName is the file name a store keeps an idempotency key's record
// under: the first 16 bytes of the key's SHA-256, in hex, so that any key
// names one file and never a path.
func KeyName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}
