package usage

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// Entry is one call as a report sees it: the call, and the message and
// session that hold it.
type Entry struct {
	Call
	Time    time.Time // the message's ts
	Session string
	Title   string
	// Source is the session's source (chat, gateway, kanban, cron,
	// import:claude-code, …); a gateway session of a named API key is
	// "gateway:<name>".
	Source string
}

// SourceOf is the source a report gives sess's calls.
func SourceOf(sess sessions.Session) string {
	if sess.Source == "gateway" && sess.GatewayKey != "" {
		return "gateway:" + sess.GatewayKey
	}
	return sess.Source
}

// usageKey is how a stored line holding a call begins its usage field
// (Field or OtherField); a line without it holds none and is not parsed.
var usageKey = []byte(`"` + Field)

// Walk calls fn with each call the transcripts of st hold, once: the
// sessions are read in the order of their ids (a fork's and a
// compression's after their parent, whose ids are older), and a call
// whose id a line read before held (a copy) is skipped. A session removed
// while Walk runs is skipped; a line whose usage does not decode is an
// error.
func Walk(st *sessions.Store, fn func(Entry) error) error {
	ids, err := st.IDs()
	if err != nil {
		return err
	}
	slices.Sort(ids)
	seen := map[string]bool{}
	for _, id := range ids {
		sess, err := st.Get(id)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if err := walkSession(st, sess, seen, fn); err != nil {
			return err
		}
	}
	return nil
}

func walkSession(st *sessions.Store, sess sessions.Session, seen map[string]bool, fn func(Entry) error) error {
	t, err := st.OpenTranscript(sess.ID)
	if errors.Is(err, fsstore.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer t.Close()
	source := SourceOf(sess)
	return t.EachLine(func(line []byte) error {
		if !bytes.Contains(line, usageKey) {
			return nil
		}
		m, err := sessions.ParseMessage(line)
		if err != nil {
			return err
		}
		c, ok, err := Of(m)
		if err != nil {
			return fsstore.Invalidf("session %s message %d: %v", sess.ID, m.Seq, err)
		}
		others, err := Others(m)
		if err != nil {
			return fsstore.Invalidf("session %s message %d: %v", sess.ID, m.Seq, err)
		}
		if ok {
			others = append([]Call{c}, others...)
		}
		for _, c := range others {
			if seen[c.ID] {
				continue
			}
			seen[c.ID] = true
			ts := m.TS
			if c.TS != "" {
				ts = c.TS
			}
			at, err := ts.Instant()
			if err != nil {
				return fsstore.Invalidf("session %s message %d: ts %q is not a time", sess.ID, m.Seq, ts)
			}
			if err := fn(Entry{Call: c, Time: at, Session: sess.ID, Title: sess.Title, Source: source}); err != nil {
				return err
			}
		}
		return nil
	})
}

// Filter picks the calls a report counts; a zero field picks all.
type Filter struct {
	Since, Until time.Time // Since inclusive, Until exclusive
	Model        string    // the model as answered, or a pattern (path.Match)
	Source       string    // a source, or its kind: "gateway" picks "gateway:<name>" too
	Session      string
}

// Keep reports whether f picks e.
func (f Filter) Keep(e Entry) bool {
	switch {
	case !f.Since.IsZero() && e.Time.Before(f.Since):
	case !f.Until.IsZero() && !e.Time.Before(f.Until):
	case f.Session != "" && e.Session != f.Session:
	case f.Source != "" && e.Source != f.Source && !strings.HasPrefix(e.Source, f.Source+":"):
	case f.Model != "" && e.Model != f.Model && !matches(f.Model, e.Model):
	default:
		return true
	}
	return false
}

func matches(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// Row is a report's line: the calls of one day, month, session, model or
// source, summed. Input is the fresh input (Call.Fresh), CacheCreate the
// cache writes, Total all four; Cost sums the calls that have a price, and
// Unpriced counts the others.
type Row struct {
	Key         string
	Models      []string
	Calls       int
	Input       int64
	Output      int64
	CacheCreate int64
	CacheRead   int64
	Total       int64
	Reasoning   int64
	Cost        float64
	Unpriced    int
	// Session and source of a session report's row.
	Title, Source string
	// First and Last are the times of its first and last call.
	First, Last time.Time
}

// Add adds o's counts and cost to r (keys, titles and times aside).
func (r *Row) Add(o Row) {
	r.Calls += o.Calls
	r.Input += o.Input
	r.Output += o.Output
	r.CacheCreate += o.CacheCreate
	r.CacheRead += o.CacheRead
	r.Total += o.Total
	r.Reasoning += o.Reasoning
	r.Cost += o.Cost
	r.Unpriced += o.Unpriced
	for _, m := range o.Models {
		if i, found := slices.BinarySearch(r.Models, m); !found {
			r.Models = slices.Insert(r.Models, i, m)
		}
	}
}

// Priced reports whether any of r's calls has a price.
func (r Row) Priced() bool { return r.Unpriced < r.Calls }

func (r *Row) add(e Entry, price func(model string) (Price, bool)) {
	if r.Calls == 0 || e.Time.Before(r.First) {
		r.First = e.Time
	}
	if e.Time.After(r.Last) {
		r.Last = e.Time
	}
	r.Calls++
	r.Input += e.Fresh()
	r.Output += e.Output
	r.CacheCreate += e.CacheWrite()
	r.CacheRead += e.CacheRead
	r.Total += e.Total()
	r.Reasoning += e.Reasoning
	if e.Model != "" {
		if i, found := slices.BinarySearch(r.Models, e.Model); !found {
			r.Models = slices.Insert(r.Models, i, e.Model)
		}
	}
	cost, ok := 0.0, false
	if pr, found := price(e.Model); found {
		cost, ok = pr.Cost(e.Call)
	}
	if ok {
		r.Cost += cost
	} else {
		r.Unpriced++
	}
}

// The reports: what a row's key is.
var Keys = map[string]func(Entry) string{
	"daily":   func(e Entry) string { return e.Time.Local().Format(time.DateOnly) },
	"monthly": func(e Entry) string { return e.Time.Local().Format("2006-01") },
	"session": func(e Entry) string { return e.Session },
	"model":   func(e Entry) string { return e.Model },
	"source":  func(e Entry) string { return e.Source },
}

// Report sums the calls f picks by key (one of Keys), priced by t, from
// the roll-up rl, synced first: rows in key order (sessions in order of
// their last call), and their total. A day file that does not parse is
// rebuilt from the transcripts, and read again.
//
// A profile that cannot be written (a read-only mount), whose roll-up
// cannot be brought up to date, is reported from its transcripts (Walk):
// slower, never wrong.
func Report(rl *Rollup, by string, f Filter, t Table) (rows []Row, total Row, err error) {
	fromRollup := func(fn func(Entry) error) error { return rl.Each(f.Since, f.Until, fn) }
	if err := rl.Sync(); fsstore.IsReadOnly(err) {
		rl.Warn(fmt.Sprintf("usage roll-up %s cannot be written (%v): reading every transcript", rl.Dir, err))
		return report(rl, func(fn func(Entry) error) error { return Walk(rl.Sessions, fn) }, by, f, t)
	} else if err != nil {
		return nil, Row{}, err
	}
	rows, total, err = report(rl, fromRollup, by, f, t)
	var corrupt *fsstore.CorruptError
	if errors.As(err, &corrupt) {
		rl.Warn(fmt.Sprintf("usage roll-up: %v; rebuilding it from the transcripts", err))
		if err := rl.Rebuild(); err != nil {
			return nil, Row{}, err
		}
		rows, total, err = report(rl, fromRollup, by, f, t)
	}
	return rows, total, err
}

// report sums the calls each yields.
func report(rl *Rollup, each func(func(Entry) error) error, by string, f Filter, t Table) (rows []Row, total Row, err error) {
	key := Keys[by]
	price := t.memo()
	byKey := map[string]*Row{}
	err = each(func(e Entry) error {
		if !f.Keep(e) {
			return nil
		}
		k := key(e)
		r := byKey[k]
		if r == nil {
			r = &Row{Key: k, Source: e.Source}
			if by == "session" {
				if sess, err := rl.Sessions.Get(e.Session); err == nil {
					r.Title = sess.Title
				}
			}
			byKey[k] = r
		}
		r.add(e, price)
		total.add(e, price)
		return nil
	})
	if err != nil {
		return nil, Row{}, err
	}
	for _, r := range byKey {
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if by == "session" && !rows[i].Last.Equal(rows[j].Last) {
			return rows[i].Last.Before(rows[j].Last)
		}
		return rows[i].Key < rows[j].Key
	})
	total.Key = "total"
	return rows, total, nil
}

// maxAncestors bounds the walk up a session's parents (SessionRow).
const maxAncestors = 64

// SessionRow sums the calls of session id that are its own, priced by t:
// those its transcript holds less those its ancestors' transcripts hold
// (parent_session_id, up to maxAncestors: the lines a fork or a
// compression copied), as a session report counts them.
func SessionRow(st *sessions.Store, id string, t Table) (Row, error) {
	return SessionRowIn(st, id, Filter{}, t)
}

// SessionRowIn is SessionRow for the calls f keeps (a cron run's: those
// between its start and its end, in a session the job's runs share).
func SessionRowIn(st *sessions.Store, id string, f Filter, t Table) (Row, error) {
	sess, err := st.Get(id)
	if err != nil {
		return Row{}, err
	}
	inherited := map[string]bool{}
	for parent, n := sess.ParentSessionID, 0; parent != "" && n < maxAncestors; n++ {
		p, err := st.Get(parent)
		if errors.Is(err, fsstore.ErrNotFound) {
			break
		}
		if err != nil {
			return Row{}, err
		}
		if err := walkSession(st, p, inherited, func(Entry) error { return nil }); err != nil {
			return Row{}, err
		}
		parent = p.ParentSessionID
	}
	r := Row{Key: id, Title: sess.Title, Source: SourceOf(sess)}
	price := t.memo()
	err = walkSession(st, sess, inherited, func(e Entry) error {
		if !f.Keep(e) {
			return nil
		}
		r.add(e, price)
		return nil
	})
	return r, err
}
