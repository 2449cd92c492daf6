package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/skills"
)

// benchProfile is a profile with 200 skills (a description of 200
// characters and a body of 4 KiB each, one file beside it) and a full
// memory (MEMORY.md and USER.md each within 5% of their bounds).
func benchProfile(b *testing.B) (*memory.Store, *Skills) {
	dir := filepath.Join(b.TempDir(), "profile")
	mem := memory.NewStore(dir, 10*time.Second, func(string) {})
	for _, target := range []string{memory.Memory, memory.User} {
		for i := 0; ; i++ {
			if _, err := mem.Add(target, fmt.Sprintf("fact %03d: %s", i, strings.Repeat("x", 80)), memory.Who{By: memory.ByUser}); err != nil {
				break
			}
		}
	}
	st := skills.NewStore(dir, 10*time.Second, func(string) {})
	for i := range 200 {
		name := fmt.Sprintf("skill-%03d", i)
		md := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n%s", name, strings.Repeat("d", 200), strings.Repeat("instructions\n", 315))
		if _, err := st.Create(name, md, skills.Who{By: skills.ByUser}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Patch(name, "examples.md", "", "an example\n", skills.Who{By: skills.ByUser}); err != nil {
			b.Fatal(err)
		}
		// Written an hour ago, as a profile's skills are: the index
		// holds no file younger than skills.RacyWindow.
		earlier := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(st.Path(name), skills.FileName), earlier, earlier); err != nil {
			b.Fatal(err)
		}
	}
	return mem, &Skills{Store: st}
}

// BenchmarkOpening is what a session's first turn adds for the memory
// and the skills: the snapshot of a full memory and the list of 200
// skills, as notes (Engine.Opening), against none.
func BenchmarkOpening(b *testing.B) {
	mem, sk := benchProfile(b)
	cwd := b.TempDir()
	for _, c := range []struct {
		name string
		e    *Engine
	}{{"none", &Engine{}}, {"memory+200skills", &Engine{Memory: mem, Skills: sk}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.e.Opening(context.Background(), cwd, user("hi"))
			}
		})
	}
}

// BenchmarkSkillView loads one skill of 200 (its SKILL.md and the list of
// its files) through the tool.
func BenchmarkSkillView(b *testing.B) {
	_, sk := benchProfile(b)
	env := &Env{Skills: sk, Cwd: b.TempDir(), MaxOutput: DefaultMaxOutput}
	args := json.RawMessage(`{"name":"skill-137"}`)
	for b.Loop() {
		if _, err := (skillViewTool{}).Run(context.Background(), env, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstTurn is a session's first turn after its opening (the
// full memory's snapshot and the list of 200 skills, about 20 KB, stored
// with the user's message as chat stores them), the model excluded: the
// prelude, the reply stored. The notes are not read back by the turn (the
// model here reads none of the history).
func BenchmarkFirstTurn(b *testing.B) {
	mem, sk := benchProfile(b)
	dir := filepath.Dir(mem.Dir)
	st := sessions.NewStore(dir, "default", 10*time.Second, func(msg string) { b.Fatal(msg) })
	opening := (&Engine{Memory: mem, Skills: sk}).Opening(context.Background(), b.TempDir(), user("hi"))
	e := &Engine{Sessions: st, Provider: &stepper{}}
	for b.Loop() {
		b.StopTimer()
		sess, _, err := st.CreateWith(sessions.Session{ID: fsstore.NewID(time.Now()), Source: "chat"}, opening)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if res, err := e.Run(context.Background(), Turn{SessionID: sess.ID}); err != nil || res.Text() != "done" {
			b.Fatalf("text %q: %v", res.Text(), err)
		}
	}
}
