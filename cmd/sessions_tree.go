package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermes/hermes/fsstore/sessions"
)

// listParent is sessions list's --parent, resolved to a session id (an
// id, a prefix or a title), or "" without it.
func listParent(e *env) (string, error) {
	ref := e.c.String("parent")
	if ref == "" {
		return "", nil
	}
	return e.resolveSession(ref)
}

// sessionsTree prints a session and its descendants (the sessions whose
// parent_session_id leads to it: sub-agents, forks, compressions), each
// under its parent, the oldest first: one line each, indented two spaces a
// level; with --json, one document a line with its level.
func sessionsTree(e *env) error {
	id, err := e.sessionArg()
	if err != nil {
		return err
	}
	store := e.sessions()
	root, err := store.Inspect(id)
	if err != nil {
		return err
	}
	all, err := store.List(sessions.ListOptions{})
	if err != nil {
		return err
	}
	children := map[string][]sessions.Session{}
	for _, s := range all {
		if s.ParentSessionID != "" && s.ID != s.ParentSessionID {
			children[s.ParentSessionID] = append(children[s.ParentSessionID], s)
		}
	}
	for _, list := range children {
		slices.SortFunc(list, func(a, b sessions.Session) int {
			return strings.Compare(string(a.CreatedAt)+a.ID, string(b.CreatedAt)+b.ID)
		})
	}
	w := bufferedOut(e.stdout)
	seen := map[string]bool{}
	var walk func(s sessions.Session, level int)
	walk = func(s sessions.Session, level int) {
		if seen[s.ID] { // a loop of parents, written by hand
			return
		}
		seen[s.ID] = true
		if e.json {
			printJSON(w, struct {
				Level int `json:"level"`
				sessions.Session
			}{level, s})
		} else {
			fmt.Fprintf(w, "%s%s  %s  %s  %s\n", strings.Repeat("  ", level), s.ID, dash(s.Source), stateWithReason(s), treeLabel(s))
		}
		for _, c := range children[s.ID] {
			walk(c, level+1)
		}
	}
	walk(root, 0)
	return w.Flush()
}

// treeLabel names a session in a tree: a sub-agent by its task and
// prompt, another by its title, else its preview.
func treeLabel(s sessions.Session) string {
	if d := s.Delegation; d != nil {
		return fmt.Sprintf("task %d of call %s: %s", d.TaskIndex+1, d.ToolCallID, dash(s.Preview))
	}
	if s.Title != "" {
		return s.Title
	}
	return dash(s.Preview)
}
