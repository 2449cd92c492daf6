package cmd

import (
	"strings"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
)

// treeRow is a task in the tree of list --tree, depth levels under the
// root it was reached from.
type treeRow struct {
	kanban.Task
	Depth int `json:"depth"`
}

// kanbanTree orders list as a tree: each task whose parents are not in
// list is a root, oldest first, with its children under it, and a child
// of several parents under each of them.
func kanbanTree(list []kanban.Task) []treeRow {
	listed := make(map[string]bool, len(list))
	for _, t := range list {
		listed[t.ID] = true
	}
	children := map[string][]kanban.Task{}
	var roots []kanban.Task
	for _, t := range list {
		root := true
		for _, p := range t.Parents {
			if listed[p] {
				children[p] = append(children[p], t)
				root = false
			}
		}
		if root {
			roots = append(roots, t)
		}
	}
	var out []treeRow
	var walk func(t kanban.Task, depth int, path map[string]bool)
	walk = func(t kanban.Task, depth int, path map[string]bool) {
		out = append(out, treeRow{t, depth})
		// Links refuse cycles; the path guards against one written by hand.
		path[t.ID] = true
		for _, c := range children[t.ID] {
			if !path[c.ID] {
				walk(c, depth+1, path)
			}
		}
		delete(path, t.ID)
	}
	for _, t := range roots {
		walk(t, 0, map[string]bool{})
	}
	return out
}

// printTree prints list --tree: ids indented by depth, or with --json one
// object a row, its depth added.
func printTree(e *env, rows []treeRow) error {
	if e.json {
		for _, r := range rows {
			printJSON(e.stdout, r)
		}
		return nil
	}
	tb := newTable(e.stdout, "ID", "STATUS", "PRI", "ASSIGNEE", "RUNS", "TITLE")
	for _, r := range rows {
		tb.row(strings.Repeat("  ", r.Depth)+r.ID, r.Status, r.Priority, r.Assignee, len(r.Runs), r.Title)
	}
	return tb.flush()
}

// kanbanLink is link or unlink: CHILD PARENT, then the child printed.
func kanbanLink(change func(b *kanban.Board, child, parent string) (kanban.Task, error)) func(*env) error {
	return func(e *env) error {
		if e.c.NArg() != 2 {
			return usagef("expected CHILD and PARENT task IDs")
		}
		child, parent := e.c.Args().Get(0), e.c.Args().Get(1)
		for _, id := range []string{child, parent} {
			if err := fsstore.CheckID("task id", id); err != nil {
				return err
			}
		}
		board, err := e.board()
		if err != nil {
			return err
		}
		t, err := change(board, child, parent)
		if err != nil {
			return err
		}
		return printKanbanTask(e, board, t)
	}
}
