// Command crashloop is the crash loop of hermes: a mixed workload of real
// hermes processes on one profile, killed with SIGKILL at random moments,
// then checked against what was acknowledged.
//
//	go build -o /tmp/hermes . && go run ./scripts/crashloop -hermes /tmp/hermes -home DIR -kills 500
//
// Four workers run, each in a loop, random operations as child processes:
// sessions new --id (idempotent create, retried after a kill), sessions
// append --role --content TOKEN, sessions save with the stored history plus
// one new message (the guard's extending path), sessions rename, tasks run
// --wait -- sh -c 'echo TOKEN', kanban create + claim + complete with
// the claim's environment, and tool-running agent turns (chat --resume
// --yes with an exec model that calls terminal; see agent.go). An
// operation is acknowledged only when its child exited 0; every
// acknowledged write is put in a ledger.
//
// A killer sends SIGKILL to a random running child every 1–30 ms. Every
// -check-every kills (and at the end) the workload stops and the profile is
// checked: hermes fsck (then fsck --repair and fsck again, which must exit
// 0), then every acknowledged write must be on disk (invariant 1), every
// transcript's seq must run 1, 2, 3 … with each token at most once, every
// session document must exist with a message_count never ahead of its
// transcript (invariants 4, 5), and every *.torn-* file must hold one partial line
// (invariant 3). In the agent sessions no call may have two results, and
// after one more turn (not killed) every call must have exactly one, an
// acknowledged turn's reply must be there, and no call may have run twice
// (invariant 11). Unacknowledged writes may or may not have landed.
//
// Then the gateway phase (gateway.go): a gateway killed -gateway-kills
// times under retrying clients; with -cron-kills, the cron phase
// (cron.go): tickers killed at random; and, with -delegate-kills, the
// delegation phase (delegate.go): chat turns killed in the middle of a
// delegation of three sub-agents, each followed by a turn that must carry
// it on.
//
// It prints the counts and exits 1 when an acknowledged write was lost or
// any check failed.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type opts struct {
	bin, home      string
	kills          int
	checkEvery     int
	workers        int
	maxSessions    int
	killMin        time.Duration
	killMax        time.Duration
	verbose        bool
	keepProfileDir bool
	gatewayKills   int
	gatewayClients int
	cronKills      int
	delegateKills  int
}

// renameAttempt is one rename of a session, in the order the harness ran
// them (renames of one session are serialized by the harness).
type renameAttempt struct {
	title string
	acked bool
}

// session is what the harness knows of one session.
type session struct {
	id string
	mu sync.RWMutex // save: exclusive; append: shared
	rn sync.Mutex   // serializes renames
	// under ledger.mu:
	renames  []renameAttempt
	maxCount int // highest message count an acknowledged write printed
}

type kanbanStage int

const (
	kbCreated kanbanStage = iota + 1
	kbClaimed
	kbDone
)

// ledger is the set of acknowledged writes and of attempted tokens.
type ledger struct {
	mu        sync.Mutex
	sessions  []*session        // acknowledged to exist
	pending   []string          // session ids whose create was not acknowledged
	nextSess  int               // for new session ids
	tokens    map[string]string // every attempted message token -> session id
	ackTokens map[string]string // acknowledged message token -> session id
	tasks     map[string]string // acknowledged task id -> log token
	kanban    map[string]kanbanStage
	exits     map[string]map[int]int // op -> exit code -> count (-9: SIGKILL)
	ops       int
	acked     int
}

type harness struct {
	o       opts
	led     ledger
	tokN    atomic.Int64
	procsMu sync.Mutex
	procs   map[*exec.Cmd]struct{}
	kills   atomic.Int64
	sent    atomic.Int64
	stop    atomic.Bool
	// counters of the checks
	checkpoints, fsckRepairs, verified, lost, violations int
	lastVerified, tornFiles                              int
	seenCorrupt, seen                                    map[string]bool
	problems                                             []string
	agent                                                agentState
	gateway                                              gatewayCounts
	cron                                                 cronCounts
	delegate                                             delegateCounts
}

func main() {
	var o opts
	flag.StringVar(&o.bin, "hermes", "", "the hermes binary (required)")
	flag.StringVar(&o.home, "home", "", "hermes home for the run (required; made if missing)")
	flag.IntVar(&o.kills, "kills", 500, "stop after this many children died of SIGKILL")
	flag.IntVar(&o.checkEvery, "check-every", 10, "stop the workload and check the profile every N kills")
	flag.IntVar(&o.workers, "workers", 4, "worker goroutines")
	flag.IntVar(&o.maxSessions, "sessions", 8, "at most this many sessions")
	flag.DurationVar(&o.killMin, "kill-min", time.Millisecond, "shortest pause between kills")
	flag.DurationVar(&o.killMax, "kill-max", 30*time.Millisecond, "longest pause between kills")
	flag.BoolVar(&o.verbose, "v", false, "print every problem as it is found and each checkpoint")
	flag.IntVar(&o.gatewayKills, "gateway-kills", 30, "then kill a gateway under retrying clients this many times (0: no gateway phase)")
	flag.IntVar(&o.gatewayClients, "gateway-clients", 10, "clients of the gateway phase (two of each kind)")
	flag.IntVar(&o.cronKills, "cron-kills", 0, "then kill cron tick processes this many times while every 1s jobs fall due (0: no cron phase; it waits the claim lease, 62 s)")
	flag.IntVar(&o.delegateKills, "delegate-kills", 0, "then kill this many chat turns in the middle of a delegation of three sub-agents, each turn followed by one not killed (0: no delegation phase)")
	flag.Parse()
	if o.bin == "" || o.home == "" || o.kills < 1 || o.checkEvery < 1 || o.workers < 1 || o.killMax < o.killMin {
		flag.Usage()
		os.Exit(2)
	}
	h := newHarness(o)
	os.Exit(h.run())
}

func newHarness(o opts) *harness {
	return &harness{
		o:           o,
		procs:       map[*exec.Cmd]struct{}{},
		seenCorrupt: map[string]bool{},
		seen:        map[string]bool{},
		led: ledger{
			tokens:    map[string]string{},
			ackTokens: map[string]string{},
			tasks:     map[string]string{},
			kanban:    map[string]kanbanStage{},
			exits:     map[string]map[int]int{},
		},
	}
}

func (h *harness) profileDir() string { return filepath.Join(h.o.home, "profiles", "default") }

func (h *harness) token(kind string) string {
	return fmt.Sprintf("tok-%s-%d-%d", kind, os.Getpid(), h.tokN.Add(1))
}

// result of one child.
type result struct {
	stdout, stderr string
	code           int // -9 when killed by SIGKILL, -1 for another signal
}

func (r result) ok() bool { return r.code == 0 }

// hermes runs one child; killable children are visible to the killer.
func (h *harness) hermes(op string, killable bool, stdin string, env []string, args ...string) result {
	cmd := exec.Command(h.o.bin, append([]string{"--home", h.o.home}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second // an orphaned `sh` may hold the pipes
	if err := cmd.Start(); err != nil {
		return result{stderr: err.Error(), code: 127}
	}
	if killable {
		h.procsMu.Lock()
		h.procs[cmd] = struct{}{}
		h.procsMu.Unlock()
	}
	_ = cmd.Wait()
	if killable {
		h.procsMu.Lock()
		delete(h.procs, cmd)
		h.procsMu.Unlock()
	}
	r := result{stdout: out.String(), stderr: errb.String(), code: -1}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			r.code = ws.ExitStatus()
		case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
			r.code = -9
		}
	}
	if killable {
		if r.code == -9 {
			h.kills.Add(1)
		}
		h.led.mu.Lock()
		h.led.ops++
		m := h.led.exits[op]
		if m == nil {
			m = map[int]int{}
			h.led.exits[op] = m
		}
		m[r.code]++
		h.led.mu.Unlock()
	}
	return r
}

func (h *harness) run() int {
	start := time.Now()
	if err := os.MkdirAll(h.o.home, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "crashloop:", err)
		return 2
	}
	// A few sessions exist before the first kill.
	for i := 0; i < 3; i++ {
		h.newSession(false)
	}
	if err := h.setUpAgent(); err != nil {
		fmt.Fprintln(os.Stderr, "crashloop:", err)
		return 2
	}
	next := h.o.checkEvery
	for {
		h.workload(int64(next))
		h.checkpoint()
		k := int(h.kills.Load())
		if k >= h.o.kills {
			break
		}
		next = k + h.o.checkEvery
		if next > h.o.kills {
			next = h.o.kills
		}
	}
	if h.o.gatewayKills > 0 {
		h.gatewayPhaseRun(h.o.gatewayKills, h.o.gatewayClients)
	}
	if h.o.cronKills > 0 {
		h.cronPhaseRun(h.o.cronKills)
	}
	if h.o.delegateKills > 0 {
		h.delegatePhaseRun(h.o.delegateKills)
	}
	h.led.mu.Lock()
	ops, acked := h.led.ops, h.led.acked
	exits := h.led.exits
	h.led.mu.Unlock()
	fmt.Println("crashloop: exit codes by operation (-9: SIGKILL):")
	var names []string
	for n := range exits {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var codes []int
		for c := range exits[n] {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		var parts []string
		for _, c := range codes {
			parts = append(parts, fmt.Sprintf("%d:%d", c, exits[n][c]))
		}
		fmt.Printf("  %-16s %s\n", n, strings.Join(parts, " "))
	}
	fmt.Printf("kills:              %d (SIGKILLs sent: %d)\n", h.kills.Load(), h.sent.Load())
	fmt.Printf("operations:         %d\n", ops)
	fmt.Printf("acknowledged:       %d\n", acked)
	fmt.Printf("verified:           %d (acknowledged writes found at the last check; %d checks in all)\n", h.lastVerified, h.verified)
	fmt.Printf("writes lost:        %d\n", h.lost)
	fmt.Printf("other violations:   %d\n", h.violations)
	fmt.Printf("checkpoints:        %d\n", h.checkpoints)
	fmt.Printf("fsck repairs:       %d (runs of fsck --repair)\n", h.fsckRepairs)
	fmt.Printf("torn tails aside:   %d (*.torn-* files, each one partial line)\n", h.tornFiles)
	h.led.mu.Lock()
	fmt.Printf("tool turns:         %d acknowledged; %d calls answered as interrupted\n", h.agent.turns, h.agent.interrupted)
	fmt.Printf("gateway turns:      %d acknowledged under %d gateway kills; %d answered twice; %d ran the gateway's tool; %d answered with its call\n",
		h.gateway.acked, h.gateway.kills, h.gateway.twice, h.gateway.toolTurns, h.gateway.internal)
	fmt.Printf("gateway responses:  %d chained, each found again; %d documents removed after kills\n", h.gateway.chained, h.gateway.lostDocs)
	fmt.Printf("gateway mappings:   %d conversations' first mappings removed or emptied after kills\n", h.gateway.lostMappings)
	fmt.Printf("cron:               %d claims under %d ticker kills; %d started, %d recorded lost\n",
		h.cron.claims, h.cron.kills, h.cron.started, h.cron.lost)
	fmt.Printf("delegation:         %d turns after %d kills; %d delegate calls carried on\n", h.delegate.turns, h.delegate.kills, h.delegate.resumed)
	h.led.mu.Unlock()
	fmt.Printf("elapsed:            %s\n", time.Since(start).Round(time.Millisecond))
	if len(h.problems) > 0 {
		fmt.Println("problems (first 40):")
		for i, p := range h.problems {
			if i == 40 {
				break
			}
			fmt.Println("  " + p)
		}
	}
	if h.lost > 0 || h.violations > 0 {
		fmt.Println("crashloop: FAIL")
		return 1
	}
	fmt.Println("crashloop: ok")
	return 0
}

// workload runs the workers and the killer until kills reaches until.
func (h *harness) workload(until int64) {
	h.stop.Store(false)
	var wg sync.WaitGroup
	for w := 0; w < h.o.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(time.Now().UnixNano() + int64(w)*7919))
			for !h.stop.Load() {
				h.randomOp(rng)
			}
		}(w)
	}
	done := make(chan struct{})
	go func() { // the killer
		defer close(done)
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		span := int64(h.o.killMax - h.o.killMin)
		for h.kills.Load() < until {
			d := h.o.killMin
			if span > 0 {
				d += time.Duration(rng.Int63n(span + 1))
			}
			time.Sleep(d)
			h.procsMu.Lock()
			var victims []*exec.Cmd
			for c := range h.procs {
				victims = append(victims, c)
			}
			if len(victims) > 0 {
				v := victims[rng.Intn(len(victims))]
				if v.Process.Signal(syscall.SIGKILL) == nil {
					h.sent.Add(1)
				}
			}
			h.procsMu.Unlock()
		}
	}()
	<-done
	h.stop.Store(true)
	wg.Wait()
}

func (h *harness) randomOp(rng *rand.Rand) {
	p := rng.Intn(100)
	switch {
	case p < 6:
		h.newSession(true)
	case p < 30:
		h.appendOp(rng)
	case p < 36:
		h.appendBatchOp(rng)
	case p < 52:
		h.saveOp(rng)
	case p < 64:
		h.renameOp(rng)
	case p < 72:
		h.taskOp()
	case p < 84:
		h.kanbanOp()
	default:
		h.toolTurnOp(rng)
	}
}

func (h *harness) ack(f func()) {
	h.led.mu.Lock()
	h.led.acked++
	if f != nil {
		f()
	}
	h.led.mu.Unlock()
}

// newSession creates a session with a fresh id, or retries the create of
// one whose create was killed (invariant 6: create is idempotent).
func (h *harness) newSession(killable bool) {
	h.led.mu.Lock()
	var id string
	if len(h.led.pending) > 0 {
		id = h.led.pending[0]
		h.led.pending = h.led.pending[1:]
	} else if len(h.led.sessions)+len(h.led.pending) < h.o.maxSessions {
		id = fmt.Sprintf("crash%02d", h.led.nextSess)
		h.led.nextSess++
	}
	h.led.mu.Unlock()
	if id == "" {
		return
	}
	r := h.hermes("sessions new", killable, "", nil, "sessions", "new", "--id", id)
	if !r.ok() {
		if r.code >= 0 {
			h.problemf("sessions new --id %s exited %d: %s", id, r.code, strings.TrimSpace(r.stderr))
		}
		h.led.mu.Lock()
		h.led.pending = append(h.led.pending, id)
		h.led.mu.Unlock()
		return
	}
	h.ack(func() { h.led.sessions = append(h.led.sessions, &session{id: id}) })
}

func (h *harness) pickSession(rng *rand.Rand) *session {
	h.led.mu.Lock()
	defer h.led.mu.Unlock()
	if len(h.led.sessions) == 0 {
		return nil
	}
	return h.led.sessions[rng.Intn(len(h.led.sessions))]
}

func (h *harness) noteCount(s *session, out string) {
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(out), &n); err == nil && n > s.maxCount {
		s.maxCount = n
	}
}

func (h *harness) appendOp(rng *rand.Rand) {
	s := h.pickSession(rng)
	if s == nil {
		return
	}
	tok := h.token("a")
	h.led.mu.Lock()
	h.led.tokens[tok] = s.id
	h.led.mu.Unlock()
	s.mu.RLock()
	r := h.hermes("sessions append", true, "", nil, "sessions", "append", s.id, "--role", "user", "--content", tok)
	s.mu.RUnlock()
	if r.ok() {
		h.ack(func() { h.led.ackTokens[tok] = s.id; h.noteCount(s, r.stdout) })
	}
}

// appendBatchOp appends 1 to 3 messages as JSONL on stdin, some of them
// large (a write(2) of a megabyte can be cut short by SIGKILL, leaving a
// torn tail).
func (h *harness) appendBatchOp(rng *rand.Rand) {
	s := h.pickSession(rng)
	if s == nil {
		return
	}
	var toks []string
	var in strings.Builder
	for i := rng.Intn(3); i >= 0; i-- {
		tok := h.token("m")
		toks = append(toks, tok)
		content := tok
		if rng.Intn(3) == 0 {
			content += " " + strings.Repeat("x", 256<<10+rng.Intn(1<<20))
		}
		fmt.Fprintf(&in, "{\"role\":\"user\",\"content\":%q}\n", content)
	}
	h.led.mu.Lock()
	for _, tok := range toks {
		h.led.tokens[tok] = s.id
	}
	h.led.mu.Unlock()
	s.mu.RLock()
	r := h.hermes("sessions append -", true, in.String(), nil, "sessions", "append", s.id)
	s.mu.RUnlock()
	if r.ok() {
		h.ack(func() {
			h.led.acked += len(toks) - 1
			for _, tok := range toks {
				h.led.ackTokens[tok] = s.id
			}
			h.noteCount(s, r.stdout)
		})
	}
}

// saveOp reads the stored transcript and saves it back with one new
// message: the truncation guard's extending path.
func (h *harness) saveOp(rng *rand.Rand) {
	s := h.pickSession(rng)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := h.hermes("sessions export", true, "", nil, "--json", "sessions", "export", s.id)
	if !r.ok() {
		return
	}
	var doc struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		h.problemf("sessions export %s: exit 0 with unparsable output: %v", s.id, err)
		return
	}
	tok := h.token("s")
	var in strings.Builder
	for _, m := range doc.Messages {
		in.Write(m)
		in.WriteByte('\n')
	}
	fmt.Fprintf(&in, "{\"role\":\"assistant\",\"content\":%q}\n", tok)
	h.led.mu.Lock()
	h.led.tokens[tok] = s.id
	h.led.mu.Unlock()
	r = h.hermes("sessions save", true, in.String(), nil, "sessions", "save", s.id)
	switch {
	case r.ok():
		h.ack(func() { h.led.ackTokens[tok] = s.id; h.noteCount(s, r.stdout) })
	case r.code == 4:
		// Nothing else writes this session while we hold s.mu, and we
		// sent what export printed: a refusal means export and the guard
		// disagree about the stored history.
		h.problemf("sessions save %s refused an extending write of %d+1 messages: %s", s.id, len(doc.Messages), strings.TrimSpace(r.stderr))
	}
}

func (h *harness) renameOp(rng *rand.Rand) {
	s := h.pickSession(rng)
	if s == nil {
		return
	}
	title := h.token("t")
	s.rn.Lock()
	defer s.rn.Unlock()
	h.led.mu.Lock()
	s.renames = append(s.renames, renameAttempt{title: title})
	i := len(s.renames) - 1
	h.led.mu.Unlock()
	s.mu.RLock()
	r := h.hermes("sessions rename", true, "", nil, "sessions", "rename", s.id, title)
	s.mu.RUnlock()
	if r.ok() {
		h.ack(func() { s.renames[i].acked = true })
	}
}

func (h *harness) taskOp() {
	tok := h.token("k")
	r := h.hermes("tasks run", true, "", nil, "--json", "tasks", "run", "--wait", "--name", "n", "--", "sh", "-c", "echo "+tok)
	if !r.ok() {
		return
	}
	// --json prints the final record on stderr.
	var id string
	for _, line := range strings.Split(r.stderr, "\n") {
		var t struct {
			ID string `json:"id"`
		}
		if json.Unmarshal([]byte(line), &t) == nil && t.ID != "" {
			id = t.ID
		}
	}
	if id == "" {
		h.problemf("tasks run --wait exited 0 without its record on stderr: %q", r.stderr)
		return
	}
	h.ack(func() { h.led.tasks[id] = tok })
}

func (h *harness) kanbanOp() {
	r := h.hermes("kanban create", true, "", nil, "kanban", "create", h.token("b"))
	if !r.ok() {
		return
	}
	id := strings.TrimSpace(r.stdout)
	h.ack(func() { h.led.kanban[id] = kbCreated })
	if h.stop.Load() {
		return
	}
	r = h.hermes("kanban claim", true, "", nil, "kanban", "claim", id)
	if !r.ok() {
		return
	}
	h.ack(func() { h.led.kanban[id] = kbClaimed })
	env := strings.Fields(r.stdout)
	if len(env) != 4 {
		h.problemf("kanban claim %s printed %q", id, r.stdout)
		return
	}
	r = h.hermes("kanban complete", true, "", env, "kanban", "complete", "--result", "ok")
	if r.ok() {
		h.ack(func() { h.led.kanban[id] = kbDone })
	}
}

func (h *harness) problemf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.record(&h.violations, msg, "problem: "+msg)
}

func (h *harness) lostf(format string, args ...any) {
	msg := "LOST: " + fmt.Sprintf(format, args...)
	h.record(&h.lost, msg, msg)
}

// record keeps msg among the problems and counts it in *n, once: a
// problem found again at a later checkpoint is not counted again. With
// -v it prints shown.
func (h *harness) record(n *int, msg, shown string) {
	h.led.mu.Lock()
	defer h.led.mu.Unlock()
	if h.seen[msg] {
		return
	}
	h.seen[msg] = true
	*n++
	h.problems = append(h.problems, msg)
	if h.o.verbose {
		fmt.Fprintln(os.Stderr, "crashloop:", shown)
	}
}
