package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Listing is the document <profile>/mcp/<server>.json: the server's tool
// list as it last gave it, and its last failure. It is a cache: lost or
// damaged, it is made again by starting the server.
type Listing struct {
	Server string `json:"server"`
	// Key is the Spec.Key the tools were listed under; none: never
	// listed.
	Key      string       `json:"key,omitempty"`
	ListedAt *time.Time   `json:"listed_at,omitempty"`
	Tools    []RemoteTool `json:"tools"`
	// LastError is why the server's last start or call failed; it is
	// cleared by its next successful listing.
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	// ErrorKey is the Spec.Key the server failed under.
	ErrorKey string `json:"error_key,omitempty"`
	// AnsweredAt is when the server last answered a call after its last
	// error: it is working again, though its tools came from the cache.
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
}

// RemoteTool is one tool as the server lists it.
type RemoteTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Cache is the profile's mcp directory.
type Cache struct {
	Dir string
	// Warn reports a damaged document, moved aside.
	Warn func(string)
}

func (c Cache) path(server string) string { return filepath.Join(c.Dir, server+".json") }

// LogPath is where the server's stderr goes.
func (c Cache) LogPath(server string) string { return filepath.Join(c.Dir, server+".stderr.log") }

// Read returns the server's listing; a missing one is empty. A document
// that does not parse is moved aside and reported, and read as empty.
func (c Cache) Read(server string) (Listing, error) {
	var l Listing
	err := fsstore.ReadDoc(c.path(server), &l)
	var corrupt *fsstore.CorruptError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Listing{Server: server}, nil
	case errors.As(err, &corrupt):
		qerr := fsstore.Quarantine(c.path(server), time.Now().Unix(), err)
		if c.Warn != nil {
			c.Warn(fmt.Sprintf("MCP tool list cache: %v; the server is listed again", qerr))
		}
		return Listing{Server: server}, nil
	case err != nil:
		return Listing{Server: server}, err
	}
	if l.Server != server {
		return Listing{Server: server}, nil
	}
	return l, nil
}

// Listed records the server's tool list under key, clearing its last
// error.
func (c Cache) Listed(server, key string, tools []RemoteTool) error {
	now := time.Now().UTC()
	if tools == nil {
		tools = []RemoteTool{}
	}
	return c.write(Listing{Server: server, Key: key, ListedAt: &now, Tools: tools})
}

// Failed records why the server failed under key, keeping its tool list.
func (c Cache) Failed(server, key, reason string) error {
	l, err := c.Read(server)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	l.LastError, l.LastErrorAt, l.ErrorKey = reason, &now, key
	return c.write(l)
}

// Answered records that the server answered a call under key, when its
// last failure is later than anything that said it works: the state is
// of its last use. Otherwise nothing is written, so a call pays one read.
func (c Cache) Answered(server, key string) error {
	l, err := c.Read(server)
	if err != nil || !l.failedLast() || l.ErrorKey != key {
		return err
	}
	now := time.Now().UTC()
	l.AnsweredAt = &now
	return c.write(l)
}

// failedLast reports whether the listing's last error is later than its
// listing and than any call answered since.
func (l Listing) failedLast() bool {
	if l.LastErrorAt == nil {
		return false
	}
	return (l.ListedAt == nil || l.LastErrorAt.After(*l.ListedAt)) && (l.AnsweredAt == nil || l.LastErrorAt.After(*l.AnsweredAt))
}

func (c Cache) write(l Listing) error {
	if err := fsstore.EnsureDir(c.Dir); err != nil {
		return err
	}
	b, err := fsstore.EncodeDoc(c.path(l.Server), l)
	if err != nil {
		return err
	}
	return fsstore.WriteCacheFile(c.path(l.Server), b)
}

// Status is what hermes mcp list says of a server.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // stdio or http
	Enabled   bool   `json:"enabled"`
	// State is disabled; not listed (never started); listed (its tools
	// cached for its present configuration); stale (cached for another
	// configuration: the next use lists it again); or failed (its last
	// start or call failed after its last listing and after the last
	// call it answered). LastError stays told after it recovers.
	State       string     `json:"state"`
	Tools       int        `json:"tools"` // offered, its tools filter applied
	ListedAt    *time.Time `json:"listed_at,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}

// Status reads the server's state from the cache; it starts nothing.
func (p *Pool) Status(s Spec) (Status, error) {
	st := Status{Name: s.Name, Transport: "http", Enabled: s.Enabled, State: "not listed"}
	if s.Stdio() {
		st.Transport = "stdio"
	}
	l, err := p.Cache.Read(s.Name)
	if err != nil {
		return st, err
	}
	st.ListedAt, st.LastError, st.LastErrorAt = l.ListedAt, l.LastError, l.LastErrorAt
	if l.Key == s.Key {
		st.State = "listed"
		for _, t := range l.Tools {
			if s.Offered(t.Name) {
				st.Tools++
			}
		}
	} else if l.Key != "" {
		st.State = "stale"
	}
	switch {
	case !s.Enabled:
		st.State = "disabled"
	case l.failedLast():
		st.State = "failed"
	}
	return st, nil
}
