package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/skills"
)

// Every tool carries annotations a client decides by without asking its
// user: a title, readOnlyHint on the tools that only read, and for the
// others whether they destroy and whether a repeat changes anything
// (Codex refuses an unannotated tool in a run that cannot ask).
func TestToolsAreAnnotated(t *testing.T) {
	o := testOptions(t)
	o.Worker = &kanban.Worker{Task: "t1", Run: "r1", Claim: "c1"}
	dir := t.TempDir()
	o.Memory = memory.NewStore(dir, time.Second, func(string) {})
	o.Skills = skills.NewStore(dir, time.Second, func(string) {})
	res, err := connect(t, o).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 12 {
		t.Fatalf("%d tools, want the 12 of a worker's server with memory and skills", len(res.Tools))
	}
	readOnly := map[string]bool{"session_search": true, "session_list": true, "session_show": true, "kanban_list": true, "kanban_show": true,
		"memory_view": true, "skills_list": true, "skill_view": true}
	for _, tool := range res.Tools {
		a := tool.Annotations
		if a == nil || a.Title == "" {
			t.Errorf("%s: no title: %+v", tool.Name, a)
			continue
		}
		if a.ReadOnlyHint != readOnly[tool.Name] {
			t.Errorf("%s: readOnlyHint %v", tool.Name, a.ReadOnlyHint)
		}
		if !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint) {
			t.Errorf("%s: a tool that only adds says it may destroy", tool.Name)
		}
		if a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: the profile is a closed world", tool.Name)
		}
	}
}

// The input schemas say what is valid: limits' bounds, the states a
// filter takes.
func TestSchemasBoundArguments(t *testing.T) {
	res, err := connect(t, testOptions(t)).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		schema, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]struct {
				Enum    []string `json:"enum"`
				Minimum *float64 `json:"minimum"`
				Maximum *float64 `json:"maximum"`
			} `json:"properties"`
		}
		json.Unmarshal(schema, &s)
		if p, ok := s.Properties["limit"]; ok && (p.Minimum == nil || *p.Minimum != 1 || p.Maximum == nil || *p.Maximum != maxLimit) {
			t.Errorf("%s: limit has no bounds: %s", tool.Name, schema)
		}
		if p, ok := s.Properties["offset"]; ok && (p.Minimum == nil || *p.Minimum != 0) {
			t.Errorf("%s: offset has no minimum: %s", tool.Name, schema)
		}
		if tool.Name == "session_list" && len(s.Properties["state"].Enum) != 4 {
			t.Errorf("session_list: state has no enum: %s", schema)
		}
		if tool.Name == "kanban_list" && len(s.Properties["status"].Enum) == 0 {
			t.Errorf("kanban_list: status has no enum: %s", schema)
		}
	}
}

// Arguments that are not an object are refused in words a model can act
// on, not Go's.
func TestArgumentsNotAnObject(t *testing.T) {
	cs := connect(t, testOptions(t))
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "session_list", Arguments: []any{1}})
	var text string
	if err != nil {
		text = err.Error()
	} else {
		for _, c := range res.Content {
			text += c.(*mcp.TextContent).Text
		}
	}
	if !strings.Contains(text, "must be a JSON object") || strings.Contains(text, "map[") || strings.Contains(text, "interface") {
		t.Fatalf("%q", text)
	}
}

// session_list and session_search page: every session can be reached,
// and a result cut by its limit says how to get the rest.
func TestListAndSearchPage(t *testing.T) {
	o := testOptions(t)
	for i := range 25 {
		addSession(t, o.Sessions, fmt.Sprintf("s%02d", i), "needle here")
	}
	cs := connect(t, o)
	for _, tool := range []string{"session_list", "session_search"} {
		seen := map[string]bool{}
		offset := 0
		for page := 0; ; page++ {
			if page > 5 {
				t.Fatalf("%s: does not end", tool)
			}
			out, isErr := call(t, cs, tool, pageArgs(tool, offset))
			if isErr {
				t.Fatalf("%s: %s", tool, out)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			last := lines[len(lines)-1]
			more := strings.HasPrefix(last, "(")
			if more {
				lines = lines[:len(lines)-1]
				want := fmt.Sprintf("offset %d", offset+len(lines))
				if !strings.Contains(last, want) {
					t.Fatalf("%s: last line %q does not say %q", tool, last, want)
				}
			}
			for _, l := range lines {
				var r struct {
					ID        string `json:"id"`
					SessionID string `json:"session_id"`
				}
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatalf("%s: %q", tool, l)
				}
				seen[r.ID+r.SessionID] = true
			}
			if !more {
				break
			}
			offset += len(lines)
		}
		if len(seen) != 25 {
			t.Fatalf("%s: reached %d of 25 sessions", tool, len(seen))
		}
	}
}

func pageArgs(tool string, offset int) map[string]any {
	a := map[string]any{"limit": 10, "offset": offset}
	if tool == "session_search" {
		a["query"] = "needle"
	}
	return a
}
