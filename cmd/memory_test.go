package cmd

import (
	"io"
	"strings"
	"testing"

	"github.com/hermes/hermes/profiles"
)

// TestDefaultToolsOfMemoryAndSkills: a chat offers the memory and skill
// tools beside the general ones; a kanban worker reads (skill_view, and
// the memory's snapshot) and writes only where the profile says so;
// memory.enabled: false offers no memory tool.
func TestDefaultToolsOfMemoryAndSkills(t *testing.T) {
	e := &env{profile: profiles.Profile{Root: t.TempDir(), Name: "default"}, stderr: io.Discard}
	names := func(worker bool, cfg profiles.Config) string {
		t.Helper()
		if worker {
			t.Setenv(envKanbanRun, "r1")
			t.Setenv(envKanbanTask, "t1")
		} else {
			t.Setenv(envKanbanRun, "")
		}
		tools, _, err := chatTools(e, chatOptions{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range tools {
			if n := tool.Name(); n == "memory" || strings.HasPrefix(n, "skill_") {
				out = append(out, n)
			}
		}
		return strings.Join(out, ",")
	}
	var cfg profiles.Config
	if got := names(false, cfg); got != "memory,skill_view,skill_manage" {
		t.Errorf("chat: %s", got)
	}
	if got := names(true, cfg); got != "skill_view" {
		t.Errorf("worker: %s", got)
	}
	cfg.Memory.KanbanWrite, cfg.Skills.KanbanWrite = true, true
	if got := names(true, cfg); got != "memory,skill_view,skill_manage" {
		t.Errorf("worker that may write: %s", got)
	}
	off := false
	cfg.Memory.Enabled = &off
	if got := names(false, cfg); got != "skill_view,skill_manage" {
		t.Errorf("memory off: %s", got)
	}
}
