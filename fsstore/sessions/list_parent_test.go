package sessions

import "testing"

// List with a parent keeps that session's children only, whatever their
// kind (a sub-agent, a fork), and the limit counts those it keeps.
func TestListParent(t *testing.T) {
	s, _, _ := newTestStore(t)
	parent, _, _ := s.CreateWith(Session{}, []Message{{Role: "user", Content: TextContent("p")}})
	if _, _, err := s.Create(Session{}); err != nil {
		t.Fatal(err)
	}
	sub, _, err := s.Create(Session{ID: parent.ID + "-task-1", ParentSessionID: parent.ID, Source: "delegate",
		Delegation: &Delegation{ToolCallID: "call_1", Depth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	fork, err := s.Fork(parent.ID, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ListOptions{Parent: parent.ID})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, x := range list {
		got[x.ID] = true
	}
	if len(list) != 2 || !got[sub.ID] || !got[fork.ID] {
		t.Fatalf("children of %s: %v", parent.ID, got)
	}
	if d := list[0].Delegation; list[0].ID == sub.ID && (d == nil || d.ToolCallID != "call_1") {
		t.Fatalf("delegation not kept: %+v", list[0])
	}
	if list, _ := s.List(ListOptions{Parent: parent.ID, Limit: 1}); len(list) != 1 {
		t.Fatalf("limit 1: %d", len(list))
	}
}
