package memory

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

func newStore(t *testing.T) (*Store, *storetest.Warnings) {
	t.Helper()
	w := &storetest.Warnings{}
	s := NewStore(filepath.Join(t.TempDir(), "profile"), 5*time.Second, w.Add)
	s.Now = storetest.NewClock().Now
	return s, w
}

var agent = Who{By: ByAgent, SessionID: "20261121_020734_a1b2c3"}

func texts(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Text
	}
	return out
}

func mustRead(t *testing.T, s *Store) State {
	t.Helper()
	st, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestChanges(t *testing.T) {
	s, w := newStore(t)
	for _, text := range []string{"the repo uses Go 1.26", "  tests run with -short in CI\n", "deploys on Fridays are frozen"} {
		if _, err := s.Add(Memory, text, agent); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Add(User, "prefers short answers", Who{By: ByUser}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Replace(Memory, "Fridays", "deploys on Fridays need a second reviewer", agent)
	if err != nil {
		t.Fatal(err)
	}
	if r.Change.Seq != 5 || r.Change.Old != "deploys on Fridays are frozen" {
		t.Errorf("replace: %+v", r.Change)
	}
	if _, err := s.Remove(Memory, "-short", agent); err != nil {
		t.Fatal(err)
	}
	st := mustRead(t, s)
	want := []string{"the repo uses Go 1.26", "deploys on Fridays need a second reviewer"}
	if got := texts(st.Memory); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("memory %q, want %q", got, want)
	}
	if got := texts(st.User); len(got) != 1 || got[0] != "prefers short answers" || st.User[0].By != ByUser {
		t.Errorf("user %+v", st.User)
	}
	if st.Seq != 6 {
		t.Errorf("seq %d, want 6", st.Seq)
	}
	if got := string(storetest.MustRead(t, s.Path(Memory))); got != "the repo uses Go 1.26\n§\ndeploys on Fridays need a second reviewer\n" {
		t.Errorf("MEMORY.md:\n%s", got)
	}
	if got := string(storetest.MustRead(t, s.Path(User))); got != "prefers short answers\n" {
		t.Errorf("USER.md:\n%s", got)
	}
	for _, p := range []string{s.Path(Memory), s.Path(User), s.LogPath()} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != fsstore.FileMode {
			t.Errorf("%s: %v %v", p, fi.Mode(), err)
		}
	}
	if len(w.List()) > 0 {
		t.Errorf("warnings: %q", w.List())
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil || len(findings) > 0 {
		t.Errorf("check: %+v %v", findings, err)
	}
}

func TestAddAgainIsNoop(t *testing.T) {
	s, _ := newStore(t)
	s.Add(Memory, "one", agent)
	r, err := s.Add(Memory, " one ", agent)
	if err != nil || r.Change.Seq != 0 {
		t.Fatalf("second add: %+v %v", r, err)
	}
	if st := mustRead(t, s); st.Seq != 1 || len(st.Memory) != 1 {
		t.Errorf("state %+v", st)
	}
}

func TestNamedEntries(t *testing.T) {
	s, _ := newStore(t)
	s.Add(Memory, "build with make", agent)
	s.Add(Memory, "build docs with hugo", agent)
	for _, tc := range []struct {
		old  string
		kind error
	}{{"missing", fsstore.ErrNotFound}, {"build", fsstore.ErrInvalid}, {"  ", fsstore.ErrInvalid}} {
		if _, err := s.Remove(Memory, tc.old, agent); !errors.Is(err, tc.kind) {
			t.Errorf("remove %q: %v, want %v", tc.old, err, tc.kind)
		}
		if _, err := s.Replace(Memory, tc.old, "x", agent); !errors.Is(err, tc.kind) {
			t.Errorf("replace %q: %v, want %v", tc.old, err, tc.kind)
		}
	}
	if _, err := s.Replace(Memory, "make", "build docs with hugo", agent); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("replace into a duplicate: %v", err)
	}
	for _, bad := range []string{"", " \n ", "a\x00b", "a\n§\nb", "\xff"} {
		if _, err := s.Add(Memory, bad, agent); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("add %q: %v, want invalid", bad, err)
		}
	}
	if _, err := s.Add("notes", "x", agent); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("unknown target: %v", err)
	}
	if st := mustRead(t, s); st.Seq != 2 {
		t.Errorf("refused changes were written: seq %d", st.Seq)
	}
}

func TestBound(t *testing.T) {
	s, _ := newStore(t)
	s.MaxChars = 100
	r, err := s.Add(Memory, strings.Repeat("a", 80), agent)
	if err != nil || r.Notice() != "" {
		t.Fatalf("80%%: %q %v", r.Notice(), err)
	}
	// 80 + 3 (separator) + 7 = 90: the notice.
	r, err = s.Add(Memory, strings.Repeat("b", 7), agent)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Notice(); !strings.Contains(n, "MEMORY.md is 90% full (90 of 100 characters)") {
		t.Errorf("notice %q", n)
	}
	_, err = s.Add(Memory, strings.Repeat("c", 10), agent)
	if !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("past the bound: %v", err)
	}
	for _, want := range []string{"MEMORY.md would hold 103 characters", "limit of 100", "now 90", "+13", "replace or remove"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	if st := mustRead(t, s); st.Seq != 2 {
		t.Errorf("refused add written: seq %d", st.Seq)
	}
	// A lowered bound: a change that shrinks the file goes through.
	s.MaxChars = 50
	if _, err := s.Replace(Memory, "bbb", "b", agent); err != nil {
		t.Errorf("shrinking past the bound: %v", err)
	}
	if _, err := s.Replace(Memory, "aaa", strings.Repeat("a", 81), agent); !errors.Is(err, fsstore.ErrRefused) {
		t.Errorf("growing past the bound: %v", err)
	}
	// Characters, not bytes.
	s.UserMaxChars = 10
	if _, err := s.Add(User, "éééééééééé", agent); err != nil {
		t.Errorf("10 characters in 20 bytes: %v", err)
	}
}

func TestRevert(t *testing.T) {
	s, _ := newStore(t)
	s.Add(Memory, "one", agent)                             // 1
	s.Add(Memory, "two", agent)                             // 2
	s.Replace(Memory, "two", "TWO", agent)                  // 3
	s.Remove(Memory, "one", agent)                          // 4
	if _, err := s.Revert(4, Who{By: ByUser}); err != nil { // 5: one back
		t.Fatal(err)
	}
	if _, err := s.Revert(3, Who{By: ByUser}); err != nil { // 6: two back
		t.Fatal(err)
	}
	if got := strings.Join(texts(mustRead(t, s).Memory), "|"); got != "two|one" {
		t.Errorf("after reverts: %s", got)
	}
	if _, err := s.Revert(2, Who{By: ByUser}); err != nil { // 7: two removed
		t.Fatal(err)
	}
	if got := strings.Join(texts(mustRead(t, s).Memory), "|"); got != "one" {
		t.Errorf("after reverting the add: %s", got)
	}
	for _, tc := range []struct {
		seq  int64
		kind error
	}{{3, fsstore.ErrRefused}, {4, fsstore.ErrRefused}, {99, fsstore.ErrNotFound}, {0, fsstore.ErrInvalid}} {
		if _, err := s.Revert(tc.seq, Who{By: ByUser}); !errors.Is(err, tc.kind) {
			t.Errorf("revert %d: %v, want %v", tc.seq, err, tc.kind)
		}
	}
	var log []Change
	s.Log(func(c Change) { log = append(log, c) })
	if len(log) != 7 || log[4].Reverts != 4 || log[4].Op != OpAdd || log[4].By != ByUser {
		t.Errorf("log %+v", log)
	}
}

// TestEditedFileKept: a MEMORY.md a person edited is copied aside before
// a change writes it again, and fsck says so.
func TestEditedFileKept(t *testing.T) {
	s, w := newStore(t)
	s.Add(Memory, "one", agent)
	storetest.MustWrite(t, s.Path(Memory), []byte("one\n§\nwritten by hand\n"))
	findings, err := s.Check(false, t.TempDir())
	if err != nil || len(findings) != 1 || !findings[0].Problem || findings[0].Path != s.Path(Memory) {
		t.Fatalf("check: %+v %v", findings, err)
	}
	if _, err := s.Add(Memory, "two", agent); err != nil {
		t.Fatal(err)
	}
	if got := string(storetest.MustRead(t, s.Path(Memory))); got != "one\n§\ntwo\n" {
		t.Errorf("MEMORY.md %q", got)
	}
	copies, _ := fsstore.CopiesAside(s.Dir, "MEMORY.md")
	if len(copies) != 1 || string(storetest.MustRead(t, copies[0])) != "one\n§\nwritten by hand\n" {
		t.Errorf("copies aside %q", copies)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], "kept aside") {
		t.Errorf("warnings %q", ws)
	}
	findings, _ = s.Check(false, t.TempDir())
	for _, f := range findings {
		if f.Problem {
			t.Errorf("after the change: %+v", f)
		}
	}
}

// TestChangeSyncsTheLogOnly: a change's one sync is its line in the log
// (the commit point); the file it writes again is a view of the log, not
// synced, and a view a power cut left empty is written again by the next
// change with nothing kept aside, since it holds nothing.
func TestChangeSyncsTheLogOnly(t *testing.T) {
	s, w := newStore(t)
	s.Add(Memory, "one", agent)
	var synced []string
	stop := fsstore.ObserveSyncs(s.Dir, func(name string) { synced = append(synced, filepath.Base(name)) })
	if _, err := s.Add(Memory, "two", agent); err != nil {
		t.Fatal(err)
	}
	stop()
	if len(synced) != 1 || synced[0] != "log.jsonl" {
		t.Errorf("synced %q, want the log alone", synced)
	}
	storetest.MustWrite(t, s.Path(Memory), nil)
	if _, err := s.Add(Memory, "three", agent); err != nil {
		t.Fatal(err)
	}
	if got := string(storetest.MustRead(t, s.Path(Memory))); got != "one\n§\ntwo\n§\nthree\n" {
		t.Errorf("MEMORY.md %q", got)
	}
	if copies, _ := fsstore.CopiesAside(s.Dir, "MEMORY.md"); len(copies) != 0 || len(w.List()) != 0 {
		t.Errorf("an empty view kept aside: %q, warnings %q", copies, w.List())
	}
}

// TestCheckRepairsStaleFile: a crash after the commit point leaves the
// file behind the log; fsck --repair writes it again.
func TestCheckRepairsStaleFile(t *testing.T) {
	s, _ := newStore(t)
	s.Add(User, "one", agent)
	s.Add(User, "two", agent)
	storetest.MustWrite(t, s.Path(User), []byte("one\n"))
	findings, err := s.Check(true, t.TempDir())
	if err != nil || len(findings) != 1 || !findings[0].Repaired {
		t.Fatalf("repair: %+v %v", findings, err)
	}
	if got := string(storetest.MustRead(t, s.Path(User))); got != "one\n§\ntwo\n" {
		t.Errorf("USER.md %q", got)
	}
	findings, _ = s.Check(false, t.TempDir())
	for _, f := range findings {
		if f.Problem {
			t.Errorf("after repair: %+v", f)
		}
	}
}

// TestFailedSyncWritesNothing: an append whose sync fails is cut back,
// and the change reported failed leaves the log and the file as they were.
func TestFailedSyncWritesNothing(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	s.Add(Memory, "one", agent)
	log := storetest.MustRead(t, s.LogPath())
	storetest.SetSeams(t, nil, nil, func(*os.File) error { return storetest.ErrInjected })
	if _, err := s.Add(Memory, "two", agent); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("add: %v", err)
	}
	storetest.SetSeams(t, nil, nil, func(f *os.File) error { return f.Sync() })
	if got := storetest.MustRead(t, s.LogPath()); string(got) != string(log) {
		t.Errorf("log after a failed append:\n%s", got)
	}
	if got := string(storetest.MustRead(t, s.Path(Memory))); got != "one\n" {
		t.Errorf("MEMORY.md %q", got)
	}
}

// TestTornTail: a change a crash cut short is skipped by readers and
// moved aside by the next change, which gets the next seq.
func TestTornTail(t *testing.T) {
	s, w := newStore(t)
	s.Add(Memory, "one", agent)
	f, err := os.OpenFile(s.LogPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":2,"ts":"2026-`)
	f.Close()
	if st := mustRead(t, s); st.Seq != 1 || len(w.List()) != 1 {
		t.Errorf("read past a torn tail: %+v %q", st, w.List())
	}
	r, err := s.Add(Memory, "two", agent)
	if err != nil || r.Change.Seq != 2 {
		t.Fatalf("add after a torn tail: %+v %v", r.Change, err)
	}
	if copies, _ := fsstore.CopiesAside(s.Dir, "log.jsonl"); len(copies) != 1 {
		t.Errorf("torn tail not kept aside: %q", copies)
	}
}

// TestHelperAdder is not a test: it is the helper process of
// TestConcurrentProcessAdds. It adds N entries "<tag>:<i>", one per call.
func TestHelperAdder(t *testing.T) {
	if os.Getenv(storetest.HelperRoleEnv) != "memory-adder" {
		t.Skip("helper process of TestConcurrentProcessAdds, which runs it")
	}
	n, err := strconv.Atoi(os.Getenv(storetest.HelperNEnv))
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(os.Getenv(storetest.HelperDirEnv), 5*time.Minute, func(msg string) { fmt.Fprintln(os.Stderr, "warning:", msg) })
	s.MaxChars = 1 << 20
	tag := os.Getenv(storetest.HelperTagEnv)
	for i := range n {
		if _, err := s.Add(Memory, fmt.Sprintf("%s:%d", tag, i), Who{By: ByAgent}); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
}

// TestConcurrentProcessAdds runs 8 processes that each add 100 entries at
// once: all 800 must be there, each once, every process's in its order,
// the log numbered 1…800 and MEMORY.md saying what the log says.
func TestConcurrentProcessAdds(t *testing.T) {
	const procs, each = 8, 100
	if testing.Short() {
		t.Skip("-short: starts 8 processes that make 800 synced changes; go test ./fsstore/memory/ (without -short) runs it")
	}
	s, _ := newStore(t)
	s.MaxChars = 1 << 20
	profileDir := filepath.Dir(s.Dir)
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*strings.Builder, procs)
	for p := range cmds {
		cmds[p] = storetest.HelperCommand(t, "TestHelperAdder", storetest.HelperRoleEnv+"=memory-adder",
			storetest.HelperDirEnv+"="+profileDir, fmt.Sprintf("%s=w%d", storetest.HelperTagEnv, p), fmt.Sprintf("%s=%d", storetest.HelperNEnv, each))
		outs[p] = &strings.Builder{}
		cmds[p].Stdout, cmds[p].Stderr = outs[p], outs[p]
		if err := cmds[p].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("adder %d: %v\n%s", p, err, outs[p])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	st := mustRead(t, s)
	if len(st.Memory) != procs*each || st.Seq != procs*each {
		t.Fatalf("%d entries, seq %d; want %d", len(st.Memory), st.Seq, procs*each)
	}
	next := make([]int, procs)
	for i, e := range st.Memory {
		var p, k int
		if _, err := fmt.Sscanf(e.Text, "w%d:%d", &p, &k); err != nil || p < 0 || p >= procs {
			t.Fatalf("entry %d: %q", i, e.Text)
		}
		if k != next[p] {
			t.Fatalf("entry %d is %q; process %d's next was %d (a loss, duplicate or reordering)", i, e.Text, p, next[p])
		}
		next[p]++
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Problem {
			t.Errorf("check: %+v", f)
		}
	}
}

// TestHelperAcker is not a test: it is the helper process of
// TestKilledAddersLoseNothing. It adds N entries "<tag>:<i>" and prints
// each one on stdout once its Add has returned (acknowledged).
func TestHelperAcker(t *testing.T) {
	if os.Getenv(storetest.HelperRoleEnv) != "memory-acker" {
		t.Skip("helper process of TestKilledAddersLoseNothing, which runs it")
	}
	n, _ := strconv.Atoi(os.Getenv(storetest.HelperNEnv))
	s := NewStore(os.Getenv(storetest.HelperDirEnv), 5*time.Minute, func(string) {})
	s.MaxChars = 1 << 20
	tag := os.Getenv(storetest.HelperTagEnv)
	for i := range n {
		text := fmt.Sprintf("%s:%d", tag, i)
		if _, err := s.Add(Memory, text, Who{By: ByAgent}); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		fmt.Println(text)
	}
}

// TestKilledAddersLoseNothing kills two adding processes with SIGKILL,
// again and again, at moments that fall anywhere in a change: every entry
// a process acknowledged must be there, once; a torn tail a kill left is
// moved aside by the next change; and fsck --repair makes the store clean.
//
// Each round is a fresh chance to kill at a bad moment, like a property
// test's seed: a plain go test runs 6 rounds, HERMES_TEST_LONG=1 (CI) all
// 12 (storetest.Seeds); the rounds were most of the package's time.
func TestKilledAddersLoseNothing(t *testing.T) {
	const procs = 2
	rounds := storetest.Seeds(12)
	if testing.Short() {
		t.Skip("-short: kills 24 adding processes; go test ./fsstore/memory/ (without -short) runs it")
	}
	s, _ := newStore(t)
	s.MaxChars = 1 << 20
	s.Warn = func(string) {}
	acked := map[string]bool{}
	for r := range rounds {
		cmds := make([]*exec.Cmd, procs)
		outs := make([]*strings.Builder, procs)
		for p := range cmds {
			cmds[p] = storetest.HelperCommand(t, "TestHelperAcker", storetest.HelperRoleEnv+"=memory-acker",
				storetest.HelperDirEnv+"="+filepath.Dir(s.Dir), fmt.Sprintf("%s=r%dp%d", storetest.HelperTagEnv, r, p), storetest.HelperNEnv+"=100000")
			outs[p] = &strings.Builder{}
			cmds[p].Stdout = outs[p]
			if err := cmds[p].Start(); err != nil {
				t.Fatal(err)
			}
		}
		// Long enough for the test binary to start and make some changes.
		time.Sleep(time.Duration(150+r*23%100) * time.Millisecond)
		for p, cmd := range cmds {
			cmd.Process.Kill()
			cmd.Wait()
			for _, line := range strings.Fields(outs[p].String()) {
				acked[line] = true
			}
		}
	}
	st := mustRead(t, s)
	seen := map[string]int{}
	for _, e := range st.Memory {
		seen[e.Text]++
	}
	for text := range acked {
		if seen[text] != 1 {
			t.Errorf("acknowledged entry %q stored %d times", text, seen[text])
		}
	}
	if len(acked) == 0 {
		t.Fatal("no add was acknowledged before its process was killed")
	}
	if _, err := s.Check(true, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Problem {
			t.Errorf("after repair: %+v", f)
		}
	}
	t.Logf("%d acknowledged, %d stored", len(acked), len(st.Memory))
}

// TestCache: reads and changes use the cache while it is the log's; one
// that is garbage or written for another size is passed over; one that
// lies about the log is found by fsck and written again.
func TestCache(t *testing.T) {
	s, _ := newStore(t)
	s.Add(Memory, "one", agent)
	s.Add(Memory, "two", agent)
	if _, ok := s.cached(); !ok {
		t.Fatal("no cache after a change")
	}
	storetest.MustWrite(t, s.CachePath(), []byte("{garbage"))
	if got := strings.Join(texts(mustRead(t, s).Memory), "|"); got != "one|two" {
		t.Errorf("with a garbage cache: %s", got)
	}
	if r, err := s.Add(Memory, "three", agent); err != nil || r.Change.Seq != 3 {
		t.Fatalf("add past a garbage cache: %+v %v", r.Change, err)
	}
	if got := strings.Join(texts(mustRead(t, s).Memory), "|"); got != "one|two|three" {
		t.Errorf("after: %s", got)
	}
	fi, _ := os.Stat(s.LogPath())
	s.writeCache(State{Memory: []Entry{{Text: "a lie"}}, Seq: 3}, fi.Size())
	findings, err := s.Check(true, t.TempDir())
	if err != nil || len(findings) != 1 || !findings[0].Repaired || findings[0].Path != s.CachePath() {
		t.Fatalf("check: %+v %v", findings, err)
	}
	if got := strings.Join(texts(mustRead(t, s).Memory), "|"); got != "one|two|three" {
		t.Errorf("after repair: %s", got)
	}
}

// TestReadWritesCache: a read that finds no cache for the log (none, a
// damaged one, or one from another version of hermes) folds the log and
// writes the cache, so the next session's start reads the cache.
func TestReadWritesCache(t *testing.T) {
	s, _ := newStore(t)
	s.Add(Memory, "one", agent)
	s.Add(User, "two", agent)
	storetest.MustWrite(t, s.CachePath(), []byte("{garbage"))
	if got := mustRead(t, s); strings.Join(texts(got.Memory), "|") != "one" || strings.Join(texts(got.User), "|") != "two" {
		t.Fatalf("read %+v", got)
	}
	c, ok := s.cached()
	if !ok || strings.Join(texts(c.Memory), "|") != "one" || strings.Join(texts(c.User), "|") != "two" || c.Seq != 2 {
		t.Errorf("cache after the read: %+v %v", c, ok)
	}
}

// TestCacheEncoding: the cache reads back what it wrote, and a file cut
// at any byte is no cache.
func TestCacheEncoding(t *testing.T) {
	s, _ := newStore(t)
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		t.Fatal(err)
	}
	st := State{Memory: []Entry{{Text: "é\n§ no", Seq: 3, By: ByAgent}, {Text: "b", Seq: 9, By: ByUser}}, Seq: 12}
	s.writeCache(st, 4096)
	c, ok := s.readCache()
	if !ok || c.LogSize != 4096 || fmt.Sprint(c.State) != fmt.Sprint(st) || c.User != nil {
		t.Fatalf("read back %+v %v", c, ok)
	}
	b := storetest.MustRead(t, s.CachePath())
	for n := range len(b) {
		storetest.MustWrite(t, s.CachePath(), b[:n])
		if c, ok := s.readCache(); ok {
			t.Fatalf("cut at %d of %d: read %+v", n, len(b), c)
		}
	}
}

// TestCheckCleanAfterAFileEmptied: a revert that empties a file leaves the
// cache and the log agreeing: fsck finds nothing (before: "cache disagrees
// with log.jsonl", exit 1, the cache's empty list against the log's none).
func TestCheckCleanAfterAFileEmptied(t *testing.T) {
	s, _ := newStore(t)
	if _, err := s.Add(Memory, "the user prefers tabs", agent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(User, "name: Sam", agent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revert(1, Who{By: ByUser}); err != nil {
		t.Fatal(err)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Problem {
			t.Errorf("fsck after the revert: %s: %s", f.Path, f.What)
		}
	}
}
