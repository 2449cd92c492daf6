package mcpserve

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/skills"
)

// TestMemoryAndSkillsToRead: memory_view, skills_list and skill_view
// show the profile's memory and skills; no tool changes them.
func TestMemoryAndSkillsToRead(t *testing.T) {
	o := testOptions(t)
	dir := t.TempDir()
	o.Memory = memory.NewStore(dir, time.Second, func(string) {})
	o.Skills = skills.NewStore(dir, time.Second, func(string) {})
	if _, err := o.Memory.Add(memory.User, "prefers tea", memory.Who{By: memory.ByUser}); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: brew\ndescription: How to brew tea.\n---\nSteep 3 minutes.\n"
	if _, err := o.Skills.Create("brew", md, skills.Who{By: skills.ByAgent}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, o)
	out, isErr := call(t, cs, "memory_view", nil)
	if isErr || !strings.Contains(out, `"user":{"path":"`+filepath.Join(dir, "memory", "USER.md")+`","chars":11,"max_chars":4000,"entries":[{"text":"prefers tea","seq":1,"by":"user"}]}`) {
		t.Errorf("memory_view: %s", out)
	}
	out, isErr = call(t, cs, "skills_list", nil)
	if isErr || !strings.HasPrefix(out, `{"name":"brew","description":"How to brew tea.","dir":"`) || !strings.Contains(out, `"origin":"agent"`) {
		t.Errorf("skills_list: %s", out)
	}
	if out, isErr = call(t, cs, "skill_view", map[string]any{"name": "brew"}); isErr || out != md {
		t.Errorf("skill_view: %q", out)
	}
	if out, isErr = call(t, cs, "skill_view", map[string]any{"name": "../x"}); !isErr || !strings.HasPrefix(out, "invalid: ") {
		t.Errorf("skill_view of a bad name: %q", out)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if strings.HasPrefix(tool.Name, "memory_") && tool.Name != "memory_view" || tool.Name == "skill_manage" {
			t.Errorf("a tool that writes: %s", tool.Name)
		}
	}
}
