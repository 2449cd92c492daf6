package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The cron phase (issue 30): `hermes cron tick` processes on a profile of
// their own (cron), two at a time, each killed with SIGKILL 0–300 ms
// after it starts (most in the middle of their work), while three `every 1s` jobs (catch-up all) fall due. Each
// job's command appends its task id to a file. After -cron-kills kills
// the tickers stop; once the claim lease has passed, ticks that are not
// killed settle what the kills left. Then, from the runs log: each
// occurrence is claimed once, the occurrences of a job run 1 s apart from
// its first to its last (none missing), each is started at most once and
// ends (finished or lost), a claim that never started is lost, and
// no task's command ran twice (invariant 16).

// cronLease is the claim lease of fsstore/cron (ClaimLease), with a margin.
const cronLease = 62 * time.Second

type cronCounts struct {
	kills, claims, uncommitted, started, lost int
}

type cronEvent struct {
	Event      string `json:"event"`
	JobID      string `json:"job_id"`
	Occurrence string `json:"occurrence"`
	TaskID     string `json:"task_id"`
	Status     string `json:"status"`
}

func (h *harness) cronArgs(args ...string) []string {
	return append([]string{"-p", "cron"}, args...)
}

func (h *harness) cronPhaseRun(kills int) {
	ranFile := filepath.Join(h.o.home, "cron-ran")
	for _, name := range []string{"a", "b", "c"} {
		r := h.hermes("cron add", false, "", nil, h.cronArgs("cron", "add", name, "--schedule", "every 1s", "--catch-up", "all",
			"--", "sh", "-c", `echo "$HERMES_TASK_ID" >> `+ranFile)...)
		if !r.ok() {
			h.problemf("cron add %s: exit %d: %s", name, r.code, r.stderr)
			return
		}
	}
	var mu sync.Mutex
	killed := 0
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for {
				mu.Lock()
				done := killed >= kills
				mu.Unlock()
				if done {
					return
				}
				cmd := exec.Command(h.o.bin, append([]string{"--home", h.o.home}, h.cronArgs("cron", "tick")...)...)
				if err := cmd.Start(); err != nil {
					h.problemf("cron tick: %v", err)
					return
				}
				time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					mu.Lock()
					killed++
					mu.Unlock()
				}
			}
		}(time.Now().UnixNano() + int64(w))
	}
	wg.Wait()
	// Settle: the jobs pause, so that no new run starts; runs in flight
	// end; the claims and starts the kills left age past the lease, and
	// ticks (not killed) record them.
	for _, name := range []string{"a", "b", "c"} {
		if r := h.hermes("cron pause", false, "", nil, h.cronArgs("cron", "pause", name)...); !r.ok() {
			h.problemf("cron pause %s: exit %d: %s", name, r.code, r.stderr)
		}
	}
	time.Sleep(cronLease)
	for i := 0; i < 3; i++ {
		h.hermes("cron tick", false, "", nil, h.cronArgs("cron", "tick")...)
		time.Sleep(2 * time.Second)
	}
	h.cronCheck(ranFile, killed)
}

// cronCheck reads the runs log and the file of commands run.
func (h *harness) cronCheck(ranFile string, killed int) {
	c := cronCounts{kills: killed}
	f, err := os.Open(filepath.Join(h.o.home, "profiles", "cron", "cron", "runs.jsonl"))
	if err != nil {
		h.problemf("cron: %v", err)
		return
	}
	defer f.Close()
	type key struct{ job, occ string }
	claimed := map[key]int{}
	ended := map[key]int{}
	started := map[key]string{}
	occs := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev cronEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			h.problemf("cron: runs log line does not parse: %s", sc.Text())
			continue
		}
		k := key{ev.JobID, ev.Occurrence}
		switch ev.Event {
		case "claimed":
			if claimed[k] == 0 {
				occs[ev.JobID] = append(occs[ev.JobID], ev.Occurrence)
				c.claims++
			}
			claimed[k]++
		case "started":
			if _, ok := started[k]; ok {
				h.problemf("cron: job %s occurrence %s started twice", k.job, k.occ)
			}
			started[k] = ev.TaskID
			c.started++
		case "finished", "lost":
			ended[k]++
			if ev.Event == "lost" {
				c.lost++
			}
		case "skipped":
			h.problemf("cron: job %s skipped occurrences under catch-up all", k.job)
		}
	}
	for k, n := range claimed {
		// A ticker killed between a claim's line and its document (the
		// commit point) leaves a line that the claim of the next ticker
		// repeats: the occurrence ran no more for it, as started, ended
		// and the commands run show.
		// Likewise an end's line (a settling tick killed before its
		// commit, then the run's own finish).
		c.uncommitted += n - 1 + max(ended[k]-1, 0)
		if ended[k] == 0 {
			h.problemf("cron: job %s occurrence %s never ended (started %v)", k.job, k.occ, started[k] != "")
		}
	}
	for job, list := range occs {
		sort.Strings(list)
		for i := 1; i < len(list); i++ {
			a, _ := time.Parse(time.RFC3339Nano, list[i-1])
			b, _ := time.Parse(time.RFC3339Nano, list[i])
			if b.Sub(a) != time.Second {
				h.problemf("cron: job %s: %s after %s (missing or doubled occurrences)", job, list[i], list[i-1])
			}
		}
	}
	if c.claims == 0 {
		h.problemf("cron: no occurrence was claimed in the cron phase")
	}
	ran := map[string]int{}
	if data, err := os.ReadFile(ranFile); err == nil {
		for _, id := range strings.Fields(string(data)) {
			ran[id]++
		}
	}
	startedTasks := map[string]bool{}
	for _, id := range started {
		startedTasks[id] = true
	}
	for id, n := range ran {
		if n > 1 {
			h.problemf("cron: the command of task %s ran %d times", id, n)
		}
		if !startedTasks[id] {
			h.problemf("cron: the command of task %s ran without a started run", id)
		}
	}
	h.led.mu.Lock()
	h.cron = c
	h.led.mu.Unlock()
	fmt.Fprintf(os.Stderr, "crashloop: cron phase: %d ticker kills, %d occurrences claimed (%d uncommitted lines repeated), %d started, %d lost, %d commands run\n",
		c.kills, c.claims, c.uncommitted, c.started, c.lost, len(ran))
}
