package mcpserve

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/skills"
)

// addMemoryTools offers the profile's memory and skills, to read:
// memory_view, skills_list and skill_view, when o has them.
func addMemoryTools(srv *mcp.Server, s *server) {
	if s.Memory != nil {
		mcp.AddTool(srv, tool[struct{}]("memory_view", "Show the agent's memory", read, "Show what hermes's agent keeps between sessions: the entries of MEMORY.md (the work) and USER.md (the user), with their sizes and bounds, as one JSON object."), s.memoryView)
	}
	if s.Skills != nil {
		mcp.AddTool(srv, tool[struct{}]("skills_list", "List skills", read, "List the skills of hermes's profile (SKILL.md directories), one JSON object a line: name, description, allowed_tools, dir, origin (agent or user)."), s.skillsList)
		mcp.AddTool(srv, tool[skillArgs]("skill_view", "Show a skill", read, "Show one skill of hermes's profile: its SKILL.md, as text."), s.skillView)
	}
}

type memoryFile struct {
	Path     string         `json:"path"`
	Chars    int            `json:"chars"`
	MaxChars int            `json:"max_chars"`
	Entries  []memory.Entry `json:"entries"`
}

func (s *server) memoryView(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, none, error) {
	st, err := s.Memory.Read()
	if err != nil {
		return failure(err), nil, nil
	}
	file := func(target string) memoryFile {
		entries := st.Entries(target)
		if entries == nil {
			entries = []memory.Entry{}
		}
		return memoryFile{Path: s.Memory.Path(target), Chars: memory.Chars(entries), MaxChars: s.Memory.Max(target), Entries: entries}
	}
	return answer(map[string]memoryFile{"memory": file(memory.Memory), "user": file(memory.User)}, nil)
}

func (s *server) skillsList(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, none, error) {
	list, err := s.Skills.List()
	if err != nil {
		return failure(err), nil, nil
	}
	return lines(list, s.MaxBytes)
}

type skillArgs struct {
	Name string `json:"name" jsonschema:"the skill's name, as skills_list gives it"`
}

func (s *server) skillView(_ context.Context, _ *mcp.CallToolRequest, a skillArgs) (*mcp.CallToolResult, none, error) {
	md, err := s.Skills.Text(a.Name)
	if err != nil {
		return failure(err), nil, nil
	}
	if len(md) > s.MaxBytes {
		md = strings.ToValidUTF8(md[:s.MaxBytes], "") + fmt.Sprintf("\n[… cut at %d bytes; the whole file is %s]", s.MaxBytes, filepath.Join(s.Skills.Path(a.Name), skills.FileName))
	}
	return text(md), nil, nil
}
