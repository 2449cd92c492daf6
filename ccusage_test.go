package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd"
)

// ccusageBin is the ccusage that scripts/ccusage-npm.sh installs.
func ccusageBin() string {
	dir := os.Getenv("HERMES_CCUSAGE_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "hermes-ccusage")
	}
	return filepath.Join(dir, "node_modules", ".bin", "ccusage")
}

// TestCCUsageOracle imports Claude Code transcripts (the repository's
// fixtures and a generated corpus: responses spread over several lines
// that share a message.id, one whose lines are parted by a tool result,
// abandoned branches, sub-agents' sidechains, several days) and checks
// that `hermes usage daily --json` gives each day the token totals that
// ccusage reads from the same files.
func TestCCUsageOracle(t *testing.T) {
	bin := ccusageBin()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("ccusage is not installed (%v): sh scripts/ccusage-npm.sh installs it", err)
	}
	root := t.TempDir()
	projects := filepath.Join(root, "claude", "projects")
	if err := os.CopyFS(projects, os.DirFS("testdata/import/claude")); err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile("testdata/import/claude_code.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(projects, "-fixture", "5b0c6f1e-2d3a-4c8b-9e7f-1a2b3c4d5e6f.jsonl"), fixture)
	genClaudeCorpus(t, projects, rand.New(rand.NewPCG(7, 7)))

	home := filepath.Join(root, "hermes")
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := cmd.Run(append([]string{"hermes", "--home", home, "-p", "default"}, args...), strings.NewReader(""), &out, &errOut); code != 0 {
			t.Fatalf("hermes %v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	run("sessions", "import", projects)
	// Importing again changes nothing, and counts nothing twice.
	run("sessions", "import", projects)
	type day struct{ Input, Output, CacheCreate, CacheRead, Total int64 }
	got := map[string]day{}
	sc := bufio.NewScanner(strings.NewReader(run("--json", "usage", "daily")))
	for sc.Scan() {
		var r struct {
			Date                                         string
			Input, Output, CacheCreate, CacheRead, Total int64
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(raw["date"], &r.Date)
		for k, p := range map[string]*int64{"input": &r.Input, "output": &r.Output, "cache_create": &r.CacheCreate, "cache_read": &r.CacheRead, "total": &r.Total} {
			json.Unmarshal(raw[k], p)
		}
		got[r.Date] = day{r.Input, r.Output, r.CacheCreate, r.CacheRead, r.Total}
	}

	c := exec.Command(bin, "daily", "--json", "--offline")
	c.Env = append(os.Environ(), "HOME="+filepath.Join(root, "home"), "CLAUDE_CONFIG_DIR="+filepath.Join(root, "claude"), "TZ=UTC")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("ccusage: %v: %s", err, out)
	}
	var oracle struct {
		Daily []struct {
			Period              string `json:"period"`
			Date                string `json:"date"`
			InputTokens         int64  `json:"inputTokens"`
			OutputTokens        int64  `json:"outputTokens"`
			CacheCreationTokens int64  `json:"cacheCreationTokens"`
			CacheReadTokens     int64  `json:"cacheReadTokens"`
			TotalTokens         int64  `json:"totalTokens"`
		} `json:"daily"`
	}
	if err := json.Unmarshal(out, &oracle); err != nil {
		t.Fatalf("ccusage's output: %v: %.300s", err, out)
	}
	if len(oracle.Daily) < 5 {
		t.Fatalf("ccusage saw %d days: %.300s", len(oracle.Daily), out)
	}
	for _, d := range oracle.Daily {
		date := d.Period
		if date == "" {
			date = d.Date
		}
		want := day{d.InputTokens, d.OutputTokens, d.CacheCreationTokens, d.CacheReadTokens, d.TotalTokens}
		if got[date] != want {
			t.Errorf("%s: hermes %+v, ccusage %+v", date, got[date], want)
		}
		delete(got, date)
	}
	for date, d := range got {
		t.Errorf("%s: hermes %+v, ccusage has no such day", date, d)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// genClaudeCorpus writes Claude Code sessions as Claude Code writes them:
// a response is one line per content block, each with the same message.id
// and requestId and the usage so far (the last line's is the whole);
// some responses call a tool, and one of those has a text block after the
// tool's result under the same id; some turns were retried, leaving an
// abandoned response off the chain; some sessions ran a sub-agent, whose
// sidechain is its own file. Times are at midday UTC or near it, over
// five days, so that a day is the same in any zone within hours of UTC.
func genClaudeCorpus(t *testing.T, projects string, rng *rand.Rand) {
	start := time.Date(2025, 9, 1, 10, 0, 0, 0, time.UTC)
	models := []string{"claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001"}
	for s := range 8 {
		sid := fmt.Sprintf("00000000-0000-4000-8000-%012d", s)
		at := start.Add(time.Duration(s%5) * 24 * time.Hour).Add(time.Duration(rng.IntN(60)) * time.Minute)
		w := &ccWriter{sid: sid, at: at, rng: rng, model: models[s%len(models)]}
		parent := w.user("", "task "+fmt.Sprint(s))
		for turn := range 3 + rng.IntN(3) {
			if rng.IntN(4) == 0 {
				w.response(parent, false) // retried: this one is left off the chain
			}
			last := w.response(parent, rng.IntN(2) == 0)
			parent = w.user(last, fmt.Sprintf("next %d", turn))
		}
		w.response(parent, false)
		writeFile(t, filepath.Join(projects, "-gen", sid+".jsonl"), w.buf.Bytes())
		if s%3 == 0 {
			a := &ccWriter{sid: sid, at: at.Add(time.Minute), rng: rng, model: models[2], agent: fmt.Sprintf("ag%d", s)}
			p := a.user("", "look around")
			p = a.user(a.response(p, true), "and?")
			a.response(p, false)
			writeFile(t, filepath.Join(projects, "-gen", sid, "subagents", "agent-"+a.agent+".jsonl"), a.buf.Bytes())
		}
	}
}

type ccWriter struct {
	sid, model, agent string
	at                time.Time
	rng               *rand.Rand
	buf               bytes.Buffer
	n                 int
}

func (w *ccWriter) line(parent, typ string, msg any, requestID string) string {
	w.n++
	w.at = w.at.Add(time.Duration(1+w.rng.IntN(20)) * time.Second)
	uuid := fmt.Sprintf("%s-%04d", w.sid[:8], w.n)
	if w.agent != "" {
		uuid = w.agent + "-" + uuid
	}
	e := map[string]any{"parentUuid": nil, "isSidechain": w.agent != "", "userType": "external", "cwd": "/p", "sessionId": w.sid,
		"version": "2.0.14", "type": typ, "message": msg, "uuid": uuid, "timestamp": w.at.Format("2006-01-02T15:04:05.000Z")}
	if parent != "" {
		e["parentUuid"] = parent
	}
	if w.agent != "" {
		e["agentId"] = w.agent
	}
	if requestID != "" {
		e["requestId"] = requestID
	}
	b, _ := json.Marshal(e)
	w.buf.Write(append(b, '\n'))
	return uuid
}

func (w *ccWriter) user(parent, text string) string {
	return w.line(parent, "user", map[string]any{"role": "user", "content": text}, "")
}

// response writes one response after parent, its blocks a line each, and
// returns the last line's uuid; withTool makes it call a tool, whose
// result follows, then one more text block of the same response.
func (w *ccWriter) response(parent string, withTool bool) string {
	w.n++
	id := fmt.Sprintf("msg_%s_%d", w.sid[len(w.sid)-4:]+w.agent, w.n)
	req := "req_" + id
	in, cw, cr := int64(1+w.rng.IntN(50)), int64(w.rng.IntN(3000)), int64(w.rng.IntN(40000))
	out := int64(0)
	block := func(parent string, content any) string {
		// The counts so far; some lines say another input, as Claude
		// Code's do now and then: the line with the most tokens counts.
		out += int64(1 + w.rng.IntN(200))
		if w.rng.IntN(3) == 0 {
			in = max(1, in+int64(w.rng.IntN(5))-2)
		}
		u := map[string]any{"input_tokens": in, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr, "output_tokens": out,
			"cache_creation": map[string]any{"ephemeral_5m_input_tokens": cw, "ephemeral_1h_input_tokens": 0}, "service_tier": "standard"}
		msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": w.model, "content": []any{content}, "usage": u}
		return w.line(parent, "assistant", msg, req)
	}
	p := parent
	if w.rng.IntN(2) == 0 {
		p = block(p, map[string]any{"type": "thinking", "thinking": "hmm", "signature": "sig"})
	}
	p = block(p, map[string]any{"type": "text", "text": "working"})
	if withTool {
		tool := fmt.Sprintf("toolu_%d", w.n)
		p = block(p, map[string]any{"type": "tool_use", "id": tool, "name": "Bash", "input": map[string]any{"command": "ls"}})
		p = w.line(p, "user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": tool, "content": "a.txt"}}}, "")
		p = block(p, map[string]any{"type": "text", "text": "done"})
	}
	return p
}
