// Command baseline builds and drives the two stores that scripts/bench.sh
// measures hermes against, from a hermes home that gendata or gentasks
// wrote, so that every store holds the same sessions, messages and tasks:
//
//	baseline sql -home DIR | sqlite3 state.db
//	    SQL that creates a SQLite database of the shape the SQLite-based
//	    runtime kept (WAL mode; a sessions table with an index on the last
//	    activity, a messages table with an index on session and order, a
//	    tasks table with an index on the finish time) and fills it with the
//	    profile's sessions, messages and finished tasks, in one transaction.
//	baseline snapshot -home DIR -id ID -out FILE
//	    The session as one JSON document, {"session":{…},"messages":[…]}:
//	    the rewrite-per-turn snapshot.
//	baseline snapshot-append -file FILE -role ROLE -content TEXT
//	    One turn persisted the snapshot way: read the whole document, add
//	    the message, write it all to a temporary file, fsync it, rename it
//	    over the old one and fsync the directory.
//
// A turn persisted in that database is turn_sql in scripts/bench.sh (one
// BEGIN IMMEDIATE transaction that inserts the message and bumps the
// session's count and activity time, run with synchronous=FULL), built in
// the shell so that no extra process runs inside the timed loops.
//
// The snapshot side is written in Go, like hermes, so that the comparison
// is of the two ways to store a turn and not of two languages; it keeps
// the messages as raw JSON rather than decoding them into values, the
// cheapest form of a rewrite.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	home := fs.String("home", "", "hermes home directory")
	profile := fs.String("profile", "default", "profile name")
	id := fs.String("id", "", "session id")
	out := fs.String("out", "", "output file")
	file := fs.String("file", "", "snapshot file")
	role := fs.String("role", "user", "message role")
	content := fs.String("content", "", "message text")
	fs.Parse(os.Args[2:])
	if fs.NArg() > 0 {
		usage()
	}
	profileDir := filepath.Join(*home, "profiles", *profile)
	var err error
	switch os.Args[1] {
	case "sql":
		err = writeSQL(os.Stdout, profileDir)
	case "snapshot":
		err = writeSnapshot(profileDir, *id, *out)
	case "snapshot-append":
		err = snapshotAppend(*file, *role, *content)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: baseline sql|snapshot|snapshot-append [flags] (see the package comment)")
	os.Exit(2)
}

const schema = `PRAGMA journal_mode=WAL;
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  title TEXT,
  source TEXT,
  model TEXT,
  state TEXT,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_updated ON sessions(updated_at);
CREATE TABLE messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id),
  role TEXT NOT NULL,
  content TEXT,
  tool_calls TEXT,
  tool_call_id TEXT,
  timestamp REAL NOT NULL
);
CREATE INDEX messages_session ON messages(session_id, id);
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  name TEXT,
  command TEXT,
  status TEXT,
  exit_code INTEGER,
  started_at REAL,
  finished_at REAL,
  log_path TEXT
);
CREATE INDEX tasks_finished ON tasks(finished_at);
`

// writeSQL writes the schema and the profile's data as SQL.
func writeSQL(out *os.File, profileDir string) error {
	w := bufio.NewWriterSize(out, 1<<20)
	w.WriteString(schema)
	w.WriteString("BEGIN;\n")
	store := openStore(profileDir)
	ids, err := store.IDs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		sess, err := store.Get(id)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "INSERT INTO sessions VALUES(%s,%s,%s,%s,%s,%s,%s,%d);\n",
			quote(sess.ID), quote(sess.Title), quote(sess.Source), quote(sess.Model), quote(sess.State),
			unix(sess.CreatedAt), unix(sess.UpdatedAt), sess.MessageCount)
		t, err := store.OpenTranscript(id)
		if err != nil {
			return err
		}
		err = t.Each(func(m sessions.Message) error {
			toolCalls := "NULL"
			if len(m.ToolCalls) > 0 {
				toolCalls = quote(string(m.ToolCalls))
			}
			_, err := fmt.Fprintf(w, "INSERT INTO messages(session_id,role,content,tool_calls,tool_call_id,timestamp) VALUES(%s,%s,%s,%s,%s,%s);\n",
				quote(id), quote(m.Role), quote(m.Text()), toolCalls, quote(m.ToolCallID), unix(m.TS))
			return err
		})
		t.Close()
		if err != nil {
			return err
		}
	}
	if err := writeTasksSQL(w, profileDir); err != nil {
		return err
	}
	w.WriteString("COMMIT;\n")
	return w.Flush()
}

// writeTasksSQL writes a row for each finished task of the task store in
// profileDir, as the store reads them (a finished record is a line of its
// finished log). The logs stay files, as they would beside a database.
func writeTasksSQL(w *bufio.Writer, profileDir string) error {
	list, err := tasks.NewStore(profileDir, time.Second, func(w string) { fmt.Fprintln(os.Stderr, "baseline:", w) }).History(tasks.HistoryOptions{})
	if err != nil {
		return err
	}
	for _, t := range list {
		exit := "NULL"
		if t.ExitCode != nil {
			exit = fmt.Sprint(*t.ExitCode)
		}
		fmt.Fprintf(w, "INSERT INTO tasks VALUES(%s,%s,%s,%s,%s,%s,%s,%s);\n",
			quote(t.ID), quote(t.Name), quote(strings.Join(t.Command, " ")), quote(t.Status), exit,
			unix(t.StartedAt), unix(t.FinishedAt), quote(t.ID+".log"))
	}
	return nil
}

func openStore(profileDir string) *sessions.Store {
	return sessions.NewStore(profileDir, filepath.Base(profileDir), time.Second, func(w string) { fmt.Fprintln(os.Stderr, "baseline:", w) })
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// unix turns a store timestamp into the database's seconds, or NULL.
func unix(ts fsstore.Time) string {
	t, err := ts.Instant()
	if err != nil {
		return "NULL"
	}
	return fmt.Sprintf("%.6f", float64(t.UnixMicro())/1e6)
}

// snapshot is the rewrite-per-turn document.
type snapshot struct {
	Session  json.RawMessage   `json:"session"`
	Messages []json.RawMessage `json:"messages"`
}

func writeSnapshot(profileDir, id, out string) error {
	store := openStore(profileDir)
	sess, err := store.Get(id)
	if err != nil {
		return err
	}
	var snap snapshot
	if snap.Session, err = json.Marshal(sess); err != nil {
		return err
	}
	t, err := store.OpenTranscript(id)
	if err != nil {
		return err
	}
	defer t.Close()
	err = t.EachLine(func(line []byte) error {
		snap.Messages = append(snap.Messages, bytes.Clone(line))
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(out, snap)
}

func snapshotAppend(file, role, content string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	m := sessions.Message{Seq: int64(len(snap.Messages) + 1), TS: fsstore.TimeOf(time.Now()), Role: role, Content: sessions.TextContent(content)}
	line, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	snap.Messages = append(snap.Messages, line)
	return writeJSON(file, snap)
}

// writeJSON replaces file with v atomically and durably.
func writeJSON(file string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return fsstore.WriteFileAtomic(file, data)
}
